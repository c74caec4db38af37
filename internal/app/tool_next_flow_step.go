package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// nextFlowStep is the next_flow_step tool: the handle opened, the step's
// output taken, and the next step rendered with a new handle (or the
// flow's end).
func (a *App) nextFlowStep(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Handle string `json:"handle"`
		Output string `json:"output"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	var st flowState
	holder := holderOf(ctx)
	if err := a.opts.State.OpenFor(flowPurpose, holder, args.Handle, &st); err != nil {
		why := "the handle was not minted by this server (or its replicas), or it was changed"
		how := "pass the handle of the latest flowyprompt_start_flow or flowyprompt_next_flow_step result unchanged, or start the flow again"
		switch {
		case errors.Is(err, seal.ErrExpired):
			why = fmt.Sprintf("the handle has expired: a handle is valid for %s after the step it was handed out with", flowTTL)
		case errors.Is(err, seal.ErrNotYours):
			why = notYours("the handle", holder)
			how = "continue the flow signed in as the member who started it, or start the flow again with flowyprompt_start_flow"
		default:
			how += "; a handle from another server process (a restart, another replica) opens only where the same keys seal it: " +
				"give every process the same FLOWYPROMPT_STATE_KEYS (or --state-keys), since without them each one seals with a random key of its own"
		}
		return nil, &fault.Error{Code: fault.InvalidArgument, Err: err, What: "the flow handle was refused", Why: why, How: how}
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	fe, ok := cat.LookupFlow(st.Flow)
	if !ok || flowVersions(cat, fe) != st.Versions {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("flow %s cannot continue", st.Flow),
			Why: "the flow, or a template it uses, changed or was removed since the flow started",
			How: "start the flow again with flowyprompt_start_flow"}
	}
	st.Outputs = append(st.Outputs, args.Output)
	// The handle carries only the outputs a step still to come refers to,
	// so it grows with what the flow needs, not with every step run.
	for j, need := range fe.Flow.Needed(st.step()) {
		if !need {
			st.Outputs[j] = ""
		}
	}
	if st.step() >= len(fe.Flow.Steps) {
		text := fmt.Sprintf("## Result\nFlow %s is done: all %d steps ran.\n", fe.Flow.Name, len(fe.Flow.Steps))
		return &toolResult{text: text, structured: map[string]any{"flow": fe.Flow.Name, "done": true,
			"steps": len(fe.Flow.Steps)}, view: v}, nil
	}
	res, err := a.flowStep(cat, fe, st, holder)
	if err != nil {
		return nil, err
	}
	res.view = v
	return res, nil
}
