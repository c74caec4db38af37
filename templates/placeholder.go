package templates

import (
	"strings"
)

// Placeholders are scanned by hand rather than with a regular expression:
// the scanner runs over every section of every template at load time, twice
// (to size the placeholder list exactly, then to fill it), and allocates
// nothing but that list.
//
// The grammar, from the seed's edge cases:
//
//	placeholder = "{{" {"{"} ws name ws "}}" {"}"}
//	name        = 1*( ALPHA / DIGIT / "_" )
//	ws          = *( " " / "\t" / "\r" / "\n" )
//
// With k opening and m closing braces, the placeholder takes min(k, m) of
// each, the innermost ones; the rest stay literal. So "{{{name}}}" is
// replaced whole, while in a JSON section `{"a": {{x}}}` the object's own
// closing brace survives. "{{}}" and "{{company-name}}" are not placeholders.

// Part is one piece of a compiled section: literal text, or a placeholder.
type Part struct {
	// Text is the literal text, or the placeholder exactly as written
	// ("{{ name }}"), so concatenating every Text gives back the content.
	Text string
	// Name is the placeholder's variable name; empty for literal text.
	Name string
	// Var is the index in Template.Variables of the variable Name refers to,
	// or -1 for literal text and for a placeholder the template defines no
	// variable for.
	Var int
}

// IsPlaceholder reports whether p is a placeholder rather than literal text.
func (p Part) IsPlaceholder() bool { return p.Name != "" }

// ExtractPlaceholders returns the names of the placeholders in content,
// each once, in order of first use; nil when there are none.
func ExtractPlaceholders(content string) []string {
	var names nameSet
	for i := 0; i < len(content); {
		_, end, nameStart, nameEnd, ok := nextPlaceholder(content, i)
		if !ok {
			break
		}
		names.add(content[nameStart:nameEnd])
		i = end
	}
	return names.list
}

// nameSet collects names once each, in first-use order. Templates use a
// handful of names, where a linear search beats a map; past a few dozen
// (a generated 100 KB template) it switches to a map to stay linear.
type nameSet struct {
	list  []string
	index map[string]struct{}
}

const nameSetLinear = 32

func (s *nameSet) has(name string) bool {
	if s.index != nil {
		_, ok := s.index[name]
		return ok
	}
	for _, x := range s.list {
		if x == name {
			return true
		}
	}
	return false
}

func (s *nameSet) add(name string) {
	if s.has(name) {
		return
	}
	s.list = append(s.list, name)
	switch {
	case s.index != nil:
		s.index[name] = struct{}{}
	case len(s.list) > nameSetLinear:
		s.index = make(map[string]struct{}, 2*len(s.list))
		for _, x := range s.list {
			s.index[x] = struct{}{}
		}
	}
}

// compileHoles finds content's placeholders. varIndex maps a variable name
// to its index in the template's variables. The slice has the exact length,
// as it is kept as long as the template.
func compileHoles(content string, varIndex func(string) int) []hole {
	n := 0
	for i := 0; ; n++ {
		_, end, _, _, ok := nextPlaceholder(content, i)
		if !ok {
			break
		}
		i = end
	}
	if n == 0 {
		return nil
	}
	holes := make([]hole, 0, n)
	for i := 0; len(holes) < n; {
		start, end, nameStart, nameEnd, _ := nextPlaceholder(content, i)
		holes = append(holes, hole{start: uint32(start), end: uint32(end), v: int32(varIndex(content[nameStart:nameEnd]))})
		i = end
	}
	return holes
}

// placeholderName returns the name of a placeholder as written
// ("{{ name }}"): the name's characters are neither braces nor white space,
// so trimming those from both ends leaves exactly the name.
func placeholderName(text string) string {
	i, j := 0, len(text)
	for i < j && (text[i] == '{' || isSpace(text[i])) {
		i++
	}
	for j > i && (text[j-1] == '}' || isSpace(text[j-1])) {
		j--
	}
	return text[i:j]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func literal(text string) Part { return Part{Text: text, Var: -1} }

// nextPlaceholder finds the first placeholder at or after from. start:end is
// the whole placeholder (the braces it takes included), nameStart:nameEnd its
// name.
func nextPlaceholder(s string, from int) (start, end, nameStart, nameEnd int, ok bool) {
	i := from
	for {
		j := indexBraces(s, i)
		if j < 0 {
			return 0, 0, 0, 0, false
		}
		// j starts a run of at least two '{'; a later start inside the same
		// run sees the same text after the run and fails the same way, so a
		// failed run is skipped whole.
		k := j
		for k < len(s) && s[k] == '{' {
			k++
		}
		open := k - j
		p := skipSpace(s, k)
		ns := p
		for p < len(s) && isNameByte(s[p]) {
			p++
		}
		ne := p
		if ne == ns {
			i = k
			continue
		}
		p = skipSpace(s, p)
		q := p
		for q < len(s) && s[q] == '}' {
			q++
		}
		closeRun := q - p
		if closeRun < 2 {
			i = k
			continue
		}
		n := min(open, closeRun)
		return k - n, p + n, ns, ne, true
	}
}

// indexBraces returns the index of the first "{{" at or after from, or -1.
func indexBraces(s string, from int) int {
	if from >= len(s) {
		return -1
	}
	j := strings.Index(s[from:], "{{")
	if j < 0 {
		return -1
	}
	return from + j
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isNameByte(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
