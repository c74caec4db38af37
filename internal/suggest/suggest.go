// Package suggest finds what a mistyped word most likely meant, for the
// "did you mean" of error messages: template names, tags, categories,
// search words, variable names and JSON keys all go through one distance.
package suggest

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Distance is the optimal string alignment distance between a and b, in
// runes: an insertion, a deletion, a substitution or a swap of two
// neighbours each counts one. A distance of limit or more is returned as
// limit, so callers that only care about small distances can skip pairs
// whose lengths alone rule them out.
func Distance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= limit || -d >= limit {
		return limit
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], limit)
}

// Close returns up to n values of vocab that look like what q may have
// meant (a typo, a shortening, another case), nearest first; q itself, in
// any case, is not suggested.
func Close(q string, vocab []string, n int) []string {
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
// within a few edits, or sharing a prefix of most of q ("engg" and
// "engineering").
func near(q, w string) (int, bool) {
	nq := utf8.RuneCountInString(q)
	if nq == 0 {
		return 0, false
	}
	limit := min(2, max(1, nq/3))
	if d := Distance(q, w, limit+1); d <= limit {
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
