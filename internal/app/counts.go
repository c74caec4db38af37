// The list tool's counts=true: categories and tags, counted.

package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/templates"
)

// maxCounts is the most categories, and the most tags, counts=true lists:
// the most common, so the counts stay a small part of the result budget.
const maxCounts = 50

// facetCount is how many of the matching templates have one category or
// tag.
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
