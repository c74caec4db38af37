package app

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/templates"
)

// closeValues returns up to n values of vocab that look like what q may
// have meant (a typo, a shortening, another case), nearest first; q
// itself (in any case) is not suggested.
func closeValues(q string, vocab []string, n int) []string {
	lq := strings.ToLower(q)
	type scored struct {
		v string
		d int
	}
	var found []scored
	seen := map[string]bool{}
	for _, v := range vocab {
		lv := strings.ToLower(v)
		if lv == lq || seen[lv] {
			continue
		}
		if d, ok := near(lq, lv); ok {
			seen[lv] = true
			found = append(found, scored{v, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].d < found[j].d })
	out := []string{}
	for i := 0; i < len(found) && i < n; i++ {
		out = append(out, found[i].v)
	}
	return out
}

// near reports whether w is close to q (both lower case), and how close:
// within a few edits (a swap of two letters is one), or sharing a prefix
// of most of q ("engg" and "engineering").
func near(q, w string) (int, bool) {
	nq := utf8.RuneCountInString(q)
	if nq == 0 {
		return 0, false
	}
	limit := min(2, max(1, nq/3))
	if d := osa([]rune(q), []rune(w)); d <= limit {
		return d, true
	}
	p := commonPrefix(q, w)
	if p >= 3 && 3*p >= 2*nq {
		return 3 + nq - p, true
	}
	return 0, false
}

func commonPrefix(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[n] == rb[n] {
		n++
	}
	return n
}

// osa is the optimal string alignment distance: insertions, deletions,
// substitutions and swaps of neighbours each count one.
func osa(a, b []rune) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// vocabulary lists the catalog's categories, its tags, and the words of
// template and variable names, for suggestions.
func vocabulary(cat *templates.Catalog) (categories, tags, words []string) {
	split := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	for _, e := range cat.Templates() {
		m := e.Template.Metadata
		if m.Category != "" {
			categories = append(categories, m.Category)
			words = append(words, split(m.Category)...)
		}
		tags = append(tags, m.Tags...)
		for _, tag := range m.Tags {
			words = append(words, split(tag)...)
		}
		words = append(words, split(m.Name)...)
		for _, v := range e.Template.Variables {
			words = append(words, split(v.Name)...)
		}
	}
	for _, s := range []*[]string{&categories, &tags, &words} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return categories, tags, words
}
