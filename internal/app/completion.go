package app

import (
	"context"
	"strings"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// maxCompletions is the MCP limit on values in one completion answer.
const maxCompletions = 100

// Complete suggests values for a prompt argument: true and false for a
// boolean, the variable's enum and examples that match what was typed,
// then its default, then values this session used before.
func (a *App) Complete(ctx context.Context, r *mcp.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	view, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	empty := &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}
	if p.Ref.Type != "ref/prompt" {
		if p.Ref.Type == "ref/resource" && strings.HasPrefix(p.Ref.URI, TemplateURIPrefix) && p.Argument.Name == "name" {
			var names []string
			for _, e := range view.cat.Templates() {
				names = append(names, e.Template.Metadata.Name)
			}
			return completion(names, p.Argument.Value), nil
		}
		return empty, nil
	}
	e, ok := view.cat.Lookup(p.Ref.Name)
	if !ok {
		return empty, nil
	}
	v, ok := e.Template.Variable(p.Argument.Name)
	if !ok {
		return empty, nil
	}
	var cands []string
	if v.Type == templates.TypeBoolean {
		cands = append(cands, "true", "false")
	}
	cands = append(cands, v.Enum...)
	cands = append(cands, v.Examples...)
	if v.Default != nil && *v.Default != "" {
		cands = append(cands, *v.Default)
	}
	if len(v.Enum) == 0 && r != nil {
		// Free-form values: what this session used before is a good guess.
		cands = append(cands, a.used.recall(r.SessionID(), e.Template.Metadata.Name, v.Name)...)
	}
	return completion(cands, p.Argument.Value), nil
}

// completion keeps the candidates matching the typed prefix (then those
// merely containing it), without duplicates, at most 100.
func completion(cands []string, typed string) *mcp.CompleteResult {
	low := strings.ToLower(typed)
	seen := map[string]bool{}
	var prefix, contains []string
	for _, c := range cands {
		if seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		switch {
		case strings.HasPrefix(lc, low):
			prefix = append(prefix, c)
		case strings.Contains(lc, low):
			contains = append(contains, c)
		}
	}
	vals := append(prefix, contains...)
	total := len(vals)
	if vals == nil {
		vals = []string{}
	}
	more := false
	if len(vals) > maxCompletions {
		vals, more = vals[:maxCompletions], true
	}
	return &mcp.CompleteResult{Completion: mcp.Completion{Values: vals, Total: total, HasMore: more}}
}
