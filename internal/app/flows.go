package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
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
// step refers to are dropped (left empty, so that Outputs keeps one entry
// per step done).
type flowState struct {
	Flow     string            `json:"f"`
	Versions string            `json:"v"` // flowVersions when the flow started
	Args     map[string]string `json:"a,omitempty"`
	Outputs  []string          `json:"o,omitempty"`
}

// step is the step whose prompt was handed out with the handle: the one
// after the steps whose outputs it carries.
func (st *flowState) step() int { return len(st.Outputs) }

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

// flowStep renders step st.step() and hands it out with a handle for the
// next call, good for holder alone (holderOf).
func (a *App) flowStep(cat *templates.Catalog, fe *templates.FlowEntry, st flowState, holder string) (*toolResult, error) {
	i := st.step()
	step := fe.Flow.Steps[i]
	e, ok := cat.Lookup(step.Template)
	if !ok { // the versions check and the flow's validation rule this out
		return nil, fmt.Errorf("flow %s: step %s: template %s is gone", fe.Flow.Name, step.Name, step.Template)
	}
	text, _, err := renderText(e.Template, fe.Flow.StepVariables(i, st.Args, st.Outputs))
	if err != nil {
		// The values came from the flow, not from the caller: say which
		// step failed and that the handle still holds, so the caller can
		// send a better output rather than start again.
		if f := fault.As(err); f != nil {
			g := *f
			g.What = fmt.Sprintf("step %d (%s) of flow %s cannot be rendered: %s", i+1, step.Name, fe.Flow.Name, f.What)
			g.How = "the step's values come from the flow's arguments and the outputs before it: if an output was empty, too long " +
				"or not a value the template allows, call flowyprompt_next_flow_step again with the same handle and a corrected output; " +
				"otherwise start the flow with other arguments"
			return nil, &g
		}
		return nil, err
	}
	// The handle goes on only for the member who started the flow: the
	// outputs it carries are theirs.
	handle, err := a.opts.State.SealFor(flowPurpose, holder, st, flowTTL)
	if err != nil {
		return nil, err
	}
	if n := len(handle); n > maxFlowHandle {
		// The outputs later steps need travel in the handle, which the
		// result carries twice: past this size it would crowd out the
		// step's prompt. The caller's own handle still holds.
		return nil, &fault.Error{Code: fault.InvalidArgument,
			What: fmt.Sprintf("step %d (%s) of flow %s was not handed out", i+1, step.Name, fe.Flow.Name),
			Why: fmt.Sprintf("the outputs this flow carries to its later steps make a handle of %d characters; a handle holds at most %d "+
				"(about %d characters of outputs)", n, maxFlowHandle, maxFlowHandle*3/4),
			How:     "call flowyprompt_next_flow_step again with the same handle and a shorter output",
			Details: map[string]any{"handle_characters": n, "max_handle_characters": maxFlowHandle}}
	}
	structured := map[string]any{"flow": fe.Flow.Name, "done": false, "step": i + 1,
		"steps": len(fe.Flow.Steps), "step_name": step.Name, "template": e.Template.Metadata.Name}
	// The prompt and the handle are each carried twice, in the text and in
	// structuredContent, and the result as a whole stays within
	// ResultBudget: a prompt longer than the room left is cut at a line.
	var note string
	if room := (ResultBudget - 2*len(handle) - flowReserve) / 2; len(text) > room && runeCount(text) > room {
		total := runeCount(text)
		text = cutPrompt(text, room)
		note = fmt.Sprintf("⚠️ Truncated: the step's prompt has %d characters, more than a tool result carries beside its handle; "+
			"these are the first %d. Get it whole with prompts/get %s and the step's variables.\n\n", total, runeCount(text), e.Template.Metadata.Name)
		structured["truncated"], structured["total_characters"] = true, total
	}
	structured["prompt"], structured["handle"] = text, handle
	report := fmt.Sprintf("## Step %d of %d: %s (template %s)\n\n%s%s\n\n## Next\nDo what the prompt asks; then call flowyprompt_next_flow_step with this handle and the result as output.\n\nhandle: %s\n",
		i+1, len(fe.Flow.Steps), step.Name, e.Template.Metadata.Name, note, text, handle)
	return &toolResult{text: report, structured: structured}, nil
}

// maxFlowHandle is the longest handle a flow step hands out, in bytes
// (a handle is ASCII): with the prompt, twice each, it keeps a step's
// result within ResultBudget. The input schema of
// flowyprompt_next_flow_step caps the handle at the same length.
const maxFlowHandle = 30_000

// flowReserve is the part of ResultBudget a step's result keeps for its
// headings, the truncation note, structuredContent's other members and
// the escapes JSON adds to the prompt (as the render tool's 10,000).
const flowReserve = 10_000

// listFlows is flowyprompt_start_flow without a name: every flow with its
// arguments and steps, so a model can pick one and call it right. Flows
// are few; a library with more than a result holds is cut at a whole
// flow.
func listFlows(cat *templates.Catalog) *toolResult {
	flows := cat.Flows()
	var b strings.Builder
	items := make([]map[string]any, 0, len(flows))
	used := 0
	for _, fe := range flows {
		f := fe.Flow
		var item strings.Builder
		fmt.Fprintf(&item, "\n### %s\n%s\n", f.Name, f.Description)
		args := make([]map[string]any, 0, len(f.Arguments))
		for _, arg := range f.Arguments {
			req := ""
			if arg.Required {
				req = ", required"
			}
			fmt.Fprintf(&item, "- argument %s (string%s): %s\n", arg.Name, req, arg.Description)
			args = append(args, map[string]any{"name": arg.Name, "description": arg.Description, "required": arg.Required})
		}
		steps := make([]map[string]any, 0, len(f.Steps))
		for i, s := range f.Steps {
			fmt.Fprintf(&item, "- step %d: %s (template %s)\n", i+1, s.Name, s.Template)
			steps = append(steps, map[string]any{"name": s.Name, "template": s.Template})
		}
		entry := map[string]any{"name": f.Name, "description": f.Description, "arguments": args, "steps": steps}
		size := runeCount(item.String()) + jsonSize(entry)
		if len(items) > 0 && used+size > ResultBudget-listReserve {
			break
		}
		used += size
		b.WriteString(item.String())
		items = append(items, entry)
	}
	head := fmt.Sprintf("## Result\nThe library has %d flow(s).\n", len(flows))
	next := "\n## Next\nStart one with flowyprompt_start_flow, its name and its arguments.\n"
	switch {
	case len(flows) == 0:
		head = "## Result\nThe library has no flows.\n"
		next = "\n## Next\nA flow is a file in a flows/ folder of the library, naming templates to run in order (docs/flows.md).\n"
	case len(items) < len(flows):
		head += fmt.Sprintf("⚠️ Only the first %d fit in this result; the rest are listed by prompts/list as flow:NAME.\n", len(items))
	}
	return &toolResult{text: head + b.String() + next, structured: map[string]any{"flows": items, "count": len(flows)}}
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

// flowPrompt is a flow's prompt: the whole plan as a conversation, a user
// message that sets out the plan and one for each step, its template
// rendered with the flow's arguments. A prompt is answered at once, and a
// step's values may need the results of the steps before it, so those
// stand as a reference to the earlier step ("[your result of step 1,
// outline]") for the model to fill in as it goes; the opening message
// also names the tool call that runs the flow step by step instead.
func (a *App) flowPrompt(ctx context.Context, r *mcp.Request, cat *templates.Catalog, f *templates.Flow, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	asker := r
	if r != nil && !r.Modern() {
		// As for a template's prompt, only a 2026 client is asked: a
		// 2025 session's prompts/get is not (the tools ask there).
		asker = nil
	}
	args, err := a.flowArguments(ctx, asker, f, p.Arguments, p.Retry, "rendered")
	if err != nil {
		return nil, err
	}
	given := map[string]string{}
	for _, arg := range f.Arguments {
		if v := args[arg.Name]; v != "" {
			given[arg.Name] = v
		}
	}
	// The call is shown to a model as text: '<' stays '<'.
	var call bytes.Buffer
	enc := json.NewEncoder(&call)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"name": f.Name, "arguments": given}); err != nil {
		return nil, err
	}
	n := len(f.Steps)
	var b strings.Builder
	fmt.Fprintf(&b, "Run the flow %s: %s\n\nIt has %d steps, each in a message of its own below:\n", f.Name, f.Description, n)
	for i, s := range f.Steps {
		fmt.Fprintf(&b, "%d. %s (template %s)\n", i+1, s.Name, s.Template)
	}
	fmt.Fprintf(&b, "\nDo them in order. Where a step refers to the result of an earlier one, use what you produced for it. "+
		"Answer each step under a heading with its number and name.\n\n"+
		"To run the flow one step at a time instead, call flowyprompt_start_flow with %s and follow its results.", bytes.TrimSpace(call.Bytes()))
	msgs := []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(b.String())}}

	// What each earlier step's result stands as in the steps after it.
	refs := make([]string, n)
	for i, s := range f.Steps {
		refs[i] = fmt.Sprintf("[your result of step %d, %s]", i+1, s.Name)
	}
	// The prompt as a whole stays within ResultBudget: each step has an
	// equal share of what the opening message leaves, and a step's text
	// longer than that is cut at a line, saying so.
	room := (ResultBudget - flowReserve - runeCount(b.String())) / max(n, 1)
	for i, s := range f.Steps {
		head := fmt.Sprintf("## Step %d of %d: %s\n\n", i+1, n, s.Name)
		e, ok := cat.Lookup(s.Template)
		if !ok { // a flow's validation rules this out
			return nil, fmt.Errorf("flow %s: step %s: template %s is gone", f.Name, s.Name, s.Template)
		}
		vars := f.StepVariables(i, given, refs[:i])
		text, _, err := renderText(e.Template, vars)
		if err != nil {
			// A reference can break a rule of the template (an enum, a
			// pattern) that the earlier step's real result would meet:
			// the step is then described instead of rendered.
			text = fmt.Sprintf("Use the template %s with these values. It cannot be filled in before the steps it depends on are done (%s).\n\n%s",
				s.Template, err, describeValues(vars))
		}
		if len(text) > room && runeCount(text) > room {
			total := runeCount(text)
			text = cutPrompt(text, room)
			text = fmt.Sprintf("⚠️ Truncated: this step's prompt has %d characters, more than its share of the flow's prompt; these are the first %d. "+
				"Run the flow step by step with flowyprompt_start_flow to get each step whole.\n\n%s", total, runeCount(text), text)
		}
		msgs = append(msgs, mcp.PromptMessage{Role: "user", Content: mcp.TextContent(head + text)})
	}
	return &mcp.GetPromptResult{Description: f.Description, Messages: msgs}, nil
}

// describedValue is the most of a value describeValues shows: enough
// to recognise it, and a step's description never holds a long value
// (one refused for its length would otherwise be copied into it).
const describedValue = 200

// describeValues lists a step's variables, one per line, in name order,
// each value cut at describedValue characters.
func describeValues(vars map[string]string) string {
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		v := vars[name]
		if n := runeCount(v); n > describedValue {
			v = fmt.Sprintf("%s (%d characters in all)", truncateRunes(v, describedValue), n)
		}
		fmt.Fprintf(&b, "- %s: %s\n", name, v)
	}
	return b.String()
}
