package templates

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mbleigh/raymond/parser"
)

// logicTemplate is a template file with one result of content, and the
// variables vars (name → type; a name ending in "?" is optional).
func logicTemplate(t testing.TB, name, content string, vars map[string]string) []byte {
	t.Helper()
	vs := []map[string]any{}
	for _, n := range sortedKeys(vars) {
		vs = append(vs, map[string]any{"name": n, "type": vars[n], "description": "d"})
	}
	b, err := json.Marshal(map[string]any{
		"metadata":  map[string]any{"name": name, "description": "d", "version": "1.0.0"},
		"variables": vs,
		"results":   []map[string]any{{"name": "Intro", "content": "plain {{x}}"}, {"name": "Body", "content": content}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHasLogic: only block, else and partial syntax takes a section to
// the engine; every placeholder the seed knew stays on the compiled path.
func TestHasLogic(t *testing.T) {
	tests := []struct {
		content string
		want    bool
	}{
		{"{{x}} and {{{y}}} and {{ z }}", false},
		{`{"a": {{x}}}`, false},
		{"{{!-- a comment --}} {{&x}}", false},
		{"{{elsewhere}}", false},
		{"", false},
		{"{{#if x}}a{{/if}}", true},
		{"{{~#each x}}{{/each}}", true},
		{"{{> house_style}}", true},
		{"a {{else}} b", true},
		{"{{ else }}", true},
		{"{{^x}}{{/x}}", true},
		{"{{/if}}", true},
	}
	for _, tt := range tests {
		if got := hasLogic(tt.content); got != tt.want {
			t.Errorf("hasLogic(%q) = %v, want %v", tt.content, got, tt.want)
		}
	}
}

// TestLogicProblems: what Parse reports of a section with logic, at the
// section's JSON pointer with the line and column within the section.
func TestLogicProblems(t *testing.T) {
	vars := map[string]string{"x": "string", "flag": "boolean", "files": "array"}
	tests := []struct {
		name    string
		content string
		want    []string // the messages, after "line L, column C: "
	}{
		{"valid", "{{#if flag}}\n{{x}}\n{{else if x}}y{{else}}n{{/if}}{{#unless x}}u{{/unless}}" +
			"{{#each files}}{{@index}}{{this}}{{#if @first}}f{{/if}}{{@root.x}}{{else}}none{{/each}}{{> p}}", nil},
		{"unknown variable in if", "a\n  {{#if ghost}}b{{/if}}",
			[]string{`line 2, column 3: {{#if ghost}} names no variable: define "ghost" in variables, or correct the name`}},
		{"each over a string", "{{#each x}}{{this}}{{/each}}",
			[]string{`line 1, column 1: {{#each x}} goes over "x", which is not a list: give the variable "type": "array"`}},
		{"each over nothing", "{{#each ghost}}{{/each}}",
			[]string{`line 1, column 1: {{#each ghost}} names no variable: define "ghost" in variables, or correct the name`}},
		{"unclosed block", "one\ntwo {{#if x}}\nthree",
			[]string{"line 2, column 5: {{#if x}} is never closed: add {{/if}} where the block ends"}},
		{"unclosed inner block", "{{#each files}}\n{{#if @first}}x{{/each}}",
			[]string{"line 1, column 1: {{#each files}} is never closed: add {{/each}} where the block ends",
				"line 2, column 16: {{/each}} closes {{#if @first}} (line 2, column 1), which needs {{/if}} first",
				"line 2, column 1: {{#if @first}} is never closed: add {{/if}} where the block ends"}},
		{"stray close", "a{{/if}}", []string{"line 1, column 2: {{/if}} closes no block: remove it, or open the block with {{#if name}}"}},
		{"else outside a block", "a {{else}} b", []string{"line 1, column 3: {{else}} is outside any block: it belongs between {{#if name}} and {{/if}}"}},
		{"a helper", "{{#if x}}{{log x}}{{/if}}", []string{`line 1, column 10: {{log x}}: "log" is the name of a Handlebars helper`}},
		{"a helper's name", "{{#if x}}{{log}}{{/if}}", []string{`line 1, column 10: {{log}}: "log" is the name of a Handlebars helper`}},
		{"a helper's name in a block", "{{#if each}}{{/if}}", []string{"line 1, column 1: {{#if each}}: a block takes one variable"}},
		{"with", "{{#with x}}{{/with}}", []string{"line 1, column 1: {{#with x}} is not supported"}},
		{"a literal", "{{#if x}}{{\"<b>\"}}{{/if}}", []string{`line 1, column 10: {{"<b>"}} is not supported`}},
		{"a sub-expression", "{{#if (lookup x 1)}}{{/if}}", []string{"line 1, column 1: {{#if (lookup x 1)}}: a block takes one variable, as in {{#if name}}"}},
		{"block parameters", "{{#each files as |f|}}{{f}}{{/each}}",
			[]string{"line 1, column 1: {{#each files as |f|}}: block parameters (as |x|) are not supported"}},
		{"this outside a loop", "{{#if x}}{{this}}{{/if}}", []string{"line 1, column 10: {{this}} is only meaningful inside {{#each name}}"}},
		{"a variable inside a loop", "{{#each files}}{{x}}{{/each}}",
			[]string{`line 1, column 16: {{x}} is inside {{#each}}, where "x" would name a field of the item: write @root.x for the template's variable`}},
		{"a list as a value", "{{#if x}}{{files}}{{/if}}", []string{"line 1, column 10: {{files}} is a list: write {{#each files}}…{{this}}…{{/each}} to place its items"}},
		{"a partial inside a loop", "{{#each files}}{{> p}}{{/each}}", []string{"line 1, column 16: {{> p}} is inside {{#each}}"}},
		{"a partial with a context", "{{> p x}}", []string{"line 1, column 1: {{> p x}}: a partial is included by its name alone"}},
		{"an inverse section", "{{^x}}a{{/x}}", []string{"line 1, column 1: {{^x}} is not supported"}},
		{"a lexer error", "{{#if x}}{{x", []string{"line 1, column 10: {{x: Unclosed expression"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse(logicTemplate(t, "L", tt.content, vars), ParseOptions{})
			var got []string
			for _, p := range Problems(err) {
				if p.Pointer != "/results/1/content" {
					t.Errorf("problem at %q, want /results/1/content: %s", p.Pointer, p.Message)
				}
				got = append(got, p.Message)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d starting %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d:\n got %q\nwant %q…", i, got[i], tt.want[i])
				}
			}
			if err == nil && tt.want == nil && fmt.Sprint(err) != "<nil>" {
				t.Errorf("error %v", err)
			}
		})
	}
}

// TestLogicWarnings: a variable used only in a block is used; a plain
// placeholder without a variable in a logic section is a warning, as in
// a plain section.
func TestLogicWarnings(t *testing.T) {
	_, warns, err := Parse(logicTemplate(t, "W", "{{#if flag}}{{ghost}}{{/if}}", map[string]string{"x": "string", "flag": "boolean", "unused": "string"}), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.Kind+" "+w.Variable)
	}
	want := []string{WarnUndefinedVariable + " ghost", WarnUnusedVariable + " unused"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// partialFiles is a library of one template including partial a, and
// partials given as name → body.
func partialFiles(t testing.TB, partials map[string]string) []File {
	files := []File{{Path: "T.json", Data: logicTemplate(t, "T", "{{> a}}", map[string]string{"x": "string", "flag": "boolean"})}}
	for _, name := range sortedKeys(partials) {
		files = append(files, File{Path: "partials/" + name + ".md", Data: []byte(partials[name])})
	}
	return files
}

// chain is partials p1 → p2 → … → pn, each including the next, with a
// included as p1.
func chain(n int) map[string]string {
	m := map[string]string{"a": "{{> p1}}"}
	for i := 1; i <= n; i++ {
		m[fmt.Sprintf("p%d", i)] = fmt.Sprintf("level %d {{x}}", i)
		if i < n {
			m[fmt.Sprintf("p%d", i)] += fmt.Sprintf(" {{> p%d}}", i+1)
		}
	}
	return m
}

// TestPartialProblems: a missing partial, a cycle, a nesting deeper than
// eight and a partial naming no variable of the template make the
// template invalid when the library is built, at the pointer, line and
// column of the {{> name}} that leads there.
func TestPartialProblems(t *testing.T) {
	tests := []struct {
		name     string
		partials map[string]string
		want     string // the template's problem; "" when it is valid
		invalid  []string
	}{
		{"valid", map[string]string{"a": "{{#if flag}}{{> b}}{{/if}}", "b": "{{x}}"}, "", nil},
		{"missing", map[string]string{"b": "x"}, `line 1, column 1: {{> a}}: the library has no partial "a": add partials/a.md (or _a.prompt)`, nil},
		{"missing, a close name", map[string]string{"aa": "x"}, `line 1, column 1: {{> a}}: the library has no partial "a": add partials/a.md (or _a.prompt), or did you mean "aa"?`, nil},
		{"missing further down", map[string]string{"a": "{{> b}}"}, `line 1, column 1: {{> a}}: partial "a" includes "b"`, nil},
		{"a cycle", map[string]string{"a": "{{> b}}", "b": "{{> a}}"},
			"line 1, column 1: {{> a}}: partials include each other in a cycle (a → b → a): remove one of those inclusions",
			[]string{"partials/a.md", "partials/b.md"}},
		{"a partial including itself", map[string]string{"a": "x {{> a}}"},
			"line 1, column 1: {{> a}}: partials include each other in a cycle (a → a)", []string{"partials/a.md"}},
		{"depth 8", chain(7), "", nil},
		{"depth 9", chain(8), "line 1, column 1: {{> a}}: partials nest 9 levels deep (a → p1 → p2 → p3 → p4 → p5 → p6 → p7 → p8), more than 8", nil},
		{"an unknown variable in a partial", map[string]string{"a": "one\n{{#if ghost}}{{/if}}"},
			`line 1, column 1: {{> a}}: in partial "a" (partials/a.md), line 2, column 1: {{#if ghost}} names no variable`, nil},
		{"an invalid partial", map[string]string{"a": "{{#if x}}"},
			`line 1, column 1: {{> a}}: partial "a" (partials/a.md) is invalid: line 1, column 1: {{#if x}} is never closed`, []string{"partials/a.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(partialFiles(t, tt.partials), BuildOptions{})
			var got string
			var invalid []string
			for _, inv := range c.Invalid() {
				if inv.Path == "T.json" {
					ps := Problems(inv.Err)
					if len(ps) != 1 || ps[0].Pointer != "/results/1/content" {
						t.Fatalf("problems %v, want one at /results/1/content", ps)
					}
					got = ps[0].Message
					continue
				}
				invalid = append(invalid, inv.Path)
			}
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("template problem\n got %q\nwant %q…", got, tt.want)
			}
			if diff := cmp.Diff(tt.invalid, invalid); diff != "" {
				t.Errorf("invalid partial files (-want +got):\n%s", diff)
			}
			if _, ok := c.Lookup("T"); ok != (tt.want == "") {
				t.Errorf("T served: %v, want %v", ok, tt.want == "")
			}
		})
	}
}

// TestPartialFiles: which files are partials, and a dotprompt partial's
// body is what follows its front matter.
func TestPartialFiles(t *testing.T) {
	names := map[string]string{
		"partials/house_style.md": "house_style", "team/partials/a-b.md": "a-b", "_footer.prompt": "footer",
		"prompts/_safety.prompt": "safety", "house_style.md": "", "partials/x.json": "", "partials/bad name.md": "",
		"a.prompt": "", "partials/.hidden.md": "",
	}
	for p, want := range names {
		name, ok := PartialName(p)
		if ok != (want != "") || (ok && name != want) {
			t.Errorf("PartialName(%q) = %q, %v; want %q", p, name, ok, want)
		}
		// A partial is a library file; so is a template in any format
		// (a.prompt, partials/x.json).
		format, _ := FormatOf(p)
		if lib := IsLibraryFile(p); lib != ((want != "" || format != "") && !strings.Contains(p, "/.")) {
			t.Errorf("IsLibraryFile(%q) = %v", p, lib)
		}
	}
	bodies := []struct{ path, data, want string }{
		{"partials/a.md", "---\nnot front matter\n---\nbody", "---\nnot front matter\n---\nbody"},
		{"_a.prompt", "---\ninput:\n  schema: {}\n---\nHello {{x}}\n", "Hello {{x}}\n"},
		{"_a.prompt", "---\r\nmodel: m\r\n---\r\nbody", "body"},
		{"_a.prompt", "no front matter", "no front matter"},
	}
	for _, b := range bodies {
		if got := partialBody(b.path, []byte(b.data)); got != b.want {
			t.Errorf("partialBody(%q, %q) = %q, want %q", b.path, b.data, got, b.want)
		}
	}
}

// TestPartialRebuild: a change to a partial relinks the templates that
// include it, which Diff reports as changed; the others are shared.
func TestPartialRebuild(t *testing.T) {
	files := []File{
		{Path: "T.json", Data: logicTemplate(t, "T", "{{> a}}", map[string]string{"x": "string"})},
		{Path: "U.json", Data: logicTemplate(t, "U", "{{#if x}}u{{/if}}", map[string]string{"x": "string"})},
		{Path: "partials/a.md", Data: []byte("first")},
	}
	prev := Build(files, BuildOptions{})
	same := Rebuild(prev, files, BuildOptions{})
	for _, name := range []string{"T", "U"} {
		p, _ := prev.Lookup(name)
		s, _ := same.Lookup(name)
		if p != s {
			t.Errorf("%s: not shared by a rebuild of the same files", name)
		}
	}
	changed := append(files[:2:2], File{Path: "partials/a.md", Data: []byte("second")})
	next := Rebuild(prev, changed, BuildOptions{})
	if diff := cmp.Diff([]string{"T"}, Diff(prev, next).Changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	pu, _ := prev.Lookup("U")
	nu, _ := next.Lookup("U")
	if pu != nu {
		t.Error("U, which includes no partial, was not shared")
	}
	e, _ := next.Lookup("T")
	out, err := e.Template.Sections()[1].Execute(func(string) any { return "" }, 1000)
	if err != nil || out != "second" {
		t.Errorf("T renders %q, %v; want the new partial", out, err)
	}
	if pt, _ := prev.Lookup("T"); pt.PartialsDigest == e.PartialsDigest || e.PartialsDigest == "" || pt.Digest != e.Digest {
		t.Errorf("digests: file %s → %s, partials %q → %q", pt.Digest, e.Digest, pt.PartialsDigest, e.PartialsDigest)
	}
	if _, ok := Rebuild(next, files[:2], BuildOptions{}).Lookup("T"); ok {
		t.Error("T is served without its partial")
	}
}

// TestExecuteBound: a section whose loops would render more than the
// limit is refused before it is rendered.
func TestExecuteBound(t *testing.T) {
	tp, _, err := Parse(logicTemplate(t, "B", "{{#each files}}{{#each @root.files}}{{this}}{{/each}}{{/each}}", map[string]string{"files": "array", "x": "string"}), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := tp.Sections()[1]
	items := make([]string, 100)
	for i := range items {
		items[i] = "0123456789"
	}
	value := func(string) any { return items }
	if out, err := s.Execute(value, 100*100*10); err != nil || len(out) != 100*100*10 {
		t.Errorf("at the limit: %d bytes, %v", len(out), err)
	}
	if _, err := s.Execute(value, 100*100*10-1); err == nil || !strings.Contains(err.Error(), "would render more than") {
		t.Errorf("over the limit: %v", err)
	}
}

// FuzzCompileLogic: the section compiler never panics, whatever the
// content; what its scan accepts the parser parses (a failed parse would
// leave raymond's lexer goroutine behind); what compiles renders without
// panicking or escaping, within the bound measured before rendering.
func FuzzCompileLogic(f *testing.F) {
	for _, s := range []string{
		"{{#if x}}a{{else if y}}b{{else}}c{{/if}}", "{{#each files}}\n- {{@index}} {{this}}\n{{else}}none{{/each}}",
		"{{> p}}", "{{#unless x}}{{{x}}}{{/unless}}", "{{~#if x~}} a {{~/if~}}", "\\{{#if x}}", "{{!-- c --}}{{#if x}}{{/if}}",
		"{{#if x}}{{/each}}", "{{#each x as |y|}}{{/each}}", "{{x}}}", "{{#if @root.x}}{{@first}}{{/if}}", "  {{> p}}\n",
	} {
		f.Add(s)
	}
	vars := []Variable{{Name: "x", Type: TypeString}, {Name: "y", Type: TypeBoolean}, {Name: "files", Type: TypeArray}}
	f.Fuzz(func(t *testing.T, content string) {
		refs, errs := scanLogic(content)
		if len(errs) > 0 {
			return
		}
		if _, err := parser.Parse(content); err != nil {
			t.Fatalf("the scan accepted %q, the parser did not: %v", content, err)
		}
		l, errs := compileLogic(content)
		if len(errs) > 0 {
			t.Fatalf("compileLogic(%q): %v", content, errs)
		}
		if len(checkRefs(refs, vars)) > 0 {
			return
		}
		for _, r := range refs {
			if r.kind == refPartial {
				return // rendered once linked; Build's tests cover it
			}
		}
		s := Section{Name: "s", Content: content, logic: l}
		value := func(name string) any {
			if name == "files" {
				return []string{"a", "{{x}}"}
			}
			return "<v>"
		}
		out, err := s.Execute(value, 1<<20)
		if err != nil {
			t.Fatalf("Execute(%q): %v", content, err)
		}
		if strings.Contains(out, "&lt;") {
			t.Fatalf("Execute(%q) escaped HTML: %q", content, out)
		}
		// The measure is an upper bound: a limit below what was rendered
		// refuses it.
		if len(out) > 0 {
			if _, err := s.Execute(value, len(out)-1); err == nil {
				t.Fatalf("Execute(%q) rendered %d bytes within a limit of %d", content, len(out), len(out)-1)
			}
		}
	})
}
