package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// export writes the built-in library in each format; the dotprompt and
// .prompt.yml files it writes are a library flowyprompt serves again
// (their rendering is checked, template by template, in templates/export).
func TestExport(t *testing.T) {
	for _, tt := range []struct {
		format string
		file   string // one file the export must hold
	}{
		{"dotprompt", "Code_Review.prompt"},
		{"prompt-yml", "Code_Review.prompt.yml"},
		{"skill", "code-review/SKILL.md"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			stdout, stderr, code := runCLI(t, nil, "", "export", "--format", tt.format, "--out", out)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, []string{"Wrote 17 templates as " + tt.format + " to " + out}, nil)
			if _, err := os.Stat(filepath.Join(out, tt.file)); err != nil {
				t.Fatal(err)
			}
			if tt.format == "skill" {
				entries, err := os.ReadDir(out)
				if err != nil || len(entries) != 17 {
					t.Fatalf("%d skill folders, %v", len(entries), err)
				}
				return
			}
			stdout, stderr, code = runCLI(t, nil, "", "validate", out)
			if code != 0 || !strings.Contains(stdout, "18 valid, 0 invalid") {
				t.Errorf("validate of the export: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			stdout, stderr, code = runCLI(t, map[string]string{"TEMPLATES_DIR": out}, "", "list")
			if code != 0 || !strings.Contains(stdout, "Code_Review") || !strings.Contains(stdout, "17 templates from directory") {
				t.Errorf("list of the export: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
		})
	}
}

func TestExportUsage(t *testing.T) {
	out := t.TempDir()
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no format", []string{"export", "--out", out}, "export needs --format: one of dotprompt, prompt-yml, skill"},
		{"unknown format", []string{"export", "--format", "yaml", "--out", out}, `unknown format "yaml"`},
		{"no folder", []string{"export", "--format", "skill"}, "export needs --out DIR"},
		{"an argument", []string{"export", "--format", "skill", "--out", out, "extra"}, `takes no arguments, got "extra"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, "", tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr lacks %q\nstdout: %s\nstderr: %s", code, tt.stderr, stdout, stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a refused export wrote %d files", len(entries))
	}
}
