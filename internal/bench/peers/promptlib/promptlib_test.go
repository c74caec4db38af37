package promptlib

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const tmpl = `{
  "metadata": {"name": "T", "description": "A test.", "version": "1.2.3", "tags": ["a", "b"]},
  "variables": [
    {"name": "x", "type": "string", "description": "X", "required": true},
    {"name": "y", "type": "string", "description": "Y", "default": "why"},
    {"name": "z", "type": "string", "description": "Z"}
  ],
  "results": [
    {"name": "Second", "content": "two {{ y }}|{{z}}|{{undefined}}\n", "format": "text", "order": 2},
    {"name": "First", "content": "one {{x}} {{x}}", "format": "markdown", "order": 1}
  ]
}`

func TestRender(t *testing.T) {
	tpl, err := Parse([]byte(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	header := "# T\n\nA test.\n\n**Version**: 1.2.3\n**Tags**: a, b\n\n---\n\n"
	tests := []struct {
		name    string
		args    map[string]string
		want    string
		missing []string
	}{
		{"defaults and empty optional", map[string]string{"x": "1"}, header + "one 1 1\n\n---\n\ntwo why||{{undefined}}", nil},
		{"all given", map[string]string{"x": "1", "y": "2", "z": "3"}, header + "one 1 1\n\n---\n\ntwo 2|3|{{undefined}}", nil},
		{"an undefined placeholder takes a same-named argument", map[string]string{"x": "1", "undefined": "u"}, header + "one 1 1\n\n---\n\ntwo why||u", nil},
		{"single pass: values are not expanded", map[string]string{"x": "{{y}}"}, header + "one {{y}} {{y}}\n\n---\n\ntwo why||{{undefined}}", nil},
		{"empty counts as missing", map[string]string{"x": ""}, "", []string{"x"}},
		{"missing required", nil, "", []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tpl.Render(tt.args)
			if tt.missing != nil {
				var me *MissingError
				if !errors.As(err, &me) {
					t.Fatalf("err = %v, want *MissingError", err)
				}
				if diff := cmp.Diff(tt.missing, me.Missing); diff != "" {
					t.Errorf("missing (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("render (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderNoTags(t *testing.T) {
	tpl, err := Parse([]byte(`{"metadata":{"name":"N","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"body  \n\n"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# N\n\nd\n\n**Version**: 1.0.0\n\n---\n\nbody"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"not json", `{`, "parse template"},
		{"no name", `{"metadata":{},"results":[{"name":"a","content":"b"}]}`, "metadata.name is empty"},
		{"no results", `{"metadata":{"name":"x"},"results":[]}`, "no results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadDirAndLibrary(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"b.json": strings.Replace(tmpl, `"name": "T"`, `"name": "B"`, 1),
		"a.json": strings.Replace(tmpl, `"name": "T"`, `"name": "A"`, 1),
		"x.txt":  "ignored",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tpl := range ts {
		names = append(names, tpl.Name)
	}
	if diff := cmp.Diff([]string{"A", "B"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	lib := NewLibrary(ts)
	if _, err := lib.RenderTool("B", map[string]string{"x": "1"}); err != nil {
		t.Errorf("render B: %v", err)
	}
	if _, err := lib.RenderTool("C", nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("render C: err = %v, want not found", err)
	}
	if _, err := LoadDir(t.TempDir()); err == nil {
		t.Error("an empty folder should be an error")
	}
}

// FuzzParse checks that no template text makes Parse or Render panic, and
// that rendering a parsed template with no arguments either works or names
// the missing variables.
func FuzzParse(f *testing.F) {
	f.Add(tmpl)
	f.Add(`{"metadata":{"name":"x"},"results":[{"content":"{{ a }}{{{b}}}{{}}"}]}`)
	f.Add(`{"metadata":{"name":"x"},"variables":[{"name":"a","required":true}],"results":[{"content":"{{a}}","order":-1},{"content":"z"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		tpl, err := Parse([]byte(in))
		if err != nil {
			return
		}
		if _, err := tpl.Render(nil); err != nil {
			var me *MissingError
			if !errors.As(err, &me) || len(me.Missing) == 0 {
				t.Fatalf("render: %v", err)
			}
		}
	})
}
