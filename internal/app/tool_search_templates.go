package app

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// searchMatch is one template a search found, as its result lists it.
type searchMatch struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Score       float64  `json:"score"`
	Matched     []string `json:"matched"`
	Snippet     string   `json:"snippet,omitempty"`
}

// searchArgs are the search tool's arguments.
type searchArgs struct {
	Query, Tag, Category, Cursor string
	UpdatedSince                 string `json:"updated_since"`
	Limit                        int
}

const searchTool = "flowyprompt_search_templates"

// searchPage is one page of matches and where it sits among them all.
type searchPage struct {
	matches    []searchMatch // the page's
	start, end int           // the page is all[start:end]
	cut        bool          // cut before the limit, to stay within the budget
	next       string        // the cursor of the next page, "" on the last
	nextCall   string        // the call that fetches it
}

// searchTemplates is the search tool: the templates the filters admit
// that match every word of the query, best first (templates.Rank), a
// page at a time; "did you mean" when none does.
func (a *App) searchTemplates(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args searchArgs
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	filters := []filter{{"query", &args.Query}, {"tag", &args.Tag}, {"category", &args.Category}, {"updated_since", &args.UpdatedSince}}
	resumed, err := resume(searchTool, args.Cursor, filters, &args.Limit, 10)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(args.Category, args.Tag, args.UpdatedSince)
	if err != nil {
		return nil, err
	}
	words := templates.SearchWords(args.Query)
	if len(words) == 0 {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: "the query is empty", Why: "it has no words to look for",
			How: `pass one or more words, e.g. query="commit message"`}
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	all := rankedMatches(sel.entries(cat), words)
	start, err := startOf(searchTool, resumed, all, func(m searchMatch) string { return m.Name })
	if err != nil {
		return nil, err
	}
	page := fillSearchPage(all, start, args.Limit)
	if page.end < len(all) {
		page.next, page.nextCall = nextPage(searchTool, page.end, all[page.end].Name, filters, args.Limit)
	}
	truncated := page.next != ""
	var out strings.Builder
	note, staleData := staleNote(cat)
	suggestions := []string{}
	if len(page.matches) == 0 {
		suggestions = a.writeNoMatch(&out, cat, args, words)
	} else {
		writeMatches(&out, args, page, len(all), note)
	}
	structured := map[string]any{"query": args.Query, "matches": page.matches, "total": len(all), "returned": len(page.matches), "truncated": truncated}
	if len(suggestions) > 0 {
		structured["suggestions"] = suggestions
	}
	if page.next != "" {
		structured["next_cursor"] = page.next
	}
	for k, v := range staleData {
		structured[k] = v
	}
	return &toolResult{text: strings.TrimRight(out.String(), "\n"), structured: structured, view: v}, nil
}

// rankedMatches are the entries that match every word, best first (in
// the catalog's order among equals).
func rankedMatches(entries []*templates.Entry, words []string) []searchMatch {
	var matches []searchMatch
	for _, e := range entries {
		t := e.Template
		m := templates.Rank(t, words)
		if m.Score == 0 {
			continue
		}
		matches = append(matches, searchMatch{Name: t.Metadata.Name, Description: truncateRunes(t.Metadata.Description, listDescription),
			Tags: nonNilStrings(t.Metadata.Tags), Score: m.Score, Matched: m.Fields, Snippet: m.Snippet})
	}
	sort.SliceStable(matches, func(i, j int) bool { return matches[i].Score > matches[j].Score })
	return matches
}

// fillSearchPage takes the matches of all from start: up to limit, or
// fewer, ending at a whole match, when the result would outgrow its
// budget (every page holds at least one).
func fillSearchPage(all []searchMatch, start, limit int) searchPage {
	p := searchPage{start: start, end: start}
	used := 0
	for p.end < len(all) && p.end-start < limit {
		var line strings.Builder
		writeMatch(&line, p.end+1, all[p.end])
		size := utf8.RuneCountInString(line.String()) + jsonSize(all[p.end])
		if p.end > start && used+size > ResultBudget-listReserve {
			p.cut = true
			break
		}
		used += size
		p.end++
	}
	p.matches = all[start:p.end]
	if p.matches == nil {
		p.matches = []searchMatch{}
	}
	return p
}

// writeMatches writes the report of a page of matches.
func writeMatches(out *strings.Builder, args searchArgs, page searchPage, total int, note string) {
	fmt.Fprintf(out, "## Result\nFound %d template(s) matching %q%s", total, args.Query, describeFilter(args.Category, args.Tag)+describeSince(args.UpdatedSince))
	if page.start > 0 || page.next != "" {
		fmt.Fprintf(out, "; these are %d–%d", page.start+1, page.end)
	}
	out.WriteString(".\n\n## Matches\n")
	for i, m := range page.matches {
		writeMatch(out, page.start+i+1, m)
	}
	fmt.Fprintf(out, "\n## Metadata\n- Total matches: %d\n- Returned: %d\n- Truncated: %t\n", total, len(page.matches), page.next != "")
	if page.cut {
		fmt.Fprintf(out, "- The page stops at %d matches to stay within the result size budget; the Next page call below continues\n", len(page.matches))
	}
	if page.next != "" {
		fmt.Fprintf(out, "- More available: next_cursor %q\n", page.next)
	}
	out.WriteString(note)
	best := page.matches[0].Name
	fmt.Fprintf(out, "\n## Next actions\n- Render the best match: flowyprompt_render_template(name=%q, arguments={...})\n- See its arguments: flowyprompt_get_template(name=%q)", best, best)
	if page.next != "" {
		fmt.Fprintf(out, "\n- Next page: %s", page.nextCall)
	}
}

// writeNoMatch writes the report of a search that found nothing: what to
// correct (the tag, or the query's words, "did you mean"), and what else
// to try. It returns the suggestions.
func (a *App) writeNoMatch(out *strings.Builder, cat *templates.Catalog, args searchArgs, words []string) []string {
	suggestions := []string{}
	fmt.Fprintf(out, "## Result\nNo templates match %q%s.\n", args.Query, describeFilter(args.Category, args.Tag)+describeSince(args.UpdatedSince))
	if _, tags, _ := vocabulary(cat); args.Tag != "" && !slices.ContainsFunc(tags, func(t string) bool { return strings.EqualFold(t, args.Tag) }) {
		// No template has the tag: the tag is what to correct.
		if close := suggest.Close(args.Tag, tags, 3); len(close) > 0 {
			out.WriteString("\n## Did you mean\n")
			for _, t := range close {
				suggestions = append(suggestions, "tag "+t)
				fmt.Fprintf(out, "- flowyprompt_search_templates(query=%s, tag=%s)\n", quoteJSON(args.Query), quoteJSON(t))
			}
		}
	} else if fixed, names := a.didYouMean(cat, words, args.Tag); fixed != "" {
		suggestions = append(append(suggestions, fixed), names...)
		fmt.Fprintf(out, "\n## Did you mean\n- %q, which finds %s: flowyprompt_search_templates(query=%s)\n", fixed, strings.Join(names, ", "), quoteJSON(fixed))
	}
	out.WriteString("\n## Suggestions\n- Try fewer or shorter words\n- Check the spelling\n")
	if args.Category != "" || args.Tag != "" || args.UpdatedSince != "" {
		fmt.Fprintf(out, "- Search without the filters: flowyprompt_search_templates(query=%s)\n", quoteJSON(args.Query))
	}
	out.WriteString("- List everything: flowyprompt_list_templates()\n")
	if sugg := cat.Suggest(args.Query, 3); len(sugg) > 0 {
		fmt.Fprintf(out, "- Similar names: %s\n", strings.Join(sugg, ", "))
		for _, n := range sugg {
			if !slices.Contains(suggestions, n) {
				suggestions = append(suggestions, n)
			}
		}
	}
	return suggestions
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
		if m := templates.Rank(t, fixed); m.Score > 0 {
			hits = append(hits, hit{t.Metadata.Name, m.Score})
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
