package templates

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Match is how a template matches a search query.
type Match struct {
	// Score ranks the template among the others: higher is better, 0 is
	// no match.
	Score float64
	// Fields are the parts of the template the words matched, sorted:
	// category, content, description, name, tags, variables.
	Fields []string
	// Snippet is about 160 characters of a section or message around the
	// first word found there ("" when the words matched elsewhere only).
	Snippet string
}

// SearchWords splits a query into the words Rank looks for: lower case,
// separated by white space.
func SearchWords(query string) []string { return strings.Fields(strings.ToLower(query)) }

// Rank scores t for the query words (from SearchWords): every word must
// match somewhere, or the score is 0; matches in the name weigh most,
// then tags, description, category, the section and message text, and
// the variables. A Korean word that matches nothing as written is tried
// without its last syllables, down to two ("이메일을": "이메일"; "작성해줘":
// "작성"), so particles, endings and compounds do not hide a template;
// such a match weighs less. Rank only reads t.
func Rank(t *Template, words []string) Match {
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
			return Match{}
		}
		total += ws
	}
	fields := make([]string, 0, len(matched))
	for f := range matched {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	return Match{Score: total, Fields: fields, Snippet: snippet}
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
func wordScore(t *Template, w string, matched map[string]bool, snippet *string) float64 {
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
	for _, ss := range [2][]Section{t.Sections(), t.Turns()} {
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

// truncateRunes is s cut to n runes, with an ellipsis when it was longer.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
