package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// refreshTemplates is the refresh tool: the library reloaded from its
// source now, and what changed.
func (a *App) refreshTemplates(ctx context.Context, r *mcp.Request, _ toolArgs) (*toolResult, error) {
	r.Progress(0, 2, "refreshing the template library")
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	ch, err := v.lib.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	r.Progress(1, 2, "refreshed")
	if v, err = a.viewOf(ctx, r); err != nil {
		return nil, err
	}
	cat := v.cat
	type invalid struct {
		Path  string `json:"path"`
		Error string `json:"error"`
		Kept  bool   `json:"kept_last_valid,omitempty"`
	}
	inv := []invalid{}
	for _, i := range cat.Invalid() {
		inv = append(inv, invalid{Path: i.Path, Error: i.Err.Error(), Kept: i.Kept})
	}
	info := cat.Info()
	var b strings.Builder
	if ch.Empty() {
		fmt.Fprintf(&b, "## Result\nRefreshed: no changes. %d templates.\n", cat.Len())
	} else {
		fmt.Fprintf(&b, "## Result\nRefreshed: %d added, %d changed, %d removed. %d templates.", len(ch.Added), len(ch.Changed), len(ch.Removed), cat.Len())
		if !ch.Flows.Empty() {
			fmt.Fprintf(&b, " Flows: %d added, %d changed, %d removed.", len(ch.Flows.Added), len(ch.Flows.Changed), len(ch.Flows.Removed))
		}
		b.WriteString("\n")
	}
	for _, part := range []struct {
		label string
		names []string
	}{{"Added", ch.Added}, {"Changed", ch.Changed}, {"Removed", ch.Removed},
		{"Flows added", ch.Flows.Added}, {"Flows changed", ch.Flows.Changed}, {"Flows removed", ch.Flows.Removed}} {
		if len(part.names) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", part.label, strings.Join(part.names, ", "))
		}
	}
	if len(inv) > 0 {
		fmt.Fprintf(&b, "\n## Invalid template files\n")
		for _, i := range cat.Invalid() {
			fmt.Fprintf(&b, "- %s (%s): %s\n", i.Path, invalidNote(i), i.Err)
		}
	}
	note, staleData := staleNote(cat)
	fmt.Fprintf(&b, "\n## Metadata\n- Source: %s\n- Loaded: %s\n%s", describe(info), cat.LoadedAt().UTC().Format("2006-01-02T15:04:05Z"), note)
	b.WriteString("\n## Next actions\n- See the list: flowyprompt_list_templates()")
	if len(inv) > 0 {
		b.WriteString("\n- Check a broken file: flowyprompt_validate_template(template=\"<file contents>\")")
	}
	if r.Modern() {
		// A 2026 client has no session for the library's warnings to be
		// broadcast to: the request that refreshed hears of them (when its
		// _meta asked for log messages).
		for _, w := range warnings(cat, nil) {
			r.Log(mcp.LevelWarning, "flowyprompt", w)
		}
	}
	r.Progress(2, 2, "done")
	structured := map[string]any{"added": nonNilStrings(ch.Added), "changed": nonNilStrings(ch.Changed), "removed": nonNilStrings(ch.Removed),
		"total": cat.Len(), "invalid": inv, "source": info}
	if !ch.Flows.Empty() {
		// Only when a flow changed: the flow lists stay apart from the
		// template ones, which callers count as templates.
		structured["flows"] = map[string]any{"added": nonNilStrings(ch.Flows.Added), "changed": nonNilStrings(ch.Flows.Changed),
			"removed": nonNilStrings(ch.Flows.Removed)}
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: b.String(), structured: structured, view: v}, nil
}
