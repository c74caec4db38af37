package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// getTemplate is the get tool: a template's definition, at a version
// when asked, its long texts shortened to stay within the result budget.
func (a *App) getTemplate(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct{ Name, Version string }
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	e, v, at, err := a.lookupAt(ctx, r, args.Name, args.Version)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	noteUsage(ctx, e, cat)
	// A template's descriptions can fill most of its file, and the result
	// carries them twice (text and structuredContent): within the budget,
	// they are shortened, and the result says so.
	var res *toolResult
	for _, limit := range []int{0, 2000, 500, 100} {
		res = describeTemplate(e, cat, limit)
		res.view = v
		if at != nil {
			res.structured.(map[string]any)["at"] = at
			res.text = strings.Replace(res.text, "\n\n## Metadata", "\n"+describeAt(at)+"\n\n## Metadata", 1)
		}
		if utf8.RuneCountInString(res.text)+jsonSize(res.structured) <= ResultBudget {
			break
		}
	}
	return res, nil
}

// shortened is t with its long texts cut to limit characters (none when
// limit is 0).
func shortened(t *templates.Template, limit int) (templates.Metadata, []templates.Variable) {
	m := t.Metadata
	vars := nonNilVars(t.Variables)
	if limit == 0 {
		return m, vars
	}
	m.Description = truncateRunes(m.Description, limit)
	vars = slices.Clone(vars)
	for i := range vars {
		v := &vars[i]
		v.Description = truncateRunes(v.Description, limit)
		if v.Default != nil {
			d := truncateRunes(*v.Default, limit)
			v.Default = &d
		}
		if len(v.Examples) > 0 {
			ex := make([]string, len(v.Examples))
			for j, x := range v.Examples {
				ex[j] = truncateRunes(x, limit)
			}
			v.Examples = ex
		}
	}
	return m, vars
}

// sectionSummary is a section as the get tool lists it.
type sectionSummary struct {
	Name   string `json:"name"`
	Format string `json:"format,omitempty"`
	Order  int    `json:"order"`
}

// describeTemplate is the get tool's result for e, its long texts cut to
// limit characters (none when limit is 0).
func describeTemplate(e *templates.Entry, cat *templates.Catalog, limit int) *toolResult {
	t := e.Template
	m, vars := shortened(t, limit)
	var b strings.Builder
	writeTemplateMetadata(&b, m)
	model := writeModel(&b, t)
	writeVariables(&b, vars)
	sections, turns := writeStructure(&b, t)
	source := writeSource(&b, e, cat.Info())
	warnings := writeWarnings(&b, e)
	note, staleData := staleNote(cat)
	if limit > 0 {
		fmt.Fprintf(&b, "- ⚠️ Truncated: descriptions, defaults and examples are cut to %d characters to stay within the result size budget; "+
			"resources/read template://%s returns the whole file\n", limit, m.Name)
	}
	b.WriteString(note)
	fmt.Fprintf(&b, "\n## Next actions\n- Render it: flowyprompt_render_template(name=%q, arguments=%s)", m.Name, requiredExample(t))
	structured := map[string]any{"metadata": m, "variables": vars, "sections": sections, "source": source, "warnings": warnings}
	if turns != nil {
		structured["messages"] = turns
	}
	if model != nil {
		structured["model"] = model
	}
	if t.Format != "" && t.Format != templates.FormatJSON {
		structured["format"] = t.Format
	}
	if limit > 0 {
		structured["truncated"] = true
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: b.String(), structured: structured}
}

// writeTemplateMetadata writes the Result line and the Metadata section.
func writeTemplateMetadata(b *strings.Builder, m templates.Metadata) {
	version := ""
	if m.Version != "" {
		// A file of another format may give no version.
		version = " v" + m.Version
	}
	fmt.Fprintf(b, "## Result\nTemplate **%s**%s.\n\n## Metadata\n", m.Name, version)
	if m.Title != "" {
		fmt.Fprintf(b, "- Title: %s\n", m.Title)
	}
	fmt.Fprintf(b, "- Description: %s\n", m.Description)
	if m.Author != "" {
		fmt.Fprintf(b, "- Author: %s\n", m.Author)
	}
	if m.Category != "" {
		fmt.Fprintf(b, "- Category: %s\n", m.Category)
	}
	if len(m.Tags) > 0 {
		fmt.Fprintf(b, "- Tags: %s\n", strings.Join(m.Tags, ", "))
	}
	if m.LastUpdated != "" {
		fmt.Fprintf(b, "- Last updated: %s\n", m.LastUpdated)
	}
}

// writeModel writes the Model section, when t's file gives model
// settings, and returns them for structuredContent (nil when there are
// none). They are what the template was written for: shown, never acted on.
func writeModel(b *strings.Builder, t *templates.Template) *templates.Model {
	if t.Model == nil {
		return nil
	}
	b.WriteString("\n## Model\n")
	if t.Model.Name != "" {
		fmt.Fprintf(b, "- Name: %s\n", t.Model.Name)
	}
	keys := slices.Sorted(maps.Keys(t.Model.Parameters))
	for _, k := range keys {
		v, _ := json.Marshal(t.Model.Parameters[k]) // values decoded from YAML always encode
		fmt.Fprintf(b, "- %s: %s\n", k, truncateRunes(string(v), 200))
	}
	return t.Model
}

// writeVariables writes the Variables section.
func writeVariables(b *strings.Builder, vars []templates.Variable) {
	b.WriteString("\n## Variables\n")
	if len(vars) == 0 {
		b.WriteString("(none)\n")
	}
	for _, v := range vars {
		req := "optional"
		if v.Required {
			req = "required"
		}
		if v.Type != templates.TypeString && v.Type != "" {
			form, _ := templates.TypeForm(v.Type)
			req = v.Type + ": " + form + ", " + req
		}
		fmt.Fprintf(b, "- `%s` (%s): %s", v.Name, req, v.Description)
		if v.Default != nil {
			fmt.Fprintf(b, " Default: %q.", truncateRunes(*v.Default, 80))
		}
		if len(v.Enum) > 0 {
			fmt.Fprintf(b, " One of: %s.", strings.Join(v.Enum, ", "))
		}
		if len(v.Examples) > 0 {
			fmt.Fprintf(b, " Examples: %s.", strings.Join(v.Examples, "; "))
		}
		b.WriteString("\n")
	}
}

// writeStructure writes the Sections section and, for a conversation, the
// Messages section, and returns both for structuredContent (turns nil
// when the template has no messages).
func writeStructure(b *strings.Builder, t *templates.Template) ([]sectionSummary, []map[string]any) {
	sections := []sectionSummary{}
	b.WriteString("\n## Sections (in order)\n")
	if len(t.Sections()) == 0 {
		b.WriteString("(none)\n")
	}
	for i, s := range t.Sections() {
		sections = append(sections, sectionSummary{Name: s.Name, Format: s.Format, Order: i + 1})
		fmt.Fprintf(b, "%d. %s", i+1, s.Name)
		if s.Format != "" {
			fmt.Fprintf(b, " (%s)", s.Format)
		}
		b.WriteString("\n")
	}
	// A conversation's turns: their roles tell a model what the rendered
	// result will be (a template of messages only has no sections).
	var turns []map[string]any
	if len(t.Messages) > 0 {
		b.WriteString("\n## Messages (in order, after the sections)\n")
		for i, s := range t.Turns() {
			turns = append(turns, map[string]any{"role": s.Name, "order": i + 1})
			fmt.Fprintf(b, "%d. %s\n", i+1, s.Name)
		}
	}
	return sections, turns
}

// writeSource writes the Source section and returns it for
// structuredContent.
func writeSource(b *strings.Builder, e *templates.Entry, info templates.SourceInfo) map[string]any {
	source := map[string]any{"kind": info.Kind, "location": info.Location, "path": e.Path}
	if info.Ref != "" {
		source["ref"] = info.Ref
	}
	if info.Revision != "" {
		source["revision"] = info.Revision
	}
	fmt.Fprintf(b, "\n## Source\n- %s\n- Path: %s\n", describe(info), e.Path)
	return source
}

// writeWarnings writes the Warnings section, when e has warnings, and
// returns them ([] for none).
func writeWarnings(b *strings.Builder, e *templates.Entry) []string {
	warnings := []string{}
	for _, w := range e.Warnings {
		warnings = append(warnings, w.String())
	}
	if len(warnings) > 0 {
		b.WriteString("\n## Warnings\n")
		for _, w := range warnings {
			fmt.Fprintf(b, "- %s\n", w)
		}
	}
	return warnings
}

// requiredExample is the arguments object of a render call that gives
// every required variable, its values left to fill ("...").
func requiredExample(t *templates.Template) []byte {
	example := map[string]string{}
	for _, v := range t.Variables {
		if v.Required {
			example[v.Name] = "..."
		}
	}
	b, _ := json.Marshal(example) // a map of strings always encodes
	return b
}
