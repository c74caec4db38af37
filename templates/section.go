package templates

import (
	"iter"
	"math"
	"slices"
	"strings"
)

// Section is one result section in rendering order, or one message of a
// conversation, compiled into parts. A message is a Section too, rather
// than a type of its own, so it is held as compactly and rendered by the
// same code: its Name is its role ("user" or "assistant") and its Format
// is "".
type Section struct {
	Name    string
	Format  string // "text", "markdown" or "json"; "" when the file gives none
	Content string
	// holes are Content's placeholders; the literal text between them is
	// implied. Every template of a library is held in memory, and as Part
	// values (two strings and an int, one for each placeholder and one for
	// the text before it) a placeholder-dense section took more than twice
	// the bytes of its text.
	holes []hole
	// vars maps the template's variable names to their indexes when it has
	// too many for a linear search; every section of the template shares
	// it. Template has no field of its own for it, and the sections are
	// the template's compiled form.
	vars map[string]int
	// logic is set for a section with block or partial syntax, which the
	// Handlebars engine renders (logic.go); holes is nil then.
	logic *logic
}

// hole is one placeholder of a section.
type hole struct {
	// start and end delimit the placeholder, braces included, in Content.
	start, end uint32
	// v is the index in Template.Variables of the variable it names, or -1.
	v int32
}

// Parts returns the section's content as literal and placeholder parts, in
// a new slice. Walking them with All allocates nothing.
func (s Section) Parts() []Part { return slices.Collect(s.All()) }

// All yields the section's content as literal and placeholder parts, in
// order: Parts without the slice, for rendering, which walks them on every
// request.
//
// A section with logic (Logic) is one literal part, its content: the
// engine renders it (Execute).
func (s Section) All() iter.Seq[Part] {
	return func(yield func(Part) bool) {
		if s.logic != nil {
			yield(literal(s.Content))
			return
		}
		lit := 0
		for _, h := range s.holes {
			if int(h.start) > lit && !yield(literal(s.Content[lit:h.start])) {
				return
			}
			text := s.Content[h.start:h.end]
			if !yield(Part{Text: text, Name: placeholderName(text), Var: int(h.v)}) {
				return
			}
			lit = int(h.end)
		}
		if lit < len(s.Content) {
			yield(literal(s.Content[lit:]))
		}
	}
}

// Sections returns the results sorted by order (ties and missing orders keep
// file order; a missing order counts as the array index), compiled once by
// Parse. The slice is shared: do not modify it. A Template built by hand
// rather than parsed is compiled on each call.
func (t *Template) Sections() []Section {
	if t.sections == nil && len(t.Results) > 0 {
		return compileSections(t)
	}
	return t.sections
}

// Turns returns the messages, compiled once by Parse, in file order; each
// Section's Name is the message's role. The slice is shared: do not modify
// it. A Template built by hand rather than parsed is compiled on each call.
func (t *Template) Turns() []Section {
	if t.turns == nil && len(t.Messages) > 0 {
		return compileTurns(t, nil)
	}
	return t.turns
}

// Variable returns the variable named name.
func (t *Template) Variable(name string) (*Variable, bool) {
	if i := t.variableIndex(name); i >= 0 {
		return &t.Variables[i], true
	}
	return nil, false
}

// Placeholders returns the placeholder names the sections and then the
// messages use, each once, in rendering order.
func (t *Template) Placeholders() []string {
	var names nameSet
	for _, ss := range [][]Section{t.Sections(), t.Turns()} {
		for _, s := range ss {
			for _, h := range s.holes {
				names.add(placeholderName(s.Content[h.start:h.end]))
			}
			if s.logic != nil {
				for _, r := range s.logic.refs {
					if r.kind != refPartial && r.name != "this" && !strings.HasPrefix(r.name, "@") {
						names.add(r.name)
					}
				}
			}
		}
	}
	return names.list
}

// variableIndex returns the index of the variable named name, or -1. It
// runs on every request (Variable, for each argument a client passes), so a
// parsed template with many variables looks the name up in the map its
// sections were compiled with; a handful is searched in a line, which is
// faster than hashing.
func (t *Template) variableIndex(name string) int {
	var vars map[string]int
	switch {
	case len(t.sections) > 0:
		vars = t.sections[0].vars
	case len(t.turns) > 0:
		vars = t.turns[0].vars
	}
	if vars != nil {
		i, ok := vars[name]
		switch {
		case !ok:
			return -1
		case i < len(t.Variables) && t.Variables[i].Name == name:
			return i
		}
		// Variables changed after the parse (they are not meant to), so the
		// map is stale: search them as they are rather than trust it.
	}
	return searchVariables(t.Variables, name)
}

// searchVariables is variableIndex's linear search: the first match wins.
func searchVariables(vars []Variable, name string) int {
	for i := range vars {
		if vars[i].Name == name {
			return i
		}
	}
	return -1
}

func compileSections(t *Template) []Section {
	type keyed struct {
		key int
		r   *Result
	}
	ks := make([]keyed, len(t.Results))
	for i := range t.Results {
		k := i
		if o := t.Results[i].Order; o != nil {
			k = *o
		}
		ks[i] = keyed{k, &t.Results[i]}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	m := variableMap(t.Variables)
	index := indexer(t.Variables, m)
	out := make([]Section, len(ks))
	for i, k := range ks {
		out[i] = compileSection(k.r.Name, k.r.Format, k.r.Content, index, m)
	}
	return out
}

// compileTurns compiles t's messages. sections are t's compiled results,
// whose variable map the messages share rather than build their own.
func compileTurns(t *Template, sections []Section) []Section {
	if len(t.Messages) == 0 {
		return nil
	}
	var m map[string]int
	if len(sections) > 0 {
		m = sections[0].vars
	} else {
		m = variableMap(t.Variables)
	}
	index := indexer(t.Variables, m)
	out := make([]Section, len(t.Messages))
	for i, msg := range t.Messages {
		out[i] = compileSection(msg.Role, "", msg.Content, index, m)
	}
	return out
}

// variableMap maps variable names to indexes when there are too many for a
// linear search, else it returns nil.
func variableMap(vars []Variable) map[string]int {
	if len(vars) <= nameSetLinear {
		return nil
	}
	m := make(map[string]int, len(vars))
	for i := len(vars) - 1; i >= 0; i-- {
		m[vars[i].Name] = i // the first wins, like searchVariables
	}
	return m
}

// indexer returns the lookup from a variable name to its index: in m when
// there is one, else by searching vars.
func indexer(vars []Variable, m map[string]int) func(string) int {
	if m == nil {
		return func(name string) int { return searchVariables(vars, name) }
	}
	return func(name string) int {
		if i, ok := m[name]; ok {
			return i
		}
		return -1
	}
}

func compileSection(name, format, content string, index func(string) int, m map[string]int) Section {
	if uint64(len(content)) > math.MaxUint32 {
		// Parse refuses such files (maxParsedSize); only a template
		// built by hand can get here.
		panic("templates: a section's content is over 4 GiB")
	}
	if hasLogic(content) {
		// Parse reported a section that does not compile; a template
		// built by hand keeps such a section's placeholders.
		if l, errs := compileLogic(content); len(errs) == 0 {
			return Section{Name: name, Format: format, Content: content, vars: m, logic: l}
		}
	}
	return Section{Name: name, Format: format, Content: content, holes: compileHoles(content, index), vars: m}
}
