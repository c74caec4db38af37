package main

// The input-required fixtures (SEP-2322, revision 2026-07-28): tools and a
// prompt that cannot finish without asking the client something. A modern
// request gets an *mcp.InputRequiredResult and retries with the answers in
// inputResponses and the requestState echoed; a legacy one (2025 and
// before), which has a session to ask on, gets the same questions as
// server→client requests (r.Call) and one final answer. Either way the
// same asker decides, round by round, what to ask and when it is done.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// round is what an asker sees of one request: the client's answers to the
// previous round's questions, and the state that round asked the client to
// echo, verified (nil when there is none).
type round struct {
	answers map[string]json.RawMessage
	state   json.RawMessage
	caps    mcp.ClientCapabilities
}

// asking is an asker's "not yet": the questions, keyed as the answers will
// be, and the state to get back with them (nil: none), any JSON value.
type asking struct {
	requests map[string]mcp.InputRequest
	state    any
}

// asker decides one round: the final result (*mcp.CallToolResult or
// *mcp.GetPromptResult), or what to ask next.
type asker func(rd round) (result any, next *asking, err error)

// stateTTL is how long a client has to retry with a requestState.
const stateTTL = time.Hour

// maxRounds bounds how many times a legacy request asks its client before
// giving up on answers that never satisfy the asker.
const maxRounds = 8

// errAskClient marks a legacy request's failure to get its client's
// answer (no such capability, an error, no answer): a tool reports it as a
// tool error, as test_sampling and test_elicitation do; a prompt as the
// error it wraps.
type errAskClient struct{ err error }

func (e *errAskClient) Error() string { return e.err.Error() }
func (e *errAskClient) Unwrap() error { return e.err }

// ask runs asker a for request r, whose retry members are rt; scope names
// the tool or prompt, so a requestState one issued is refused by another.
func (fx *fixtures) ask(ctx context.Context, r *mcp.Request, scope string, rt mcp.Retry, a asker) (any, error) {
	rd := round{answers: rt.InputResponses, caps: r.ClientCapabilities()}
	if rt.RequestState != "" {
		var payload json.RawMessage
		if err := fx.states.Open(scope, rt.RequestState, &payload); err != nil {
			return nil, &fault.Error{Code: mcp.CodeInvalidParams, What: "invalid requestState", Err: err,
				Why: "it is not a requestState " + scope + " issued, or it was altered, or it expired",
				How: "echo the requestState of the last input_required result unchanged, or start again without one"}
		}
		rd.state = payload
	}
	if r.Modern() {
		res, next, err := a(rd)
		if err != nil || next == nil {
			return res, err
		}
		out := &mcp.InputRequiredResult{InputRequests: next.requests}
		if next.state != nil {
			state, err := fx.states.Seal(scope, next.state, stateTTL)
			if err != nil {
				return nil, fmt.Errorf("encode requestState: %w", err)
			}
			out.RequestState = state
		}
		return out, nil
	}
	for range maxRounds {
		res, next, err := a(rd)
		if err != nil || next == nil {
			return res, err
		}
		answers, err := askClient(ctx, r, next.requests)
		if err != nil {
			return nil, &errAskClient{err}
		}
		rd = round{answers: answers, caps: rd.caps}
		if next.state != nil {
			if rd.state, err = json.Marshal(next.state); err != nil {
				return nil, fmt.Errorf("encode state: %w", err)
			}
		}
	}
	return nil, &errAskClient{fmt.Errorf("the client's answers did not satisfy %s after %d rounds", scope, maxRounds)}
}

// capabilityFor names the client capability each kind of input request
// needs.
var capabilityFor = map[string]string{
	mcp.MethodElicitationCreate:     "elicitation",
	mcp.MethodSamplingCreateMessage: "sampling",
	methodRootsList:                 "roots",
}

const methodRootsList = "roots/list"

// askClient sends a legacy client the questions, in key order, and
// returns its answers keyed as the questions were.
func askClient(ctx context.Context, r *mcp.Request, requests map[string]mcp.InputRequest) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	answers := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		q := requests[k]
		if c := capabilityFor[q.Method]; !r.ClientCapabilities().Has(c) {
			return nil, &fault.Error{Code: mcp.CodeInvalidRequest, What: "the client does not support " + q.Method,
				Why: "it declared no " + c + " capability at initialize",
				How: "declare " + c + " at initialize, or send the request at revision " + mcp.Version20260728 + " to be asked in its result"}
		}
		var raw json.RawMessage
		if err := r.Call(ctx, q.Method, q.Params, &raw); err != nil {
			return nil, fmt.Errorf("%s failed: %w", q.Method, err)
		}
		answers[k] = raw
	}
	return answers, nil
}

// ---- questions and answers ----

func elicitRequest(message string, schema json.RawMessage) mcp.InputRequest {
	return mcp.InputRequest{Method: mcp.MethodElicitationCreate, Params: map[string]any{"message": message, "requestedSchema": schema}}
}

func samplingRequest(text string, maxTokens int) mcp.InputRequest {
	return mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": mcp.TextContent(text)}},
		"maxTokens": maxTokens,
	}}
}

func rootsRequest() mcp.InputRequest {
	return mcp.InputRequest{Method: methodRootsList, Params: map[string]any{}}
}

// stringSchema is a form of one required string field.
func stringSchema(field string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"` + field + `":{"type":"string"}},"required":["` + field + `"]}`)
}

var confirmSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

// elicited is an elicitation/create answer.
type elicited struct {
	Action  string                     `json:"action"`
	Content map[string]json.RawMessage `json:"content"`
}

// elicitedOf reads an elicitation answer; false when it is absent or is
// not one.
func elicitedOf(raw json.RawMessage) (elicited, bool) {
	var e elicited
	if len(raw) == 0 || json.Unmarshal(raw, &e) != nil {
		return elicited{}, false
	}
	switch e.Action {
	case "accept", "decline", "cancel":
		return e, true
	}
	return elicited{}, false
}

// text returns an accepted answer's non-empty string field.
func (e elicited) text(field string) (string, bool) {
	var s string
	if e.Action != "accept" || json.Unmarshal(e.Content[field], &s) != nil || s == "" {
		return "", false
	}
	return s, true
}

// flag returns an accepted answer's boolean field.
func (e elicited) flag(field string) (v, ok bool) {
	if e.Action != "accept" || json.Unmarshal(e.Content[field], &v) != nil {
		return false, false
	}
	return v, true
}

// refused reports whether the user declined or cancelled.
func (e elicited) refused() bool { return e.Action == "decline" || e.Action == "cancel" }

// sampledText returns the text of a sampling/createMessage answer, whose
// content is one block or (with tools, from 2025-11-25) a list of them.
func sampledText(raw json.RawMessage) (string, bool) {
	var res struct {
		Content json.RawMessage `json:"content"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &res) != nil || len(res.Content) == 0 {
		return "", false
	}
	var blocks []mcp.Content
	if res.Content[0] == '[' {
		if json.Unmarshal(res.Content, &blocks) != nil {
			return "", false
		}
	} else {
		var one mcp.Content
		if json.Unmarshal(res.Content, &one) != nil {
			return "", false
		}
		blocks = []mcp.Content{one}
	}
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			return b.Text, true
		}
	}
	return "", false
}

// rootsOf returns the uris of a roots/list answer.
func rootsOf(raw json.RawMessage) ([]string, bool) {
	var res struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &res) != nil || res.Roots == nil {
		return nil, false
	}
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r.URI == "" {
			return nil, false
		}
		uris = append(uris, r.URI)
	}
	return uris, true
}

func rootsText(uris []string) string {
	return fmt.Sprintf("%d root(s)", len(uris))
}

// stateOf decodes a verified state into v; false when there is none or it
// is not v's shape (a state another version of the asker issued).
func stateOf(rd round, v any) bool {
	return rd.state != nil && json.Unmarshal(rd.state, v) == nil
}

func askOne(key string, q mcp.InputRequest, state any) *asking {
	return &asking{requests: map[string]mcp.InputRequest{key: q}, state: state}
}

// ---- the askers ----

// askName asks the user's name, with no requestState: the answer under
// user_name is all it needs, whatever else comes with it. A missing or
// malformed answer is asked again.
func askName(rd round) (any, *asking, error) {
	e, ok := elicitedOf(rd.answers["user_name"])
	if name, named := e.text("name"); named {
		return textResult("Hello, " + name + "!"), nil, nil
	}
	if ok && e.refused() {
		return textResult("No name given: the user chose to " + e.Action), nil, nil
	}
	return nil, askOne("user_name", elicitRequest("What is your name?", stringSchema("name")), nil), nil
}

func askCapital(rd round) (any, *asking, error) {
	if text, ok := sampledText(rd.answers["capital_question"]); ok {
		return textResult("Sampling response: " + text), nil, nil
	}
	return nil, askOne("capital_question", samplingRequest("What is the capital of France?", 100), nil), nil
}

func askRoots(rd round) (any, *asking, error) {
	if uris, ok := rootsOf(rd.answers["client_roots"]); ok {
		return textResult(fmt.Sprintf("Client exposed %s: %s", rootsText(uris), strings.Join(uris, ", "))), nil, nil
	}
	return nil, askOne("client_roots", rootsRequest(), nil), nil
}

// confirmState is the requestState of askConfirm.
type confirmState struct {
	Awaiting string `json:"awaiting"`
}

// askConfirm asks for a confirmation and completes only on a retry that
// echoes the requestState it issued: an altered one is refused before it
// runs (see fixtures.ask).
func askConfirm(rd round) (any, *asking, error) {
	var st confirmState
	if stateOf(rd, &st) && st.Awaiting == "confirm" {
		e, _ := elicitedOf(rd.answers["confirm"])
		if ok, answered := e.flag("ok"); answered {
			if ok {
				return textResult("state-ok: requestState received and confirmation accepted"), nil, nil
			}
			return textResult("state-ok: requestState received; the user did not confirm"), nil, nil
		}
		if e.refused() {
			return textResult("state-ok: requestState received; the user chose to " + e.Action), nil, nil
		}
	}
	return nil, askOne("confirm", elicitRequest("Please confirm", confirmSchema), confirmState{Awaiting: "confirm"}), nil
}

// gathered is the requestState of askMany: what the earlier rounds got.
type gathered struct {
	Name     string   `json:"name,omitempty"`
	Greeting string   `json:"greeting,omitempty"`
	Roots    []string `json:"roots,omitempty"`
	HasRoots bool     `json:"hasRoots,omitempty"`
}

// askMany needs three answers of three kinds at once; the ones it got
// travel in requestState, and only the missing ones are asked again.
func askMany(rd round) (any, *asking, error) {
	var g gathered
	stateOf(rd, &g)
	if e, _ := elicitedOf(rd.answers["user_name"]); g.Name == "" {
		g.Name, _ = e.text("name")
	}
	if text, ok := sampledText(rd.answers["greeting"]); ok && g.Greeting == "" {
		g.Greeting = text
	}
	if uris, ok := rootsOf(rd.answers["client_roots"]); ok && !g.HasRoots {
		g.Roots, g.HasRoots = uris, true
	}
	if g.Name != "" && g.Greeting != "" && g.HasRoots {
		return textResult(fmt.Sprintf("%s %s — %s visible", g.Greeting, g.Name, rootsText(g.Roots))), nil, nil
	}
	next := &asking{requests: map[string]mcp.InputRequest{}, state: g}
	if g.Name == "" {
		next.requests["user_name"] = elicitRequest("What is your name?", stringSchema("name"))
	}
	if g.Greeting == "" {
		next.requests["greeting"] = samplingRequest("Generate a greeting", 50)
	}
	if !g.HasRoots {
		next.requests["client_roots"] = rootsRequest()
	}
	return nil, next, nil
}

// rounds is the requestState of askRounds: the step it waits for, and
// what the first step got.
type rounds struct {
	Round int    `json:"round"`
	Name  string `json:"name,omitempty"`
}

// askRounds asks one question after the other, its progress kept in
// requestState, which therefore changes from round to round.
func askRounds(rd round) (any, *asking, error) {
	var st rounds
	stateOf(rd, &st)
	step1 := askOne("step1", elicitRequest("Step 1: What is your name?", stringSchema("name")), rounds{Round: 1})
	switch st.Round {
	case 1:
		e, _ := elicitedOf(rd.answers["step1"])
		name, ok := e.text("name")
		if !ok {
			return nil, step1, nil
		}
		return nil, askOne("step2", elicitRequest("Step 2: What is your favorite color?", stringSchema("color")),
			rounds{Round: 2, Name: name}), nil
	case 2:
		e, _ := elicitedOf(rd.answers["step2"])
		color, ok := e.text("color")
		if !ok {
			return nil, askOne("step2", elicitRequest("Step 2: What is your favorite color?", stringSchema("color")), st), nil
		}
		return textResult(fmt.Sprintf("Multi-round complete: %s likes %s", st.Name, color)), nil, nil
	}
	return nil, step1, nil
}

// askDeclared asks only what the client declared it can answer: a client
// without elicitation is never sent an elicitation request.
func askDeclared(rd round) (any, *asking, error) {
	if len(rd.answers) > 0 {
		keys := make([]string, 0, len(rd.answers))
		for k := range rd.answers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return textResult("Capability-aware input requests fulfilled: " + strings.Join(keys, ", ")), nil, nil
	}
	next := &asking{requests: map[string]mcp.InputRequest{}}
	if rd.caps.Has("elicitation") {
		next.requests["user_name"] = elicitRequest("What is your name?", stringSchema("name"))
	}
	if rd.caps.Has("sampling") {
		next.requests["greeting"] = samplingRequest("Generate a short greeting", 50)
	}
	if rd.caps.Has("roots") {
		next.requests["client_roots"] = rootsRequest()
	}
	if len(next.requests) == 0 {
		return textResult("No declared client capability supports an in-band input request"), nil, nil
	}
	return nil, next, nil
}

// askContext is the input-required prompt: it asks what context to
// render with.
func askContext(rd round) (any, *asking, error) {
	e, ok := elicitedOf(rd.answers["user_context"])
	if c, given := e.text("context"); given {
		return &mcp.GetPromptResult{Description: "A prompt with elicited context",
			Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Context: " + c)}}}, nil, nil
	}
	if ok && e.refused() {
		return &mcp.GetPromptResult{Description: "A prompt without context",
			Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("No context given: the user chose to " + e.Action)}}}, nil, nil
	}
	return nil, askOne("user_context", elicitRequest("What context should the prompt use?", stringSchema("context")), nil), nil
}

// asToolResult turns a legacy request's failure to get its client's answer
// into a tool error; other errors stay errors.
func asToolResult(res any, err error) (any, error) {
	if ae := (*errAskClient)(nil); errors.As(err, &ae) {
		return errorResult(ae.Error()), nil
	}
	return res, err
}
