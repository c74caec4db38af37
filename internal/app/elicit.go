package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// elicitResult is the client's answer to elicitation/create.
type elicitResult struct {
	Action  string         `json:"action"` // accept, decline, cancel
	Content map[string]any `json:"content"`
}

// errDeclined is returned when the user turned the form down.
var errDeclined = errors.New("the user declined to provide the values")

// askForMissing asks the user, through the client, for the required
// variables that are missing, and returns args with the answers merged.
// It returns (nil, nil) when the client cannot elicit, so the caller keeps
// the plain MISSING_REQUIRED_VARIABLE error.
func askForMissing(ctx context.Context, r *mcp.Request, t *templates.Template, args map[string]string, missing []string) (map[string]string, error) {
	if r == nil || !formElicitation(r.ClientCapabilities().Elicitation) {
		return nil, nil
	}
	props := map[string]any{}
	for _, name := range missing {
		v, ok := t.Variable(name)
		if !ok {
			continue
		}
		p := map[string]any{"type": "string", "title": title(v.Name), "description": v.Description}
		// An enum field is MCP's EnumSchema, which has no minLength; a free
		// text field needs one so an empty answer does not count as given.
		if len(v.Enum) > 0 {
			p["enum"] = v.Enum
		} else {
			p["minLength"] = 1
		}
		if v.Default != nil && *v.Default != "" {
			p["default"] = *v.Default
		}
		props[name] = p
	}
	params := map[string]any{
		"message":         fmt.Sprintf("The template %s needs: %s.", t.Metadata.Name, strings.Join(missing, ", ")),
		"requestedSchema": map[string]any{"type": "object", "properties": props, "required": missing},
	}
	var res elicitResult
	if err := r.Call(ctx, mcp.MethodElicitationCreate, params, &res); err != nil {
		return nil, fmt.Errorf("asking the user for %s: %w", strings.Join(missing, ", "), err)
	}
	if res.Action != "accept" {
		return nil, &fault.Error{Code: fault.MissingRequiredVariable, Err: errDeclined,
			What:    fmt.Sprintf("template %s was not rendered", t.Metadata.Name),
			Why:     fmt.Sprintf("the user chose %q when asked for %s", res.Action, strings.Join(missing, ", ")),
			How:     "call flowyprompt_render_template again with those arguments",
			Details: map[string]any{"missing": missing}}
	}
	merged := make(map[string]string, len(args)+len(res.Content))
	for k, v := range args {
		merged[k] = v
	}
	for k, v := range res.Content {
		if s, ok := v.(string); ok {
			merged[k] = s
		} else if v != nil {
			merged[k] = fmt.Sprint(v)
		}
	}
	return merged, nil
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
