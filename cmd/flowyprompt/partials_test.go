package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestValidatePartials: validate reads a folder's partials as its server
// does: a partial is checked in its library, not as a template file, and
// a template is invalid when a partial it includes is missing or in a
// cycle, whether the folder or the files are named.
func TestValidatePartials(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "partials"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := func(name, content string) string {
		return `{"metadata":{"name":"` + name + `","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"` + content + `"}]}`
	}
	for p, data := range map[string]string{
		"Styled.json":       tmpl("Styled", `Intro\n{{> style}}`),
		"Missing.json":      tmpl("Missing", `{{> nowhere}}`),
		"Loop.json":         tmpl("Loop", `{{> a}}`),
		"partials/style.md": "Be brief.",
		"partials/a.md":     "{{> b}}",
		"partials/b.md":     "{{> a}}",
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		args   []string
		stdout []string
	}{
		{"the folder", []string{"validate", dir}, []string{
			"Styled.json: ok", "partials/style.md: ok",
			`Missing.json: INVALID`, `{{> nowhere}}: the library has no partial "nowhere": add partials/nowhere.md`,
			"Loop.json: INVALID", "partials include each other in a cycle (a → b → a)",
			"partials/a.md: INVALID", "partials/b.md: INVALID",
			"6 file(s) checked: 2 valid, 4 invalid"}},
		{"the files", []string{"validate", filepath.Join(dir, "Styled.json"), filepath.Join(dir, "Missing.json"), filepath.Join(dir, "partials", "style.md")},
			[]string{"Styled.json: ok", "Missing.json: INVALID", "partials/style.md: ok", "3 file(s) checked: 2 valid, 1 invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, "", tt.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, nil)
		})
	}
}
