package templates

import (
	"fmt"
	"testing"
)

// TestVariableLookup: Variable finds every variable (the first of a
// repeated name) and nothing else, and a template with too many variables
// for a linear search keeps the index its sections were compiled with, so
// lookups on every request use it instead of searching.
func TestVariableLookup(t *testing.T) {
	named := func(n int) []Variable {
		vars := make([]Variable, n)
		for i := range vars {
			vars[i] = Variable{Name: fmt.Sprintf("v%d", i)}
		}
		return vars
	}
	tests := []struct {
		name     string
		vars     []Variable
		compile  bool              // as Parse does; a hand-built template is not compiled
		after    func(t *Template) // changes made after compiling
		wantKept bool              // the compiled sections keep an index
		lookups  map[string]int    // name → the index Variable must find, -1 for none
	}{
		{name: "a handful", vars: named(3), compile: true,
			lookups: map[string]int{"v0": 0, "v2": 2, "v3": -1, "": -1}},
		{name: "many", vars: named(nameSetLinear + 8), compile: true, wantKept: true,
			lookups: map[string]int{"v0": 0, "v39": 39, "v40": -1, "": -1}},
		{name: "many, one name twice", vars: append(named(nameSetLinear+8), Variable{Name: "v7"}), compile: true, wantKept: true,
			lookups: map[string]int{"v7": 7, "v39": 39}},
		{name: "many, built by hand", vars: named(nameSetLinear + 8),
			lookups: map[string]int{"v0": 0, "v39": 39, "v40": -1}},
		{name: "many, changed after compiling", vars: named(nameSetLinear + 8), compile: true, wantKept: true,
			after:   func(t *Template) { t.Variables = t.Variables[5:] },
			lookups: map[string]int{"v5": 0, "v39": 34, "v0": -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl := &Template{Variables: tt.vars, Results: []Result{{Name: "a", Content: "{{v0}} and {{v1}}"}, {Name: "b", Content: "{{v2}}"}}}
			if tt.compile {
				tpl.sections = compileSections(tpl)
			}
			if kept := len(tpl.sections) > 0 && tpl.sections[0].vars != nil; kept != tt.wantKept {
				t.Errorf("compiled index kept: %v, want %v", kept, tt.wantKept)
			}
			if tt.after != nil {
				tt.after(tpl)
			}
			for name, want := range tt.lookups {
				v, ok := tpl.Variable(name)
				switch {
				case want < 0 && ok:
					t.Errorf("Variable(%q) found %q, want none", name, v.Name)
				case want >= 0 && (!ok || v != &tpl.Variables[want]):
					t.Errorf("Variable(%q) = %p, %v; want variable %d", name, v, ok, want)
				}
			}
		})
	}
}
