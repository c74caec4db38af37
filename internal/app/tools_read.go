package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// readTools are the tools every server has. Their descriptions and
// schemas are in the tools folder (see toolFS).
func (a *App) readTools() []*tool {
	return []*tool{
		toolFromFiles("flowyprompt_list_templates", "List prompt templates", readOnly, a.listTemplates),
		toolFromFiles("flowyprompt_search_templates", "Search prompt templates", readOnly, a.searchTemplates),
		toolFromFiles("flowyprompt_get_template", "Get a template's definition", readOnly, a.getTemplate),
		toolFromFiles("flowyprompt_render_template", "Render a prompt template", readOnly, a.renderTemplate),
		toolFromFiles("flowyprompt_validate_template", "Validate a template", readOnly, a.validateTemplate),
		toolFromFiles("flowyprompt_template_history", "List a template's versions", &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true),
			DestructiveHint: boolPtr(false), IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(true)}, a.templateHistory),
		toolFromFiles("flowyprompt_refresh_templates", "Refresh the template library",
			&mcp.ToolAnnotations{ReadOnlyHint: boolPtr(true), IdempotentHint: boolPtr(true), OpenWorldHint: boolPtr(true)},
			a.refreshTemplates),
	}
}

type argSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
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
		s.Arguments = append(s.Arguments, argSummary{Name: v.Name, Description: truncateRunes(v.Description, listArgDescription),
			Required: v.Required, Default: def, Enum: v.Enum})
	}
	return s
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeSummary(b *strings.Builder, i int, s templateSummary) {
	fmt.Fprintf(b, "%d. **%s** (v%s)", i, s.Name, s.Version)
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
			if len(a.Enum) > 0 {
				p = strings.TrimSuffix(p, ")") + "; one of " + truncateRunes(strings.Join(a.Enum, ", "), listArgDefault) + ")"
			}
			parts = append(parts, p)
		}
		fmt.Fprintf(b, "   Arguments: %s\n", strings.Join(parts, ", "))
	}
}

// runeCount is utf8.RuneCountInString with a fast path for ASCII, eight
// bytes at a time: it counts every rendered prompt, and prompts are mostly
// ASCII.
func runeCount(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			break
		}
	}
	return i + utf8.RuneCountInString(s[i:])
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func (a *App) listTemplates(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Category, Tag, Cursor string
		UpdatedSince          string `json:"updated_since"`
		Limit                 int
		Counts                bool
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	const tool = "flowyprompt_list_templates"
	filters := []filter{{"category", &args.Category}, {"tag", &args.Tag}, {"updated_since", &args.UpdatedSince}}
	resumed, err := resume(tool, args.Cursor, filters, &args.Limit, 20)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(args.Category, args.Tag, args.UpdatedSince)
	if err != nil {
		return nil, err
	}
	cat := a.lib.Catalog()
	var matching []*templates.Entry
	for _, e := range cat.Templates() {
		if sel.admits(e.Template) {
			matching = append(matching, e)
		}
	}
	start := 0
	if resumed != nil {
		n := resumed.Offset
		if n >= len(matching) || matching[n].Template.Metadata.Name != resumed.Key {
			return nil, libraryChanged(tool)
		}
		start = n
	}
	var fc facetCounts
	used := 0 // characters of the page's entries and counts, text and JSON
	if args.Counts {
		fc = countFacets(matching)
		used = utf8.RuneCountInString(fc.text) + jsonSize(fc.structured)
	}
	var b strings.Builder
	items := []templateSummary{}
	truncated := false
	end := start
	for end < len(matching) && len(items) < args.Limit {
		s := summarize(matching[end].Template)
		var item strings.Builder
		writeSummary(&item, end+1, s)
		// Every page holds at least one template, so a cursor always moves.
		size := utf8.RuneCountInString(item.String()) + jsonSize(s)
		if len(items) > 0 && used+size > ResultBudget-listReserve {
			truncated = true
			break
		}
		used += size
		b.WriteString(item.String())
		items = append(items, s)
		end++
	}
	next, nextCall := "", ""
	if end < len(matching) {
		next, nextCall = nextPage(tool, end, matching[end].Template.Metadata.Name, filters, args.Limit)
	}
	var out strings.Builder
	filter := describeFilter(args.Category, args.Tag) + describeSince(args.UpdatedSince)
	suggestions := []string{}
	if len(items) == 0 {
		fmt.Fprintf(&out, "## Result\nNo templates%s.\n", filter)
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
				calls = append(calls, fmt.Sprintf("flowyprompt_list_templates(%s=%s)", f.name, quoteJSON(v)))
			}
		}
		if len(calls) > 0 {
			out.WriteString("\n## Did you mean\n")
			for _, c := range calls {
				fmt.Fprintf(&out, "- %s\n", c)
			}
		}
	} else {
		fmt.Fprintf(&out, "## Result\nListed %d of %d templates%s (%d–%d).\n\n## Templates\n%s", len(items), len(matching), filter, start+1, end, b.String())
	}
	out.WriteString(fc.text)
	note, staleData := staleNote(cat)
	fmt.Fprintf(&out, "\n## Metadata\n- Total matching: %d\n- Returned: %d\n- Truncated: %t\n", len(matching), len(items), truncated)
	if truncated {
		fmt.Fprintf(&out, "- The page stops at %d templates to stay within the result size budget; the Next page call below continues\n", len(items))
	}
	if next != "" {
		fmt.Fprintf(&out, "- More available: next_cursor %q\n", next)
	}
	fmt.Fprintf(&out, "- Source: %s\n%s", describe(cat.Info()), note)
	out.WriteString("\n## Next actions\n")
	if len(items) > 0 {
		fmt.Fprintf(&out, "- Render one: flowyprompt_render_template(name=%q, arguments={...})\n", items[0].Name)
		fmt.Fprintf(&out, "- See its arguments: flowyprompt_get_template(name=%q)\n", items[0].Name)
	} else {
		out.WriteString("- List everything: flowyprompt_list_templates()\n")
	}
	if next != "" {
		fmt.Fprintf(&out, "- Next page: %s\n", nextCall)
	}
	out.WriteString("- Search by keyword: flowyprompt_search_templates(query=\"...\")")
	structured := map[string]any{"templates": items, "total": len(matching), "returned": len(items), "truncated": truncated}
	if len(suggestions) > 0 {
		structured["suggestions"] = suggestions
	}
	if next != "" {
		structured["next_cursor"] = next
	}
	for k, v := range fc.structured {
		structured[k] = v
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: out.String(), structured: structured}, nil
}

// maxCounts is the most categories, and the most tags, counts=true lists:
// the most common, so the counts stay a small part of the result budget.
const maxCounts = 50

type facetCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// facetCounts is the list tool's counts=true part: its text sections and
// its structuredContent fields.
type facetCounts struct {
	text       string
	structured map[string]any
}

// countFacets counts the categories and tags of the matching templates,
// most common first (then by name), at most maxCounts of each.
func countFacets(matching []*templates.Entry) facetCounts {
	cats, tags := map[string]int{}, map[string]int{}
	for _, e := range matching {
		m := e.Template.Metadata
		if m.Category != "" {
			cats[m.Category]++
		}
		for _, t := range m.Tags {
			tags[t]++
		}
	}
	var b strings.Builder
	structured := map[string]any{}
	cut := false
	for _, f := range []struct {
		key, title string
		counts     map[string]int
	}{{"categories", "Categories", cats}, {"tags", "Tags", tags}} {
		list := make([]facetCount, 0, len(f.counts))
		for name, n := range f.counts {
			list = append(list, facetCount{name, n})
		}
		slices.SortFunc(list, func(a, b facetCount) int {
			if a.Count != b.Count {
				return b.Count - a.Count
			}
			return strings.Compare(a.Name, b.Name)
		})
		more := 0
		if len(list) > maxCounts {
			more, cut = len(list)-maxCounts, true
			list = list[:maxCounts]
		}
		structured[f.key] = list
		fmt.Fprintf(&b, "\n## %s (templates each)\n", f.title)
		if len(list) == 0 {
			b.WriteString("(none)\n")
			continue
		}
		parts := make([]string, len(list))
		for i, c := range list {
			parts[i] = fmt.Sprintf("%s (%d)", c.Name, c.Count)
		}
		b.WriteString(strings.Join(parts, ", "))
		if more > 0 {
			fmt.Fprintf(&b, ", and %d more %s with fewer templates", more, f.key)
		}
		b.WriteString("\n")
	}
	if cut {
		structured["counts_truncated"] = true
	}
	return facetCounts{text: b.String(), structured: structured}
}

// listReserve is the part of ResultBudget a list or search result keeps
// for its head, metadata and next actions.
const listReserve = 4000

func describeFilter(category, tag string) string {
	var parts []string
	if category != "" {
		parts = append(parts, fmt.Sprintf("category %q", category))
	}
	if tag != "" {
		parts = append(parts, fmt.Sprintf("tag %q", tag))
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}

// describeSince names the updated_since filter for a Result line.
func describeSince(since string) string {
	if since == "" {
		return ""
	}
	return fmt.Sprintf(", updated since %s", since)
}

func describe(info templates.SourceInfo) string {
	s := info.Kind
	if info.Location != "" {
		s += " " + info.Location
	}
	if info.Ref != "" {
		s += "@" + info.Ref
	}
	if info.Revision != "" {
		s += " (" + shortSHA(info.Revision) + ")"
	}
	return s
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

// libraryChanged refuses a cursor whose place now holds another template.
func libraryChanged(tool string) error {
	return &fault.Error{Code: fault.InvalidCursor, What: "the library changed since the previous page",
		Why:     "templates were added or removed before the cursor's place, so going on would skip or repeat some",
		How:     fmt.Sprintf("call %s again without cursor, with the same filters, to start over", tool),
		Details: map[string]any{"field": "cursor", "reason": "library_changed"}}
}

type searchMatch struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Score       float64  `json:"score"`
	Matched     []string `json:"matched"`
	Snippet     string   `json:"snippet,omitempty"`
}

// score ranks a template for the query words: every word must match
// somewhere; matches in the name weigh most, then tags, description,
// category and the section text. A Korean word that matches nothing as
// written is tried without its last syllables, down to two ("이메일을":
// "이메일"; "작성해줘": "작성"), so particles, endings and compounds do not
// hide a template; such a match weighs less.
func score(t *templates.Template, words []string) (float64, []string, string) {
	var total float64
	matched := map[string]bool{}
	snippet := ""
	for _, w := range words {
		var ws float64
		for i, form := range wordForms(w) {
			fields := map[string]bool{}
			snip := ""
			if ws = wordScore(t, form, fields, &snip); ws > 0 {
				if i > 0 {
					ws *= 0.7
				}
				for f := range fields {
					matched[f] = true
				}
				if snippet == "" {
					snippet = snip
				}
				break
			}
		}
		if ws == 0 {
			return 0, nil, ""
		}
		total += ws
	}
	fields := make([]string, 0, len(matched))
	for f := range matched {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	return total, fields, snippet
}

// wordForms is w, then, for a word ending in Hangul, w shortened by one
// syllable at a time down to two syllables.
func wordForms(w string) []string {
	forms := []string{w}
	r := []rune(w)
	for n := len(r) - 1; n >= 2 && isHangul(r[n]); n-- {
		forms = append(forms, string(r[:n]))
	}
	return forms
}

// isHangul reports whether r is a Hangul syllable.
func isHangul(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }

// wordScore scores one query word against t, noting the fields it matched
// and the first snippet.
func wordScore(t *templates.Template, w string, matched map[string]bool, snippet *string) float64 {
	name := strings.ToLower(t.Metadata.Name)
	desc := strings.ToLower(t.Metadata.Description)
	category := strings.ToLower(t.Metadata.Category)
	ws := 0.0
	if name == w {
		ws += 100
	}
	if strings.Contains(name, w) || strings.Contains(strings.ReplaceAll(name, "_", " "), w) {
		ws += 40
		matched["name"] = true
	}
	for _, tag := range t.Metadata.Tags {
		if strings.ToLower(tag) == w {
			ws += 25
			matched["tags"] = true
		} else if strings.Contains(strings.ToLower(tag), w) {
			ws += 10
			matched["tags"] = true
		}
	}
	if strings.Contains(desc, w) {
		ws += 15
		matched["description"] = true // shown whole: no snippet from it
	}
	if category != "" && strings.Contains(category, w) {
		ws += 8
		matched["category"] = true
	}
	// A conversation's messages are content too; an array, not a slice
	// joined from the two, so nothing is allocated per template and word.
	for _, ss := range [2][]templates.Section{t.Sections(), t.Turns()} {
		for _, s := range ss {
			if n := strings.Count(strings.ToLower(s.Content), w); n > 0 {
				ws += 3 + float64(min(n, 5))
				matched["content"] = true
				if *snippet == "" {
					*snippet = snippetAround(s.Content, w)
				}
			}
		}
	}
	for _, v := range t.Variables {
		if strings.Contains(strings.ToLower(v.Name), w) || strings.Contains(strings.ToLower(v.Description), w) {
			ws += 2
			matched["variables"] = true
		}
	}
	return ws
}

// snippetAround returns about 160 characters of text around the first
// case-insensitive occurrence of w, on rune boundaries.
func snippetAround(text, w string) string {
	runes := []rune(text)
	lower := []rune(strings.ToLower(text))
	wr := []rune(w)
	idx := -1
	for i := 0; i+len(wr) <= len(lower); i++ {
		if string(lower[i:i+len(wr)]) == w {
			idx = i
			break
		}
	}
	if idx < 0 || len(lower) != len(runes) {
		return truncateRunes(strings.Join(strings.Fields(text), " "), 160)
	}
	start := max(0, idx-60)
	end := min(len(runes), idx+len(wr)+100)
	s := strings.Join(strings.Fields(string(runes[start:end])), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(runes) {
		s += "…"
	}
	return s
}

func (a *App) searchTemplates(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Query, Tag, Category, Cursor string
		UpdatedSince                 string `json:"updated_since"`
		Limit                        int
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	const tool = "flowyprompt_search_templates"
	filters := []filter{{"query", &args.Query}, {"tag", &args.Tag}, {"category", &args.Category}, {"updated_since", &args.UpdatedSince}}
	resumed, err := resume(tool, args.Cursor, filters, &args.Limit, 10)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(args.Category, args.Tag, args.UpdatedSince)
	if err != nil {
		return nil, err
	}
	words := strings.Fields(strings.ToLower(args.Query))
	if len(words) == 0 {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: "the query is empty", Why: "it has no words to look for",
			How: `pass one or more words, e.g. query="commit message"`}
	}
	cat := a.lib.Catalog()
	var matches []searchMatch
	for _, e := range cat.Templates() {
		t := e.Template
		if !sel.admits(t) {
			continue
		}
		s, fields, snip := score(t, words)
		if s == 0 {
			continue
		}
		matches = append(matches, searchMatch{Name: t.Metadata.Name, Description: truncateRunes(t.Metadata.Description, listDescription),
			Tags: nonNilStrings(t.Metadata.Tags), Score: s, Matched: fields, Snippet: snip})
	}
	sort.SliceStable(matches, func(i, j int) bool { return matches[i].Score > matches[j].Score })
	total := len(matches)
	start := 0
	if resumed != nil {
		if n := resumed.Offset; n >= len(matches) || matches[n].Name != resumed.Key {
			return nil, libraryChanged(tool)
		}
		start = resumed.Offset
	}
	// The page ends at the limit, or earlier at a whole match when the
	// result would outgrow its budget (every page holds at least one).
	end, used, cut := start, 0, false
	for end < len(matches) && end-start < args.Limit {
		var line strings.Builder
		writeMatch(&line, end+1, matches[end])
		size := utf8.RuneCountInString(line.String()) + jsonSize(matches[end])
		if end > start && used+size > ResultBudget-listReserve {
			cut = true
			break
		}
		used += size
		end++
	}
	next, nextCall := "", ""
	if end < len(matches) {
		next, nextCall = nextPage(tool, end, matches[end].Name, filters, args.Limit)
	}
	matches = matches[start:end]
	truncated := next != ""
	var out strings.Builder
	note, staleData := staleNote(cat)
	suggestions := []string{}
	if len(matches) == 0 {
		fmt.Fprintf(&out, "## Result\nNo templates match %q%s.\n", args.Query, describeFilter(args.Category, args.Tag)+describeSince(args.UpdatedSince))
		if _, tags, _ := vocabulary(cat); args.Tag != "" && !slices.ContainsFunc(tags, func(t string) bool { return strings.EqualFold(t, args.Tag) }) {
			// No template has the tag: the tag is what to correct.
			if close := suggest.Close(args.Tag, tags, 3); len(close) > 0 {
				out.WriteString("\n## Did you mean\n")
				for _, t := range close {
					suggestions = append(suggestions, "tag "+t)
					fmt.Fprintf(&out, "- flowyprompt_search_templates(query=%s, tag=%s)\n", quoteJSON(args.Query), quoteJSON(t))
				}
			}
		} else if fixed, names := a.didYouMean(cat, words, args.Tag); fixed != "" {
			suggestions = append(append(suggestions, fixed), names...)
			fmt.Fprintf(&out, "\n## Did you mean\n- %q, which finds %s: flowyprompt_search_templates(query=%s)\n", fixed, strings.Join(names, ", "), quoteJSON(fixed))
		}
		out.WriteString("\n## Suggestions\n- Try fewer or shorter words\n- Check the spelling\n")
		if args.Category != "" || args.Tag != "" || args.UpdatedSince != "" {
			fmt.Fprintf(&out, "- Search without the filters: flowyprompt_search_templates(query=%s)\n", quoteJSON(args.Query))
		}
		out.WriteString("- List everything: flowyprompt_list_templates()\n")
		if sugg := cat.Suggest(args.Query, 3); len(sugg) > 0 {
			fmt.Fprintf(&out, "- Similar names: %s\n", strings.Join(sugg, ", "))
			for _, n := range sugg {
				if !slices.Contains(suggestions, n) {
					suggestions = append(suggestions, n)
				}
			}
		}
	} else {
		fmt.Fprintf(&out, "## Result\nFound %d template(s) matching %q%s", total, args.Query, describeFilter(args.Category, args.Tag)+describeSince(args.UpdatedSince))
		if start > 0 || next != "" {
			fmt.Fprintf(&out, "; these are %d–%d", start+1, end)
		}
		out.WriteString(".\n\n## Matches\n")
		for i, m := range matches {
			writeMatch(&out, start+i+1, m)
		}
		fmt.Fprintf(&out, "\n## Metadata\n- Total matches: %d\n- Returned: %d\n- Truncated: %t\n", total, len(matches), truncated)
		if cut {
			fmt.Fprintf(&out, "- The page stops at %d matches to stay within the result size budget; the Next page call below continues\n", len(matches))
		}
		if next != "" {
			fmt.Fprintf(&out, "- More available: next_cursor %q\n", next)
		}
		out.WriteString(note)
		fmt.Fprintf(&out, "\n## Next actions\n- Render the best match: flowyprompt_render_template(name=%q, arguments={...})\n- See its arguments: flowyprompt_get_template(name=%q)", matches[0].Name, matches[0].Name)
		if next != "" {
			fmt.Fprintf(&out, "\n- Next page: %s", nextCall)
		}
	}
	if matches == nil {
		matches = []searchMatch{}
	}
	structured := map[string]any{"query": args.Query, "matches": matches, "total": total, "returned": len(matches), "truncated": truncated}
	if len(suggestions) > 0 {
		structured["suggestions"] = suggestions
	}
	if next != "" {
		structured["next_cursor"] = next
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: strings.TrimRight(out.String(), "\n"), structured: structured}, nil
}

// didYouMean corrects the query words that match nothing to the nearest
// words of the library's names, tags and categories, and returns the
// corrected query with the (up to three) templates it finds, or "".
func (a *App) didYouMean(cat *templates.Catalog, words []string, tag string) (string, []string) {
	_, _, vocab := vocabulary(cat)
	fixed := slices.Clone(words)
	changed := false
	for i, w := range words {
		if slices.Contains(vocab, w) {
			continue
		}
		if c := suggest.Close(w, vocab, 1); len(c) > 0 {
			fixed[i], changed = c[0], true
		}
	}
	if !changed {
		return "", nil
	}
	type hit struct {
		name  string
		score float64
	}
	var hits []hit
	for _, e := range cat.Templates() {
		t := e.Template
		if tag != "" && !hasTag(t.Metadata.Tags, tag) {
			continue
		}
		if s, _, _ := score(t, fixed); s > 0 {
			hits = append(hits, hit{t.Metadata.Name, s})
		}
	}
	if len(hits) == 0 {
		return "", nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	var names []string
	for i := 0; i < len(hits) && i < 3; i++ {
		names = append(names, hits[i].name)
	}
	return strings.Join(fixed, " "), names
}

func writeMatch(b *strings.Builder, i int, m searchMatch) {
	fmt.Fprintf(b, "%d. **%s** (score %.0f; matched %s)\n   %s\n", i, m.Name, m.Score, strings.Join(m.Matched, ", "), m.Description)
	if m.Snippet != "" {
		fmt.Fprintf(b, "   > %s\n", m.Snippet)
	}
}

func (a *App) lookup(name string) (*templates.Entry, *templates.Catalog, error) {
	cat := a.lib.Catalog()
	e, ok := cat.Lookup(name)
	if !ok {
		return nil, cat, templates.NotFound(name, cat)
	}
	return e, cat, nil
}

func (a *App) getTemplate(ctx context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct{ Name, Version string }
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	e, cat, err := a.lookup(args.Name)
	if err != nil {
		return nil, err
	}
	var at *versionAt
	if args.Version != "" {
		if e, at, err = a.atVersion(ctx, e, args.Version); err != nil {
			return nil, err
		}
	}
	noteUsage(ctx, e, cat)
	// A template's descriptions can fill most of its file, and the result
	// carries them twice (text and structuredContent): within the budget,
	// they are shortened, and the result says so.
	var res *toolResult
	for _, limit := range []int{0, 2000, 500, 100} {
		res = describeTemplate(e, cat, limit)
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

func describeTemplate(e *templates.Entry, cat *templates.Catalog, limit int) *toolResult {
	t := e.Template
	info := cat.Info()
	m, vars := shortened(t, limit)
	type section struct {
		Name   string `json:"name"`
		Format string `json:"format,omitempty"`
		Order  int    `json:"order"`
	}
	sections := []section{}
	var b strings.Builder
	fmt.Fprintf(&b, "## Result\nTemplate **%s** v%s.\n\n## Metadata\n- Description: %s\n", m.Name, m.Version, m.Description)
	if m.Author != "" {
		fmt.Fprintf(&b, "- Author: %s\n", m.Author)
	}
	if m.Category != "" {
		fmt.Fprintf(&b, "- Category: %s\n", m.Category)
	}
	if len(m.Tags) > 0 {
		fmt.Fprintf(&b, "- Tags: %s\n", strings.Join(m.Tags, ", "))
	}
	if m.LastUpdated != "" {
		fmt.Fprintf(&b, "- Last updated: %s\n", m.LastUpdated)
	}
	b.WriteString("\n## Variables\n")
	if len(vars) == 0 {
		b.WriteString("(none)\n")
	}
	for _, v := range vars {
		req := "optional"
		if v.Required {
			req = "required"
		}
		fmt.Fprintf(&b, "- `%s` (%s): %s", v.Name, req, v.Description)
		if v.Default != nil {
			fmt.Fprintf(&b, " Default: %q.", truncateRunes(*v.Default, 80))
		}
		if len(v.Enum) > 0 {
			fmt.Fprintf(&b, " One of: %s.", strings.Join(v.Enum, ", "))
		}
		if len(v.Examples) > 0 {
			fmt.Fprintf(&b, " Examples: %s.", strings.Join(v.Examples, "; "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Sections (in order)\n")
	if len(t.Sections()) == 0 {
		b.WriteString("(none)\n")
	}
	for i, s := range t.Sections() {
		sections = append(sections, section{Name: s.Name, Format: s.Format, Order: i + 1})
		fmt.Fprintf(&b, "%d. %s", i+1, s.Name)
		if s.Format != "" {
			fmt.Fprintf(&b, " (%s)", s.Format)
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
			fmt.Fprintf(&b, "%d. %s\n", i+1, s.Name)
		}
	}
	source := map[string]any{"kind": info.Kind, "location": info.Location, "path": e.Path}
	if info.Ref != "" {
		source["ref"] = info.Ref
	}
	if info.Revision != "" {
		source["revision"] = info.Revision
	}
	fmt.Fprintf(&b, "\n## Source\n- %s\n- Path: %s\n", describe(info), e.Path)
	warnings := []string{}
	for _, w := range e.Warnings {
		warnings = append(warnings, w.String())
	}
	if len(warnings) > 0 {
		b.WriteString("\n## Warnings\n")
		for _, w := range warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	note, staleData := staleNote(cat)
	if limit > 0 {
		fmt.Fprintf(&b, "- ⚠️ Truncated: descriptions, defaults and examples are cut to %d characters to stay within the result size budget; "+
			"resources/read template://%s returns the whole file\n", limit, m.Name)
	}
	b.WriteString(note)
	example := map[string]string{}
	for _, v := range t.Variables {
		if v.Required {
			example[v.Name] = "..."
		}
	}
	exJSON, _ := json.Marshal(example)
	fmt.Fprintf(&b, "\n## Next actions\n- Render it: flowyprompt_render_template(name=%q, arguments=%s)", m.Name, exJSON)
	structured := map[string]any{"metadata": m, "variables": vars, "sections": sections, "source": source, "warnings": warnings}
	if turns != nil {
		structured["messages"] = turns
	}
	if limit > 0 {
		structured["truncated"] = true
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: b.String(), structured: structured}
}

func nonNilVars(v []templates.Variable) []templates.Variable {
	if v == nil {
		return []templates.Variable{}
	}
	return v
}

func (a *App) renderTemplate(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
		Version   string            `json:"version"`
	}
	if !renderArgsFrom(in.decoded, &args.Name, &args.Arguments, &args.Version) {
		if err := in.decode(&args); err != nil {
			return nil, err
		}
	}
	e, cat, err := a.lookup(args.Name)
	if err != nil {
		return nil, err
	}
	var at *versionAt
	if args.Version != "" {
		if e, at, err = a.atVersion(ctx, e, args.Version); err != nil {
			return nil, err
		}
	}
	t := e.Template
	unknown := render.Unknown(t, args.Arguments)
	if err := misspelt(t, unknown); err != nil {
		return nil, err
	}
	noteUsage(ctx, e, cat)
	text, conv, err := renderText(t, args.Arguments)
	if f := fault.As(err); f != nil && f.Code == fault.MissingRequiredVariable {
		// Ask the user for what is missing when the client can show a form.
		missing, _ := f.Details["missing"].([]string)
		merged, askErr := a.askForMissing(ctx, r, t, args.Arguments, missing, in.retry)
		switch {
		case askErr != nil:
			return nil, askErr
		case merged != nil:
			args.Arguments = merged
			text, conv, err = renderText(t, merged)
		}
	}
	if err != nil {
		return nil, err
	}
	a.remember(r, t, args.Arguments)
	used := map[string]string{}
	defaults := []string{}
	for _, v := range t.Variables {
		if val, ok := args.Arguments[v.Name]; ok && val != "" {
			used[v.Name] = truncateRunes(val, echoBudget) // an echo, not the input again: the prompt has it
		} else if v.Default != nil {
			defaults = append(defaults, v.Name)
		}
	}
	unknown = nonNilStrings(unknown)
	for i, u := range unknown {
		unknown[i] = truncateRunes(u, echoBudget)
	}
	note, extra := staleNote(cat)
	if at != nil {
		if extra == nil {
			extra = map[string]any{}
		}
		extra["at"] = at
		note = "- " + describeAt(at) + "\n" + note
	}
	// A result never exceeds the budget (TOOLS.md): a longer prompt is cut
	// at a line, and says where to get it whole. Bytes bound characters
	// from above, so most prompts are never counted. A conversation is
	// carried three times (the report, structuredContent's text and its
	// messages), so it has a third of the room rather than half; its
	// messages are cut, and the transcript written again from what is left.
	budget := promptBudget
	if conv != nil {
		budget = conversationBudget
	}
	if total := len(text); total > budget && runeCount(text) > budget {
		total = runeCount(text)
		if conv != nil {
			conv = cutConversation(conv, budget)
			text = render.Transcript(conv)
		} else {
			text = cutPrompt(text, budget)
		}
		note = fmt.Sprintf("- ⚠️ Truncated: the prompt has %d characters, more than a tool result carries; these are the first %d. "+
			"Get it whole with prompts/get %s and the same arguments, or with `flowyprompt render %s`\n",
			total, runeCount(text), t.Metadata.Name, t.Metadata.Name) + note
		if extra == nil {
			extra = map[string]any{}
		}
		extra["truncated"], extra["total_characters"] = true, total
	}
	var attached []mcp.ResourceContents
	if len(t.Resources) > 0 {
		var listed []map[string]any
		attached, listed, note = a.attachWithin(ctx, cat, t, runeCount(text)+len(note), note)
		if extra == nil {
			extra = map[string]any{}
		}
		extra["resources"] = listed
	}
	report := renderReport(t, text, len(conv), len(used), defaults, unknown, note)
	if extra != nil {
		structured := map[string]any{"name": t.Metadata.Name, "text": text, "arguments_used": used, "defaults_applied": defaults, "unknown_arguments": unknown}
		if conv != nil {
			structured["messages"] = conv
		}
		for k, v := range extra {
			structured[k] = v
		}
		return &toolResult{text: report, structured: structured, resources: attached}, nil
	}
	return &toolResult{text: report,
		structured: (&rendered{Name: t.Metadata.Name, Text: text, Messages: conv, ArgumentsUsed: used, DefaultsApplied: defaults, UnknownArguments: unknown}).json()}, nil
}

// misspelt refuses the arguments, among unknown (those that name no
// variable of t), that look like one of its variables ("langauge" for
// language): rendering without the value the call meant to give would
// quietly use the default, or ask for it. An argument like no variable is
// only named in the result, as the CLI's render warns of it.
func misspelt(t *templates.Template, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	names := make([]string, len(t.Variables))
	for i, v := range t.Variables {
		names[i] = v.Name
	}
	var what, renames, suggestions []string
	for _, u := range unknown {
		c := suggest.Close(u, names, 1)
		if len(c) == 0 {
			continue
		}
		u = truncateRunes(u, echoBudget)
		what = append(what, fmt.Sprintf("%s (did you mean %q?)", u, c[0]))
		renames = append(renames, fmt.Sprintf("%s to %s", quoteJSON(u), quoteJSON(c[0])))
		suggestions = append(suggestions, c[0])
	}
	if len(what) == 0 {
		return nil
	}
	return &fault.Error{Code: fault.InvalidArgument,
		What:        fmt.Sprintf("template %s has no variable %s", t.Metadata.Name, strings.Join(what, ", ")),
		Why:         "arguments are named after the template's variables, which are " + truncateRunes(strings.Join(names, ", "), listDescription),
		How:         fmt.Sprintf("rename %s in arguments and call flowyprompt_render_template again", strings.Join(renames, ", ")),
		Suggestions: suggestions,
		Details:     map[string]any{"field": "arguments", "variables": names}}
}

// renderText renders t with args for the render tool: the prompt text, or
// for a conversation template its messages and their transcript.
func renderText(t *templates.Template, args map[string]string) (string, []render.Message, error) {
	if len(t.Messages) == 0 {
		text, err := render.Prompt(t, args)
		return text, nil, err
	}
	conv, err := render.Conversation(t, args)
	if err != nil {
		return "", nil, err
	}
	return render.Transcript(conv), conv, nil
}

// cutConversation returns the messages that fit in max characters, the
// last of them cut (at a line, as cutPrompt cuts) when it does not fit
// whole. The headings between them are not counted: the report's margin
// holds them.
func cutConversation(conv []render.Message, max int) []render.Message {
	out := make([]render.Message, 0, len(conv))
	for _, m := range conv {
		n := runeCount(m.Text)
		if n <= max {
			out = append(out, m)
			max -= n
			continue
		}
		if max > 0 {
			out = append(out, render.Message{Role: m.Role, Text: cutPrompt(m.Text, max)})
		}
		break
	}
	return out
}

// attachWithin reads t's resources for the render tool and keeps those
// that fit in the result budget beside a prompt of used characters, in
// the order the template lists them. It returns them, their entries for
// structuredContent ({uri, mimeType, characters, included}), and note
// with a line naming what is attached and one for each resource left out.
func (a *App) attachWithin(ctx context.Context, cat *templates.Catalog, t *templates.Template, used int, note string) (
	[]mcp.ResourceContents, []map[string]any, string) {
	att := a.attachments(ctx, cat, t)
	// The report around the prompt and the notes take at most this much.
	room := ResultBudget - used - 2000 - 300*len(att)
	var kept []mcp.ResourceContents
	var names, left []string
	listed := make([]map[string]any, 0, len(att))
	for _, at := range att {
		if at.err != nil {
			msg := truncateRunes(at.err.Error(), 200)
			left = append(left, fmt.Sprintf("- ⚠️ Not attached: %s cannot be read (%s); the prompt refers to it, so work without it and say so\n", at.uri, msg))
			listed = append(listed, map[string]any{"uri": at.uri, "included": false, "error": msg})
			continue
		}
		n := at.size()
		fits := n <= room
		if fits {
			room -= n
			kept = append(kept, at.contents)
			names = append(names, at.uri)
		} else {
			left = append(left, fmt.Sprintf("- ⚠️ Not attached: %s (%d characters) does not fit in this result; "+
				"read it with resources/read %s, or get the prompt with prompts/get %s\n", at.uri, n, at.uri, t.Metadata.Name))
		}
		listed = append(listed, map[string]any{"uri": at.uri, "mimeType": at.contents.MimeType, "characters": n, "included": fits})
	}
	if len(names) > 0 {
		note = "- Attached resources (after this text): " + strings.Join(names, ", ") + "\n" + note
	}
	return kept, listed, note + strings.Join(left, "")
}

// promptBudget is the most of a rendered prompt the render tool returns:
// the prompt is in the text and in structuredContent, and ResultBudget
// counts both, with room for the report around it.
const promptBudget = (ResultBudget - 10_000) / 2

// conversationBudget is promptBudget for a conversation, which the render
// tool's result carries three times: as the report's transcript, and in
// structuredContent as text and as messages.
const conversationBudget = (ResultBudget - 10_000) / 3

// echoBudget is the most characters of an argument the render tool echoes
// back in arguments_used (and of a name in unknown_arguments).
const echoBudget = 200

// cutPrompt returns the first max characters of text, ending at a line
// break when one falls in the last tenth of them.
func cutPrompt(text string, max int) string {
	n := 0
	for i := range text {
		if n == max {
			text = text[:i]
			break
		}
		n++
	}
	if nl := strings.LastIndexByte(text, '\n'); nl > len(text)-len(text)/10 {
		text = text[:nl]
	}
	return text
}

// renderReport builds the render tool's report: the prompt between a
// head and a tail. Built by hand, not with fmt: this is the hot tool.
// A conversation (messages > 0) is introduced as one: its transcript is
// not a single request.
func renderReport(t *templates.Template, text string, messages, used int, defaults, unknown []string, note string) string {
	var b strings.Builder
	b.Grow(len(text) + len(note) + 512)
	if messages > 0 {
		b.WriteString("## Result\nRendered conversation template ")
	} else {
		b.WriteString("## Result\nRendered template ")
	}
	b.WriteString(t.Metadata.Name)
	b.WriteString(" v")
	b.WriteString(t.Metadata.Version)
	b.WriteString(" (")
	if messages > 0 {
		b.WriteString(strconv.Itoa(messages))
		b.WriteString(" messages, ")
	}
	b.WriteString(strconv.Itoa(runeCount(text)))
	if messages > 0 {
		b.WriteString(" characters). Use the conversation below: its messages in order, each under a heading naming its role " +
			"(User or Assistant); structuredContent.messages has them one by one.\n\n<<<PROMPT\n")
	} else {
		b.WriteString(" characters). Use the prompt below as the user's request.\n\n<<<PROMPT\n")
	}
	b.WriteString(text)
	b.WriteString("\nPROMPT>>>\n\n## Metadata\n- Arguments used: ")
	b.WriteString(strconv.Itoa(used))
	b.WriteByte('\n')
	if len(defaults) > 0 {
		b.WriteString("- Defaults applied: ")
		b.WriteString(strings.Join(defaults, ", "))
		b.WriteByte('\n')
	}
	if len(unknown) > 0 {
		b.WriteString("- ⚠️ Ignored arguments that name no variable: ")
		b.WriteString(strings.Join(unknown, ", "))
		b.WriteByte('\n')
	}
	b.WriteString(note)
	// The tail always holds "- Arguments used", so trimming it trims the
	// whole report.
	return strings.TrimRight(b.String(), "\n")
}

// rendered is the render tool's structuredContent.
type rendered struct {
	ArgumentsUsed   map[string]string
	DefaultsApplied []string
	// Messages are a conversation template's; nil for others, and then
	// left out.
	Messages         []render.Message
	Name             string
	Text             string
	UnknownArguments []string
}

// json encodes r as the map of the other form of the render tool's
// structuredContent would be encoded (keys sorted, no HTML escaping), in
// one buffer with the strings escaped by jsonstr: the render tool is the
// hot tool, its payload is mostly one long string, and encoding/json's
// reflection and escaper took half its time.
func (r *rendered) json() json.RawMessage {
	n := len(r.Text)
	if r.Messages != nil {
		n *= 2 // the messages hold the transcript's text again
	}
	b := make([]byte, 0, n+n/8+256)
	b = append(b, `{"arguments_used":{`...)
	keys := make([]string, 0, len(r.ArgumentsUsed))
	for k := range r.ArgumentsUsed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k)
		b = append(b, ':')
		b = jsonstr.Append(b, r.ArgumentsUsed[k])
	}
	b = append(b, `},"defaults_applied":`...)
	b = appendStrings(b, r.DefaultsApplied)
	if r.Messages != nil {
		b = append(b, `,"messages":[`...)
		for i, m := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonstr.Append(b, m.Role)
			b = append(b, `,"text":`...)
			b = jsonstr.Append(b, m.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"name":`...)
	b = jsonstr.Append(b, r.Name)
	b = append(b, `,"text":`...)
	b = jsonstr.Append(b, r.Text)
	b = append(b, `,"unknown_arguments":`...)
	b = appendStrings(b, r.UnknownArguments)
	return append(b, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, s)
	}
	return append(dst, ']')
}

func (a *App) validateTemplate(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Template string `json:"template"`
		FileName string `json:"file_name"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	rep := templates.Validate([]byte(args.Template), args.FileName, a.opts.MaxFileSize)
	var b strings.Builder
	if rep.Valid {
		fmt.Fprintf(&b, "## Result\nValid template %s.\n", rep.Name)
	} else {
		fmt.Fprintf(&b, "## Result\nInvalid template (%s): %d error(s).\n\n## Errors\n", rep.Code, len(rep.Errors))
		for _, p := range rep.Errors {
			fmt.Fprintf(&b, "- %s: %s\n", pointerOrRoot(p.Pointer), p.Message)
		}
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\n## Warnings\n")
		for _, w := range rep.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	b.WriteString("\n## Next actions\n")
	if rep.Valid {
		b.WriteString("- Save it to the template folder or repository (flowyprompt_save_template when enabled)\n")
	} else {
		b.WriteString("- Fix each error at its JSON pointer and validate again\n- See a valid example: flowyprompt_get_template(name=\"Code_Review\")\n")
	}
	return &toolResult{text: strings.TrimRight(b.String(), "\n"), structured: rep}, nil
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(document)"
	}
	return p
}

func (a *App) refreshTemplates(ctx context.Context, r *mcp.Request, _ toolArgs) (*toolResult, error) {
	r.Progress(0, 2, "refreshing the template library")
	ch, err := a.lib.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	r.Progress(1, 2, "refreshed")
	cat := a.lib.Catalog()
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
	return &toolResult{text: b.String(), structured: structured}, nil
}

// renderArgsFrom takes the render tool's arguments from the object the
// quick check decoded, when it did; it reports whether it could.
func renderArgsFrom(m map[string]any, name *string, values *map[string]string, version *string) bool {
	if m == nil {
		return false
	}
	n, ok := m["name"].(string)
	if !ok {
		return false
	}
	*name = n
	if v, present := m["version"]; present {
		if *version, ok = v.(string); !ok {
			return false
		}
	}
	raw, present := m["arguments"]
	if !present || raw == nil {
		return true
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return false
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		s, ok := v.(string)
		if !ok {
			return false
		}
		out[k] = s
	}
	*values = out
	return true
}

// selection is the filters the list and search tools share.
type selection struct {
	category, tag string
	since         time.Time // zero: any lastUpdated, or none
}

// newSelection reads the filters; an updated_since it cannot read is an
// error naming the forms it takes.
func newSelection(category, tag, updatedSince string) (selection, error) {
	sel := selection{category: category, tag: tag}
	if updatedSince != "" {
		var err error
		if sel.since, err = parseSince(updatedSince, time.Now()); err != nil {
			return selection{}, err
		}
	}
	return sel, nil
}

// admits reports whether t passes every filter.
func (s selection) admits(t *templates.Template) bool {
	m := t.Metadata
	return (s.category == "" || strings.EqualFold(m.Category, s.category)) &&
		(s.tag == "" || hasTag(m.Tags, s.tag)) && updatedSince(t, s.since)
}
