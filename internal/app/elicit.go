package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// elicitResult is the client's answer to elicitation/create.
type elicitResult struct {
	Action  string         `json:"action"` // accept, decline, cancel
	Content map[string]any `json:"content"`
}

// errBadState marks a retry whose requestState the server cannot accept:
// a fault of the request itself, answered with a JSON-RPC error even by a
// tool (whose own failures are results).
var errBadState = errors.New("bad requestState")

// errDeclined is returned when the user turned the form down.
var errDeclined = errors.New("the user declined to provide the values")

// askForMissing gets the required variables that are missing from the
// user, when the client can show a form, and returns args with the answers
// merged. A 2025-era session is asked with elicitation/create; a modern
// request is answered with an input-required result (mcp.InputRequired,
// as the error), and its retry brings the answers. It returns (nil, nil)
// when the client cannot show a form, so the caller keeps the plain
// MISSING_REQUIRED_VARIABLE error.
func (a *App) askForMissing(ctx context.Context, r *mcp.Request, t *templates.Template, args map[string]string, missing []string, retry mcp.Retry) (map[string]string, error) {
	if r == nil || !formElicitation(r.ClientCapabilities().Elicitation) {
		return nil, nil
	}
	form := elicitForm(t, missing)
	if r.Modern() {
		return a.fromInput(holderOf(ctx), r, t, args, missing, retry, form)
	}
	var res elicitResult
	if err := r.Call(ctx, mcp.MethodElicitationCreate, form, &res); err != nil {
		return nil, fmt.Errorf("asking the user for %s: %w", strings.Join(missing, ", "), err)
	}
	return merge(t, args, missing, res)
}

// elicitForm is the elicitation/create request for the missing variables:
// a form with their descriptions, enums and defaults.
func elicitForm(t *templates.Template, missing []string) map[string]any {
	props := map[string]any{}
	for _, name := range missing {
		v, ok := t.Variable(name)
		if !ok {
			continue
		}
		props[name] = formField(v)
	}
	return map[string]any{
		"message":         fmt.Sprintf("The %s needs: %s.", describeAsked(t.Metadata.Name), strings.Join(missing, ", ")),
		"requestedSchema": map[string]any{"type": "object", "properties": props, "required": missing},
	}
}

// formField is the form's field for v: a checkbox for a boolean, a
// number field for a number or an integer (forms take only those
// primitives, strings and enums), else a text field, whose description
// says how to write a list.
func formField(v *templates.Variable) map[string]any {
	p := map[string]any{"type": "string", "title": title(v.Name), "description": v.Description}
	var def any
	if v.Default != nil && *v.Default != "" {
		def = *v.Default
	}
	switch v.Type {
	case templates.TypeBoolean, templates.TypeNumber, templates.TypeInteger:
		p["type"] = v.Type
		if def != nil {
			if parsed, err := templates.ParseTyped(v.Type, *v.Default); err == nil {
				def = parsed
			}
		}
	case templates.TypeArray:
		form, _ := templates.TypeForm(v.Type)
		p["description"] = v.Description + " (" + form + ")"
	}
	switch {
	case p["type"] != "string":
	case len(v.Enum) > 0 && v.Type != templates.TypeArray:
		// An enum field is MCP's EnumSchema, which has no minLength.
		p["enum"] = v.Enum
	default:
		// A free text field needs one, so an empty answer does not count
		// as given.
		p["minLength"] = 1
	}
	if def != nil {
		p["default"] = def
	}
	return p
}

// describeAsked names what a form asks values for: a template, or a flow
// (whose stand-in template is named as its prompt, flow:NAME).
func describeAsked(name string) string {
	if flow, ok := strings.CutPrefix(name, flowPromptPrefix); ok {
		return "flow " + flow
	}
	return "template " + name
}

// merge adds the user's answer to args, or says the user declined.
func merge(t *templates.Template, args map[string]string, missing []string, res elicitResult) (map[string]string, error) {
	if res.Action != "accept" {
		return nil, &fault.Error{Code: fault.MissingRequiredVariable, Err: errDeclined,
			What:    fmt.Sprintf("%s was not rendered", describeAsked(t.Metadata.Name)),
			Why:     fmt.Sprintf("the user chose %q when asked for %s", res.Action, strings.Join(missing, ", ")),
			How:     "call again with those arguments",
			Details: map[string]any{"missing": missing}}
	}
	merged := make(map[string]string, len(args)+len(res.Content))
	for k, v := range args {
		merged[k] = v
	}
	for k, v := range res.Content {
		// A form's checkbox or number field answers with a JSON value:
		// it joins the others in their string form.
		if s, ok := templates.ValueText(v); ok {
			merged[k] = s
		} else if v != nil {
			merged[k] = fmt.Sprint(v)
		}
	}
	return merged, nil
}

// inputKey names the one question an input-required result of ours asks.
const inputKey = "variables"

// inputTTL is how long a client has to answer an input-required result.
const inputTTL = 30 * time.Minute

// inputState is what a requestState carries: which request it belongs to
// (the arguments it had, as a digest) and what it asked for.
type inputState struct {
	Args    string   `json:"a"`
	Missing []string `json:"m"`
}

// fromInput serves a modern request that lacks required variables: its
// retry's answers when it brings them with a requestState this server
// sealed for the same request of the same holder (holderOf), otherwise an
// input-required result asking for them.
func (a *App) fromInput(holder string, r *mcp.Request, t *templates.Template, args map[string]string, missing []string, retry mcp.Retry, form map[string]any) (map[string]string, error) {
	form["mode"] = "form" // the one mode an input request may name
	purpose := "input:" + r.Method + ":" + t.Metadata.Name
	digest := argsDigest(args)
	if retry.RequestState != "" {
		var st inputState
		if err := a.opts.State.OpenFor(purpose, holder, retry.RequestState, &st); err != nil {
			if errors.Is(err, seal.ErrNotYours) {
				return nil, &fault.Error{Code: mcp.CodeInvalidParams, Err: errors.Join(errBadState, err),
					What: "the requestState is not valid for this request",
					Why:  notYours("it", holder) + ", like the answers it asked for",
					How:  "retry signed in as the member who got it, or send the request again without requestState and inputResponses"}
			}
			return nil, &fault.Error{Code: mcp.CodeInvalidParams, Err: errors.Join(errBadState, err),
				What: "the requestState is not valid for this request",
				Why:  err.Error() + "; a requestState is sealed by the server for one request, and expires after " + inputTTL.String(),
				How:  "send the request again without requestState and inputResponses, and answer the new question"}
		}
		if st.Args != digest {
			return nil, &fault.Error{Code: mcp.CodeInvalidParams, Err: errBadState,
				What: "the requestState belongs to another request",
				Why:  "it was given for other arguments of " + t.Metadata.Name,
				How:  "retry with the arguments of the request that returned it, or start again without requestState"}
		}
		if raw, ok := retry.InputResponses[inputKey]; ok {
			var res elicitResult
			if json.Unmarshal(raw, &res) == nil && res.Action != "" {
				merged, err := merge(t, args, missing, res)
				if err != nil || !stillMissing(t, merged) {
					return merged, err
				}
			}
			// A malformed answer, or one that leaves values out: ask again.
		}
	}
	state, err := a.opts.State.SealFor(purpose, holder, inputState{Args: digest, Missing: missing}, inputTTL)
	if err != nil {
		return nil, err
	}
	return nil, &mcp.InputRequired{Result: mcp.InputRequiredResult{
		InputRequests: map[string]mcp.InputRequest{inputKey: {Method: mcp.MethodElicitationCreate, Params: form}},
		RequestState:  state,
	}}
}

// stillMissing reports whether args lack a required variable that has no
// default.
func stillMissing(t *templates.Template, args map[string]string) bool {
	for _, v := range t.Variables {
		if v.Required && args[v.Name] == "" && (v.Default == nil || *v.Default == "") {
			return true
		}
	}
	return false
}

// argsDigest identifies a request's arguments in its requestState without
// carrying them (they may be long, or private).
func argsDigest(args map[string]string) string {
	b, _ := json.Marshal(args) // map keys are sorted: one digest per set of arguments
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// formElicitation reports whether the client's elicitation capability
// covers forms: an empty object (every revision before 2025-11-25, and
// "forms only" since), or one that names "form". A client that declares
// only {"url": {}} takes URL elicitation alone.
func formElicitation(capability json.RawMessage) bool {
	if len(capability) == 0 || string(capability) == "null" {
		return false
	}
	var modes map[string]json.RawMessage
	if json.Unmarshal(capability, &modes) != nil {
		return false
	}
	_, form := modes["form"]
	_, url := modes["url"]
	return form || !url
}
