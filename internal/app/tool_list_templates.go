package app

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

type argSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type,omitempty"` // "" for a string
	Required    bool     `json:"required"`
	Default     *string  `json:"default,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

type templateSummary struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Version     string       `json:"version"`
	Category    string       `json:"category,omitempty"`
	LastUpdated string       `json:"lastUpdated,omitempty"`
	Tags        []string     `json:"tags"`
	Arguments   []argSummary `json:"arguments"`
}

// Lists show a template's description and its arguments' descriptions and
// defaults shortened to these many characters: a list entry is a pointer
// to the template (flowyprompt_get_template has it whole), and the result
// budget is shared by every entry.
const (
	listDescription    = 1000
	listArgDescription = 200
	listArgDefault     = 200
)

func summarize(t *templates.Template) templateSummary {
	s := templateSummary{Name: t.Metadata.Name, Description: truncateRunes(t.Metadata.Description, listDescription), Version: t.Metadata.Version,
		Category: t.Metadata.Category, LastUpdated: t.Metadata.LastUpdated, Tags: nonNilStrings(t.Metadata.Tags), Arguments: []argSummary{}}
	for _, v := range t.Variables {
		def := v.Default
		if def != nil && utf8.RuneCountInString(*def) > listArgDefault {
			d := truncateRunes(*def, listArgDefault)
			def = &d
		}
		typ := v.Type
		if typ == templates.TypeString {
			typ = ""
		}
		s.Arguments = append(s.Arguments, argSummary{Name: v.Name, Description: truncateRunes(v.Description, listArgDescription),
			Type: typ, Required: v.Required, Default: def, Enum: v.Enum})
	}
	return s
}

func writeSummary(b *strings.Builder, i int, s templateSummary) {
	fmt.Fprintf(b, "%d. **%s**", i, s.Name)
	if s.Version != "" {
		// A file of another format may give no version.
		fmt.Fprintf(b, " (v%s)", s.Version)
	}
	if s.Category != "" {
		fmt.Fprintf(b, " [%s]", s.Category)
	}
	if s.LastUpdated != "" {
		fmt.Fprintf(b, " updated %s", s.LastUpdated)
	}
	// A list entry is a pointer to the template, not the template: a
	// description as long as a file could be would crowd out the page.
	fmt.Fprintf(b, "\n   %s\n", truncateRunes(s.Description, listDescription))
	if len(s.Tags) > 0 {
		fmt.Fprintf(b, "   Tags: %s\n", strings.Join(s.Tags, ", "))
	}
	if len(s.Arguments) > 0 {
		parts := make([]string, 0, len(s.Arguments))
		for _, a := range s.Arguments {
			p := a.Name
			switch {
			case a.Required:
				p += " (required)"
			case a.Default != nil && *a.Default != "":
				p += fmt.Sprintf(" (default %q)", truncateRunes(*a.Default, 40))
			default:
				p += " (optional)"
			}
			if a.Type != "" {
				p = strings.Replace(p, " (", " ("+a.Type+", ", 1)
			}
			if len(a.Enum) > 0 {
				p = strings.TrimSuffix(p, ")") + "; one of " + truncateRunes(strings.Join(a.Enum, ", "), listArgDefault) + ")"
			}
			parts = append(parts, p)
		}
		fmt.Fprintf(b, "   Arguments: %s\n", strings.Join(parts, ", "))
	}
}

// listArgs are the list tool's arguments.
type listArgs struct {
	Category, Tag, Cursor string
	UpdatedSince          string `json:"updated_since"`
	Limit                 int
	Counts                bool
}

const listTool = "flowyprompt_list_templates"

// listPage is one page of the list tool: the entries on it and where it
// ends.
type listPage struct {
	items      []templateSummary
	text       string // the entries as the report lists them
	start, end int    // the page is matching[start:end]
	truncated  bool   // cut before the limit, to stay within the budget
	next       string // the cursor of the next page, "" on the last
	nextCall   string // the call that fetches it
}

// listTemplates is the list tool: the templates the filters admit, a page
// at a time, with their counts by category and tag when asked.
func (a *App) listTemplates(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args listArgs
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	filters := []filter{{"category", &args.Category}, {"tag", &args.Tag}, {"updated_since", &args.UpdatedSince}}
	resumed, err := resume(listTool, args.Cursor, filters, &args.Limit, 20)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(args.Category, args.Tag, args.UpdatedSince)
	if err != nil {
		return nil, err
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	matching := sel.entries(cat)
	start, err := startOf(listTool, resumed, matching, func(e *templates.Entry) string { return e.Template.Metadata.Name })
	if err != nil {
		return nil, err
	}
	var fc facetCounts
	used := 0 // characters of the page's entries and counts, text and JSON
	if args.Counts {
		fc = countFacets(matching)
		used = utf8.RuneCountInString(fc.text) + jsonSize(fc.structured)
	}
	page := fillListPage(matching, start, args.Limit, used)
	if page.end < len(matching) {
		page.next, page.nextCall = nextPage(listTool, page.end, matching[page.end].Template.Metadata.Name, filters, args.Limit)
	}
	var out strings.Builder
	suggestions := writeListHead(&out, cat, args, page, len(matching))
	out.WriteString(fc.text)
	note, staleData := staleNote(cat)
	writeListTail(&out, cat, page, len(matching), note)
	structured := map[string]any{"templates": page.items, "total": len(matching), "returned": len(page.items), "truncated": page.truncated}
	if len(suggestions) > 0 {
		structured["suggestions"] = suggestions
	}
	if page.next != "" {
		structured["next_cursor"] = page.next
	}
	for k, v := range fc.structured {
		structured[k] = v
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: out.String(), structured: structured, view: v}, nil
}

// fillListPage takes the entries of matching from start, up to limit of
// them, and fewer when the result would outgrow its budget with used
// characters already spent; a page holds at least one entry, so a cursor
// always moves.
func fillListPage(matching []*templates.Entry, start, limit, used int) listPage {
	var b strings.Builder
	p := listPage{items: []templateSummary{}, start: start, end: start}
	for p.end < len(matching) && len(p.items) < limit {
		s := summarize(matching[p.end].Template)
		var item strings.Builder
		writeSummary(&item, p.end+1, s)
		size := utf8.RuneCountInString(item.String()) + jsonSize(s)
		if len(p.items) > 0 && used+size > ResultBudget-listReserve {
			p.truncated = true
			break
		}
		used += size
		b.WriteString(item.String())
		p.items = append(p.items, s)
		p.end++
	}
	p.text = b.String()
	return p
}

// writeListHead writes the Result section: the page's entries, or, for
// none, the filter values close to those given ("did you mean"), which it
// returns.
func writeListHead(out *strings.Builder, cat *templates.Catalog, args listArgs, page listPage, total int) []string {
	filter := describeFilter(args.Category, args.Tag) + describeSince(args.UpdatedSince)
	suggestions := []string{}
	if len(page.items) > 0 {
		fmt.Fprintf(out, "## Result\nListed %d of %d templates%s (%d–%d).\n\n## Templates\n%s", len(page.items), total, filter, page.start+1, page.end, page.text)
		return suggestions
	}
	fmt.Fprintf(out, "## Result\nNo templates%s.\n", filter)
	categories, tags, _ := vocabulary(cat)
	var calls []string
	for _, f := range []struct {
		name, value string
		vocab       []string
	}{{"category", args.Category, categories}, {"tag", args.Tag, tags}} {
		if f.value == "" {
			continue
		}
		for _, v := range suggest.Close(f.value, f.vocab, 3) {
			suggestions = append(suggestions, f.name+" "+v)
			calls = append(calls, fmt.Sprintf("%s(%s=%s)", listTool, f.name, quoteJSON(v)))
		}
	}
	if len(calls) > 0 {
		out.WriteString("\n## Did you mean\n")
		for _, c := range calls {
			fmt.Fprintf(out, "- %s\n", c)
		}
	}
	return suggestions
}

// writeListTail writes the Metadata and Next actions sections.
func writeListTail(out *strings.Builder, cat *templates.Catalog, page listPage, total int, note string) {
	fmt.Fprintf(out, "\n## Metadata\n- Total matching: %d\n- Returned: %d\n- Truncated: %t\n", total, len(page.items), page.truncated)
	if page.truncated {
		fmt.Fprintf(out, "- The page stops at %d templates to stay within the result size budget; the Next page call below continues\n", len(page.items))
	}
	if page.next != "" {
		fmt.Fprintf(out, "- More available: next_cursor %q\n", page.next)
	}
	fmt.Fprintf(out, "- Source: %s\n%s", describe(cat.Info()), note)
	out.WriteString("\n## Next actions\n")
	if len(page.items) > 0 {
		fmt.Fprintf(out, "- Render one: flowyprompt_render_template(name=%q, arguments={...})\n", page.items[0].Name)
		fmt.Fprintf(out, "- See its arguments: flowyprompt_get_template(name=%q)\n", page.items[0].Name)
	} else {
		out.WriteString("- List everything: flowyprompt_list_templates()\n")
	}
	if page.next != "" {
		fmt.Fprintf(out, "- Next page: %s\n", page.nextCall)
	}
	out.WriteString("- Search by keyword: flowyprompt_search_templates(query=\"...\")")
}
