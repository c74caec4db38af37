package templates

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// testProblems checks a template's tests against its variables: names
// unique, every argument naming a variable, and a typed variable's value
// fitting its type, so that a test fails for what the template renders,
// never for a slip in the test itself.
func testProblems(top map[string]any) []Problem {
	tests, _ := top["tests"].([]any)
	if len(tests) == 0 {
		return nil
	}
	vars := map[string]string{} // name → type
	var names []string
	list, _ := top["variables"].([]any)
	for _, v := range list {
		m, _ := v.(map[string]any)
		if n, ok := m["name"].(string); ok {
			typ, _ := m["type"].(string)
			vars[n] = typ
			names = append(names, n)
		}
	}
	var out []Problem
	first := map[string]int{}
	for i, t := range tests {
		m, ok := t.(map[string]any)
		if !ok {
			continue
		}
		ptr := "/tests/" + strconv.Itoa(i)
		if name, ok := m["name"].(string); ok {
			if j, dup := first[name]; dup {
				out = append(out, Problem{Pointer: ptr + "/name",
					Message: fmt.Sprintf("duplicate test name %q (first used at /tests/%d): each test of a template needs its own name", name, j)})
			} else {
				first[name] = i
			}
		}
		args, _ := m["arguments"].(map[string]any)
		for _, arg := range slices.Sorted(maps.Keys(args)) {
			at := ptr + "/arguments/" + escapePointer(arg)
			typ, ok := vars[arg]
			if !ok {
				msg := fmt.Sprintf("argument %q names no variable of the template", arg)
				if best := closest(arg, names); best != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", best)
				}
				if len(names) > 0 {
					msg += "; its variables are " + strings.Join(names, ", ")
				}
				out = append(out, Problem{Pointer: at, Message: msg})
				continue
			}
			text, ok := ValueText(args[arg])
			if !ok {
				continue // the schema reports it
			}
			if _, err := ParseTyped(typ, text); err != nil {
				form, example := TypeForm(typ)
				out = append(out, Problem{Pointer: at, Message: fmt.Sprintf("%q does not fit the variable's type %s (%v): write %s, e.g. %s",
					text, typ, err, form, example)})
			}
		}
	}
	return out
}

// testsFrom reads the tests of a document the schema accepted, their
// arguments in the string form values travel in.
func testsFrom(top map[string]any) []Test {
	list, _ := top["tests"].([]any)
	if len(list) == 0 {
		return nil
	}
	out := make([]Test, 0, len(list))
	for _, t := range list {
		m, _ := t.(map[string]any)
		tt := Test{Name: str(m, "name")}
		if args, ok := m["arguments"].(map[string]any); ok && len(args) > 0 {
			tt.Arguments = make(map[string]string, len(args))
			for k, v := range args {
				if s, ok := ValueText(v); ok {
					tt.Arguments[k] = s
				}
			}
		}
		if e, ok := m["expect"].(map[string]any); ok {
			tt.Expect.Contains = strs(e, "contains")
			tt.Expect.NotContains = strs(e, "notContains")
			if s, ok := e["equals"].(string); ok {
				tt.Expect.Equals = &s
			}
		}
		out = append(out, tt)
	}
	return out
}

// eachString calls f with a pointer to every string the test holds, in
// the same order each time (the arguments by name). A map's values cannot
// be pointed at: the arguments are rebuilt from what f leaves.
func (t *Test) eachString(f func(*string)) {
	f(&t.Name)
	if len(t.Arguments) > 0 {
		args := make(map[string]string, len(t.Arguments))
		for _, k := range slices.Sorted(maps.Keys(t.Arguments)) {
			v := t.Arguments[k]
			f(&k)
			f(&v)
			args[k] = v
		}
		t.Arguments = args
	}
	for i := range t.Expect.Contains {
		f(&t.Expect.Contains[i])
	}
	for i := range t.Expect.NotContains {
		f(&t.Expect.NotContains[i])
	}
	if t.Expect.Equals != nil {
		f(t.Expect.Equals)
	}
}
