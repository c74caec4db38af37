package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// startFlow is the start_flow tool: without a name, the flows there are;
// with one, the flow's first step rendered, and the handle that
// continues it.
func (a *App) startFlow(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	if args.Name == "" {
		if len(args.Arguments) > 0 {
			return nil, &fault.Error{Code: fault.InvalidArgument, What: "no flow was started",
				Why: "arguments were given without the name of a flow", How: "call again with name set to one of the flows this call lists without arguments"}
		}
		res := listFlows(cat)
		res.view = v
		return res, nil
	}
	fe, ok := cat.LookupFlow(args.Name)
	if !ok {
		var names []string
		for _, f := range cat.Flows() {
			names = append(names, f.Flow.Name)
		}
		how := "use one of the flows the library has: " + strings.Join(names, ", ")
		if len(names) == 0 {
			how = "the library has no flows: a flow is a file in a flows/ folder of the library (see docs/flows.md)"
		}
		return nil, &fault.Error{Code: fault.TemplateNotFound, What: fmt.Sprintf("no flow named %q", args.Name),
			Why: "the library has no valid flow by that name (an invalid one is listed by flowyprompt_refresh_templates)",
			How: how, Suggestions: closeNames(args.Name, names)}
	}
	var unknown []string
	for name := range args.Arguments {
		if !slices.ContainsFunc(fe.Flow.Arguments, func(arg templates.FlowArg) bool { return arg.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("flow %s was not started", fe.Flow.Name),
			Why: "the flow has no arguments named " + strings.Join(unknown, ", "), How: "pass only the flow's arguments"}
	}
	given, err := a.flowArguments(ctx, r, fe.Flow, args.Arguments, in.retry, "started")
	if err != nil {
		return nil, err
	}
	res, err := a.flowStep(cat, fe, flowState{Flow: fe.Flow.Name, Versions: flowVersions(cat, fe), Args: given}, holderOf(ctx))
	if err != nil {
		return nil, err
	}
	res.view = v
	return res, nil
}

// flowArguments is args when it holds every required argument of f;
// otherwise the user is asked for the missing ones, as for a template's
// missing variables (a form, or an input-required result for a 2026
// client), when the client can show a form; else they are an error that
// names them. done says what did not happen ("started", "rendered").
func (a *App) flowArguments(ctx context.Context, r *mcp.Request, f *templates.Flow, args map[string]string,
	retry mcp.Retry, done string) (map[string]string, error) {
	if err := checkFlowValues(f, args, done); err != nil {
		return nil, err
	}
	var missing []string
	for _, arg := range f.Arguments {
		if arg.Required && strings.TrimSpace(args[arg.Name]) == "" {
			missing = append(missing, arg.Name)
		}
	}
	if len(missing) == 0 {
		return args, nil
	}
	merged, err := a.askForMissing(ctx, r, flowInputs(f), args, missing, retry)
	if err != nil {
		return nil, err
	}
	if merged != nil {
		if err := checkFlowValues(f, merged, done); err != nil {
			return nil, err
		}
		return merged, nil
	}
	return nil, &fault.Error{Code: fault.MissingRequiredVariable, What: fmt.Sprintf("flow %s was not %s", f.Name, done),
		Why: "required arguments are missing: " + strings.Join(missing, ", "), How: "call again with those arguments",
		Details: map[string]any{"missing": missing}}
}

// checkFlowValues refuses an argument of f longer than a value may be. A
// value is copied into every step that refers to it, so it is checked
// here, before any copy, and not only by the render of each step.
func checkFlowValues(f *templates.Flow, args map[string]string, done string) error {
	for _, arg := range f.Arguments {
		if err := render.CheckValue(arg.Name, args[arg.Name]); err != nil {
			g := *fault.As(err)
			g.What = fmt.Sprintf("flow %s was not %s: %s", f.Name, done, g.What)
			return &g
		}
	}
	return nil
}

// flowInputs is a stand-in template whose variables are f's arguments and
// whose name is f's prompt: what the forms that ask for missing values
// read.
func flowInputs(f *templates.Flow) *templates.Template {
	t := &templates.Template{Metadata: templates.Metadata{Name: flowPromptPrefix + f.Name, Description: f.Description}}
	for _, arg := range f.Arguments {
		t.Variables = append(t.Variables, templates.Variable{Name: arg.Name, Type: "string", Description: arg.Description, Required: arg.Required})
	}
	return t
}
