package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// flowPurpose binds a flow handle to the flow tools: a token sealed for
// another purpose (a requestState) never opens as a handle.
const flowPurpose = "flow-handle"

// flowTTL is how long a client has between two steps of a flow: long
// enough for a model to do a step's work, short enough that a leaked
// handle is soon worthless.
const flowTTL = 2 * time.Hour

// flowState is what a handle carries, so that any replica can continue a
// flow and none keeps it in memory. Outputs travel in it, which is why a
// step's output is capped by the tool's schema, and why those no later
// step refers to are dropped.
type flowState struct {
	Flow     string            `json:"f"`
	Versions string            `json:"v"` // flowVersions when the flow started
	Args     map[string]string `json:"a,omitempty"`
	Outputs  []string          `json:"o,omitempty"`
	Step     int               `json:"s"` // the step whose prompt was handed out
}

// flowVersions digests the flow file and the files of the templates its
// steps render: a handle is refused once any of them changed, since its
// step numbers and outputs may no longer fit.
func flowVersions(cat *templates.Catalog, fe *templates.FlowEntry) string {
	h := sha256.New()
	h.Write([]byte(fe.Digest))
	for _, s := range fe.Flow.Steps {
		h.Write([]byte{0})
		if e, ok := cat.Lookup(s.Template); ok {
			h.Write([]byte(e.Digest))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func (a *App) flowTools() []*tool {
	return []*tool{
		toolFromFiles("flowyprompt_start_flow", "Start a flow", readOnly, a.startFlow),
		toolFromFiles("flowyprompt_next_flow_step", "Continue a flow", readOnly, a.nextFlowStep),
	}
}

func (a *App) startFlow(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	cat := a.lib.Catalog()
	fe, ok := cat.LookupFlow(args.Name)
	if !ok {
		var names []string
		for _, f := range cat.Flows() {
			names = append(names, f.Flow.Name)
		}
		return nil, &fault.Error{Code: fault.TemplateNotFound, What: fmt.Sprintf("no flow named %q", args.Name),
			Why: "the library has no valid flow by that name (an invalid one is listed by flowyprompt_refresh_templates)",
			How: "use one of the flows the library has: " + strings.Join(names, ", "), Suggestions: closeNames(args.Name, names)}
	}
	var missing, unknown []string
	known := map[string]bool{}
	for _, arg := range fe.Flow.Arguments {
		known[arg.Name] = true
		if arg.Required && strings.TrimSpace(args.Arguments[arg.Name]) == "" {
			missing = append(missing, arg.Name)
		}
	}
	for name := range args.Arguments {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(missing) > 0 {
		return nil, &fault.Error{Code: fault.MissingRequiredVariable, What: fmt.Sprintf("flow %s was not started", fe.Flow.Name),
			Why: "required arguments are missing: " + strings.Join(missing, ", "), How: "call again with those arguments",
			Details: map[string]any{"missing": missing}}
	}
	if len(unknown) > 0 {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("flow %s was not started", fe.Flow.Name),
			Why: "the flow has no arguments named " + strings.Join(unknown, ", "), How: "pass only the flow's arguments"}
	}
	return a.flowStep(cat, fe, flowState{Flow: fe.Flow.Name, Versions: flowVersions(cat, fe), Args: args.Arguments})
}

func (a *App) nextFlowStep(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Handle string `json:"handle"`
		Output string `json:"output"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	var st flowState
	if err := a.opts.State.Open(flowPurpose, args.Handle, &st); err != nil {
		why := "the handle was not minted by this server (or its replicas), or it was changed"
		if errors.Is(err, seal.ErrExpired) {
			why = fmt.Sprintf("the handle has expired: a handle is valid for %s after the step it was handed out with", flowTTL)
		}
		return nil, &fault.Error{Code: fault.InvalidArgument, Err: err, What: "the flow handle was refused", Why: why,
			How: "pass the handle of the latest flowyprompt_start_flow or flowyprompt_next_flow_step result unchanged, or start the flow again"}
	}
	cat := a.lib.Catalog()
	fe, ok := cat.LookupFlow(st.Flow)
	if !ok || flowVersions(cat, fe) != st.Versions {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("flow %s cannot continue", st.Flow),
			Why: "the flow, or a template it uses, changed or was removed since the flow started",
			How: "start the flow again with flowyprompt_start_flow"}
	}
	st.Outputs = append(st.Outputs, args.Output)
	st.Step++
	// The handle carries only the outputs a step still to come refers to,
	// so it grows with what the flow needs, not with every step run.
	for j, need := range fe.Flow.Needed(st.Step) {
		if !need {
			st.Outputs[j] = ""
		}
	}
	if st.Step >= len(fe.Flow.Steps) {
		text := fmt.Sprintf("## Result\nFlow %s is done: all %d steps ran.\n", fe.Flow.Name, len(fe.Flow.Steps))
		return &toolResult{text: text, structured: map[string]any{"flow": fe.Flow.Name, "done": true,
			"steps": len(fe.Flow.Steps)}}, nil
	}
	return a.flowStep(cat, fe, st)
}

// flowStep renders step st.Step and hands it out with a handle for the
// next call.
func (a *App) flowStep(cat *templates.Catalog, fe *templates.FlowEntry, st flowState) (*toolResult, error) {
	step := fe.Flow.Steps[st.Step]
	e, ok := cat.Lookup(step.Template)
	if !ok { // the versions check and the flow's validation rule this out
		return nil, fmt.Errorf("flow %s: step %s: template %s is gone", fe.Flow.Name, step.Name, step.Template)
	}
	text, _, err := renderText(e.Template, fe.Flow.StepVariables(st.Step, st.Args, st.Outputs))
	if err != nil {
		// The values came from the flow, not from the caller: say which
		// step failed and that the handle still holds, so the caller can
		// send a better output rather than start again.
		if f := fault.As(err); f != nil {
			g := *f
			g.What = fmt.Sprintf("step %d (%s) of flow %s cannot be rendered: %s", st.Step+1, step.Name, fe.Flow.Name, f.What)
			g.How = "the step's values come from the flow's arguments and the outputs before it: if an output was empty or too long, " +
				"call flowyprompt_next_flow_step again with the same handle and a better output; otherwise start the flow with other arguments"
			return nil, &g
		}
		return nil, err
	}
	handle, err := a.opts.State.Seal(flowPurpose, st, flowTTL)
	if err != nil {
		return nil, err
	}
	n := len(fe.Flow.Steps)
	report := fmt.Sprintf("## Step %d of %d: %s (template %s)\n\n%s\n\n## Next\nDo what the prompt asks; then call flowyprompt_next_flow_step with this handle and the result as output.\n\nhandle: %s\n",
		st.Step+1, n, step.Name, e.Template.Metadata.Name, text, handle)
	return &toolResult{text: report, structured: map[string]any{"flow": fe.Flow.Name, "done": false, "step": st.Step + 1,
		"steps": n, "step_name": step.Name, "template": e.Template.Metadata.Name, "prompt": text, "handle": handle}}, nil
}

// flowPromptPrefix names a flow's prompt. A colon, because template names
// never hold one (a Composite's NAMESPACE/NAME holds a slash), so a flow's
// prompt never hides a template's.
const flowPromptPrefix = "flow:"

func flowPromptOf(f *templates.Flow) mcp.Prompt {
	args := make([]mcp.PromptArgument, 0, len(f.Arguments))
	for _, arg := range f.Arguments {
		args = append(args, mcp.PromptArgument{Name: arg.Name, Description: arg.Description, Required: arg.Required})
	}
	return mcp.Prompt{Name: flowPromptPrefix + f.Name, Title: "Flow: " + title(f.Name), Description: f.Description, Arguments: args}
}

// flowPrompt is a flow's prompt: the plan, and how to run it with the flow
// tools. A prompt is rendered in one answer, and a flow needs the output of
// each step before the next, so the prompt hands the run to the tools.
func flowPrompt(f *templates.Flow, args map[string]string) (*mcp.GetPromptResult, error) {
	var missing []string
	given := map[string]string{}
	for _, arg := range f.Arguments {
		if v := args[arg.Name]; v != "" {
			given[arg.Name] = v
		} else if arg.Required {
			missing = append(missing, arg.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &fault.Error{Code: fault.MissingRequiredVariable, What: fmt.Sprintf("flow %s was not rendered", f.Name),
			Why: "required arguments are missing: " + strings.Join(missing, ", "), How: "get the prompt again with those arguments",
			Details: map[string]any{"missing": missing}}
	}
	call, err := json.Marshal(map[string]any{"name": f.Name, "arguments": given})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run the flow %s: %s\n\nIts steps, in order:\n", f.Name, f.Description)
	for i, s := range f.Steps {
		fmt.Fprintf(&b, "%d. %s (template %s)\n", i+1, s.Name, s.Template)
	}
	fmt.Fprintf(&b, "\nStart it with flowyprompt_start_flow and these arguments:\n%s\n\n"+
		"Do what each step's prompt asks, then call flowyprompt_next_flow_step with the handle and your result as output, "+
		"until the flow is done.", call)
	return &mcp.GetPromptResult{Description: f.Description,
		Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(b.String())}}}, nil
}
