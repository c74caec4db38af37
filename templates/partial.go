package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
)

// A partial is a piece of text templates share: the team's house style,
// an output format, safety notes. It is a file of the library,
// partials/NAME.md (in any folder), or dotprompt's _NAME.prompt, whose
// body (after its front matter) is the partial; a template includes it
// with {{> NAME}}. Partials are linked into the templates that use them
// when the catalog is built, so a missing partial, a cycle of partials or
// a nesting deeper than maxPartialDepth makes the template invalid then,
// never a surprise when it is rendered.

// partial is one partial file of a library.
type partial struct {
	name, path string
	digest     string // hex SHA-256 of the file
	logic      *logic // nil when err is set
	err        error  // the partial's own problems
}

// PartialName returns the name of the partial the library file at p
// holds (slash-separated, within its source): NAME for a
// partials/NAME.md or a _NAME.prompt, and ok false for any other file.
func PartialName(p string) (name string, ok bool) {
	base := path.Base(p)
	switch {
	case path.Base(path.Dir(p)) == "partials" && strings.HasSuffix(base, ".md"):
		name = strings.TrimSuffix(base, ".md")
	case strings.HasPrefix(base, "_") && strings.HasSuffix(base, ".prompt"):
		name = strings.TrimSuffix(strings.TrimPrefix(base, "_"), ".prompt")
	default:
		return "", false
	}
	return name, isPartialName(name)
}

// isPartialName reports whether s can name a partial: letters, digits,
// '_' and '-', as template names.
func isPartialName(s string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// partialBody is the text of a partial file: a .md file whole, a
// .prompt file without its front matter (the YAML between the first two
// "---" lines).
func partialBody(p string, data []byte) string {
	text := string(data)
	if !strings.HasSuffix(p, ".prompt") {
		return text
	}
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		rest, ok = strings.CutPrefix(text, "---\r\n")
	}
	if !ok {
		return text
	}
	for off := 0; off < len(rest); {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if strings.TrimRight(line, "\r") == "---" {
			if nl < 0 {
				return ""
			}
			return rest[off+nl+1:]
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return text
}

// compilePartial reads one partial file. Its body is always the engine's,
// even without block syntax: it is only ever rendered inside a section
// that is.
func compilePartial(f File, name string, maxSize int) *partial {
	sum := sha256.Sum256(f.Data)
	p := &partial{name: name, path: f.Path, digest: hex.EncodeToString(sum[:])}
	if len(f.Data) > maxSize {
		p.err = TooLarge(f.Path, int64(len(f.Data)), int64(maxSize))
		return p
	}
	body := partialBody(f.Path, f.Data)
	l, errs := compileLogic(body)
	if len(errs) > 0 {
		p.err = invalidPartial(f.Path, body, errs)
		return p
	}
	p.logic = l
	return p
}

func invalidPartial(file, body string, errs []logicError) error {
	problems := make([]Problem, 0, len(errs))
	for _, e := range errs {
		line, col := lineColumn(body, e.pos)
		problems = append(problems, Problem{Message: fmt.Sprintf("line %d, column %d: %s", line, col, e.msg)})
	}
	err := invalid(file, problems, nil)
	err.What = strings.Replace(err.What, "template file", "partial file", 1)
	err.How = "fix the partial at the lines and columns details.problems names; `flowyprompt validate` lists every problem"
	return err
}

// partialSet is a library's partials by name, with what linking needs to
// know of each: how deep its inclusions go, and the cycle it reaches.
type partialSet struct {
	byName map[string]*partial
	// height is how many partials deep a partial goes, itself counted;
	// deepest is that chain of names.
	height  map[string]int
	deepest map[string][]string
	// cycle is the cycle of inclusions a partial reaches, as names from
	// the first to the first again; nil when there is none.
	cycle map[string][]string
}

// newPartialSet measures the partials: a depth-first search that marks
// the partials on its path, so a cycle is found, not followed.
func newPartialSet(byName map[string]*partial) *partialSet {
	ps := &partialSet{byName: byName, height: map[string]int{}, deepest: map[string][]string{}, cycle: map[string][]string{}}
	onPath := map[string]int{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		if _, done := ps.height[name]; done {
			return
		}
		p := byName[name]
		onPath[name] = len(stack)
		stack = append(stack, name)
		height, deepest := 1, []string{name}
		var cycle []string
		if p != nil && p.logic != nil {
			for _, r := range p.logic.refs {
				if r.kind != refPartial {
					continue
				}
				if at, ok := onPath[r.name]; ok {
					if cycle == nil {
						cycle = append(slices.Clone(stack[at:]), r.name)
					}
					continue
				}
				visit(r.name)
				if c := ps.cycle[r.name]; c != nil && cycle == nil {
					cycle = c
				}
				if h := ps.height[r.name] + 1; h > height {
					height, deepest = h, append([]string{name}, ps.deepest[r.name]...)
				}
			}
		}
		stack = stack[:len(stack)-1]
		delete(onPath, name)
		ps.height[name], ps.deepest[name], ps.cycle[name] = height, deepest, cycle
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		visit(name)
	}
	return ps
}

// problem says what is wrong with including name from a template whose
// variables are vars, or "" when nothing is.
func (ps *partialSet) problem(name string, vars []Variable) string {
	p, ok := ps.byName[name]
	switch {
	case !ok:
		msg := fmt.Sprintf("the library has no partial %q: add partials/%s.md (or _%s.prompt)", name, name, name)
		names := slices.Sorted(maps.Keys(ps.byName))
		if c := suggest.Close(name, names, 1); len(c) > 0 {
			msg += fmt.Sprintf(", or did you mean %q?", c[0])
		}
		return msg
	case p.err != nil:
		return fmt.Sprintf("partial %q (%s) is invalid: %s", name, p.path, why(p.err))
	case ps.cycle[name] != nil:
		return fmt.Sprintf("partials include each other in a cycle (%s): remove one of those inclusions", strings.Join(ps.cycle[name], " → "))
	case ps.height[name] > maxPartialDepth:
		return fmt.Sprintf("partials nest %d levels deep (%s), more than %d: include fewer levels", ps.height[name],
			strings.Join(ps.deepest[name], " → "), maxPartialDepth)
	}
	// Every partial it reaches is valid: check each one's names against
	// the template's variables.
	for _, q := range ps.closure(name) {
		p := ps.byName[q]
		if p == nil {
			return fmt.Sprintf("partial %q includes %q, which the library does not have: add partials/%s.md (or _%s.prompt)", name, q, q, q)
		}
		if q != name && p.err != nil {
			return fmt.Sprintf("partial %q (%s), which %q includes, is invalid: %s", q, p.path, name, why(p.err))
		}
		if errs := checkRefs(p.logic.refs, vars); len(errs) > 0 {
			body := p.logic.source
			line, col := lineColumn(body, errs[0].pos)
			return fmt.Sprintf("in partial %q (%s), line %d, column %d: %s", q, p.path, line, col, errs[0].msg)
		}
	}
	return ""
}

// closure returns name and every partial it includes, directly or not,
// each once, name first. The partials must be free of cycles.
func (ps *partialSet) closure(name string) []string {
	seen := map[string]bool{name: true}
	out := []string{name}
	for i := 0; i < len(out); i++ {
		p := ps.byName[out[i]]
		if p == nil || p.logic == nil {
			continue
		}
		for _, r := range p.logic.refs {
			if r.kind == refPartial && !seen[r.name] {
				seen[r.name] = true
				out = append(out, r.name)
			}
		}
	}
	return out
}

// why is an error's reason without its subject, for a message about
// something else.
func why(err error) string {
	if f := fault.As(err); f != nil && f.Why != "" {
		return f.Why
	}
	return err.Error()
}

// link returns t with its logic sections' partials resolved against ps,
// the digest of the partials it uses ("" for none), or the problems that
// make it invalid. A template that includes no partial is returned as is.
func (ps *partialSet) link(t *Template) (*Template, string, []Problem) {
	var problems []Problem
	used := map[string]*partial{}
	check := func(s Section, pointer string) {
		if s.logic == nil {
			return
		}
		for _, r := range s.logic.refs {
			if r.kind != refPartial {
				continue
			}
			if msg := ps.problem(r.name, t.Variables); msg != "" {
				line, col := lineColumn(s.Content, r.pos)
				problems = append(problems, Problem{Pointer: pointer, Message: fmt.Sprintf("line %d, column %d: %s: %s", line, col, r.text, msg)})
				continue
			}
			for _, q := range ps.closure(r.name) {
				used[q] = ps.byName[q]
			}
		}
	}
	eachPointer(t, check)
	if len(problems) > 0 {
		return nil, "", sortProblems(problems)
	}
	if len(used) == 0 {
		return t, "", nil
	}
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(used)) {
		fmt.Fprintf(h, "%s\x00%s\n", name, used[name].digest)
	}
	cp := *t
	cp.sections = linkSections(t.sections, used)
	cp.turns = linkSections(t.turns, used)
	return &cp, hex.EncodeToString(h.Sum(nil)), nil
}

// eachPointer calls f with each compiled section of t and the JSON
// pointer of its content in the file.
func eachPointer(t *Template, f func(s Section, pointer string)) {
	for _, s := range t.sections {
		f(s, fmt.Sprintf("/results/%d/content", resultIndex(t, s)))
	}
	for i, s := range t.turns {
		f(s, fmt.Sprintf("/messages/%d/content", i))
	}
}

// resultIndex is the index in t.Results of the result s was compiled
// from: sections are sorted by order, pointers name the file's order.
func resultIndex(t *Template, s Section) int {
	for i := range t.Results {
		r := &t.Results[i]
		if r.Name == s.Name && r.Content == s.Content {
			return i
		}
	}
	return 0
}

// linkSections returns ss with the logic sections given the partials they
// may include; the others are shared.
func linkSections(ss []Section, used map[string]*partial) []Section {
	if ss == nil {
		return nil
	}
	out := slices.Clone(ss)
	for i := range out {
		l := out[i].logic
		if l == nil {
			continue
		}
		linked := *l
		linked.tpl = l.tpl.Clone()
		linked.partials = used
		for name, p := range used {
			linked.tpl.RegisterPartialTemplate(name, p.logic.tpl)
		}
		out[i].logic = &linked
	}
	return out
}

// Partials returns the names of the partials t's sections and messages
// include themselves ({{> NAME}}), each once, in order; nil when none.
func (t *Template) Partials() []string {
	var names nameSet
	for _, ss := range [][]Section{t.Sections(), t.Turns()} {
		for _, s := range ss {
			if s.logic == nil {
				continue
			}
			for _, r := range s.logic.refs {
				if r.kind == refPartial {
					names.add(r.name)
				}
			}
		}
	}
	return names.list
}
