package templates

import (
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/mbleigh/raymond"
	"github.com/mbleigh/raymond/ast"
)

// Logic reports whether s has block or partial syntax, which the
// Handlebars engine renders (Execute) rather than its placeholders.
func (s Section) Logic() bool { return s.logic != nil }

// Execute renders a logic section. value gives each variable's value by
// name: a string, a bool, or a []string for a list (a number as the text
// it was given, so it renders as written). A name the template defines no
// variable for is asked too; its value is usually the placeholder as
// written. No value is ever expanded again.
//
// What it renders is measured before it is rendered, from the values: a
// section whose {{#each}} blocks would make it longer than limit bytes is
// refused with INVALID_ARGUMENT, and nothing is rendered.
func (s Section) Execute(value func(name string) any, limit int) (out string, err error) {
	l := s.logic
	if l == nil {
		return "", fault.New(fault.Internal, "section "+s.Name+" has no logic to execute", "", "")
	}
	if l.partials == nil {
		for _, r := range l.refs {
			if r.kind == refPartial {
				return "", &fault.Error{Code: fault.InvalidTemplate,
					What: fmt.Sprintf("section %s includes partial %q, but the template was not loaded from a library", s.Name, r.name),
					Why:  "partials are files of a library (partials/NAME.md), linked in when the library is loaded",
					How:  "render the template from its library (serve, render --templates DIR)"}
			}
		}
	}
	data := map[string]any{}
	collect := func(refs []logicRef) {
		for _, r := range refs {
			if r.kind == refPartial || r.name == "this" || strings.HasPrefix(r.name, "@") {
				continue
			}
			if _, ok := data[r.name]; !ok {
				data[r.name] = engineValue(value(r.name))
			}
		}
	}
	collect(l.refs)
	for _, p := range l.partials {
		collect(p.logic.refs)
	}
	m := measure{data: data, partials: l.partials, limit: limit}
	if n := m.size(l.prog, 0); n > limit {
		return "", &fault.Error{Code: fault.InvalidArgument,
			What:    fmt.Sprintf("section %s would render more than %d bytes with these arguments", s.Name, limit),
			Why:     "its {{#each}} blocks repeat their text for every item of a list, and the lists given make it longer than a prompt may be",
			How:     "pass fewer or shorter list items",
			Details: map[string]any{"section": s.Name, "limit": limit}}
	}
	// raymond turns its own errors into returned ones but lets a runtime
	// error through: one template must not take the server down.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fault.New(fault.Internal, fmt.Sprintf("section %s failed to render: %v", s.Name, r), "", "")
		}
	}()
	out, err = l.tpl.Exec(data)
	if err != nil {
		return "", fault.New(fault.Internal, fmt.Sprintf("section %s failed to render: %v", s.Name, err), "", "")
	}
	return out, nil
}

// engineValue is v as the engine takes it: strings as raymond's
// SafeString, which it never escapes (prompts are not HTML). Passing
// values rather than the engine's NoEscape option keeps the compiled
// template read-only: raymond writes that option into the shared syntax
// tree on every render.
func engineValue(v any) any {
	switch v := v.(type) {
	case string:
		return raymond.SafeString(v)
	case []string:
		out := make([]raymond.SafeString, len(v))
		for i, s := range v {
			out[i] = raymond.SafeString(s)
		}
		return out
	}
	return v
}

// measure bounds what a logic section renders, from the values it will
// be rendered with, counting up to limit+1 (past that the count no
// longer matters, and cannot overflow).
type measure struct {
	data     map[string]any
	partials map[string]*partial
	limit    int
}

func (m *measure) add(a, b int) int { return min(a+b, m.limit+1) }

func (m *measure) mul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (m.limit+1)/b {
		return m.limit + 1
	}
	return min(a*b, m.limit+1)
}

// size is an upper bound on what n renders to, item the longest item of
// the list the enclosing {{#each}} goes over. Standalone lines and "~"
// only remove white space; an indented partial adds its indent to each of
// its lines.
func (m *measure) size(n ast.Node, item int) int {
	switch n := n.(type) {
	case *ast.Program:
		if n == nil {
			return 0
		}
		total := 0
		for _, s := range n.Body {
			total = m.add(total, m.size(s, item))
		}
		return total
	case *ast.ContentStatement:
		return len(n.Value)
	case *ast.MustacheStatement:
		return m.value(n.Expression.Path, item)
	case *ast.BlockStatement:
		if n.Expression.HelperName() == "each" && len(n.Expression.Params) == 1 {
			items, _ := m.lookup(n.Expression.Params[0]).([]raymond.SafeString)
			if len(items) == 0 {
				return m.size(n.Inverse, item)
			}
			longest := 0
			for _, it := range items {
				longest = max(longest, len(it))
			}
			return m.mul(len(items), m.size(n.Program, longest))
		}
		return max(m.size(n.Program, item), m.size(n.Inverse, item))
	case *ast.PartialStatement:
		name, _ := ast.HelperNameStr(n.Name)
		p := m.partials[name]
		if p == nil || p.logic == nil {
			return 0
		}
		b := m.size(p.logic.prog, item)
		return m.add(b, m.mul(b+1, len(n.Indent)))
	}
	return 0
}

// maxDataLen bounds what @index, @first and @last render to: an int's
// digits, or "false".
const maxDataLen = len("-9223372036854775808")

// value bounds what a placeholder renders to.
func (m *measure) value(n ast.Node, item int) int {
	p, ok := n.(*ast.PathExpression)
	if !ok {
		return 0
	}
	if p.Data && len(p.Parts) == 1 {
		return maxDataLen // @index, @first, @last
	}
	if !p.Data && len(p.Parts) == 0 {
		return item // this
	}
	switch v := m.lookup(p).(type) {
	case raymond.SafeString:
		return len(v)
	case bool:
		return len("false")
	case []raymond.SafeString:
		total := 0
		for _, s := range v {
			total = m.add(total, len(s))
		}
		return total
	case nil:
		return 0
	default:
		return len(fmt.Sprint(v))
	}
}

// lookup is the value a path names: a variable, or @root.variable.
func (m *measure) lookup(n ast.Node) any {
	if e, ok := n.(*ast.Expression); ok {
		n = e.Path
	}
	p, ok := n.(*ast.PathExpression)
	if !ok || len(p.Parts) == 0 {
		return nil
	}
	name := p.Parts[len(p.Parts)-1]
	return m.data[name]
}
