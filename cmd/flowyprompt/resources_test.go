package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBinary runs the built flowyprompt with args and an environment of
// its own (plus env), and returns what it printed and its exit status.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = serverEnv(t, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// writeFiles writes files (slash paths relative to dir) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const guideTemplate = `{"metadata":{"name":"Guided","description":"Writes with the guide.","version":"1.0.0"},"variables":[],` +
	`"results":[{"name":"s","content":"Write it, following the attached guide."}],"resources":["guides/style.md"]}`

// TestRenderPrintsResources: `flowyprompt render` prints the files a
// template lists after the prompt, as prompts/get sends them.
func TestRenderPrintsResources(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style\nBe brief."})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // in this order
	}{
		{name: "text then resource", args: []string{"render", "Guided", "--templates", dir},
			stdout: []string{"Write it, following the attached guide.", "template-file:///guides/style.md", "# Style\nBe brief."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			rest := stdout
			for _, s := range tt.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stdout lacks %q (after what came before):\n%s", s, stdout)
				}
				rest = rest[i+len(s):]
			}
		})
	}
}

// TestMissingResourceReported: validate and check report a listed file
// that is not there at its JSON pointer; validate counts it as an error.
func TestMissingResourceReported(t *testing.T) {
	dir := t.TempDir()
	missing := strings.Replace(guideTemplate, `"guides/style.md"]`, `"guides/style.md","guides/missing.md"]`, 1)
	writeFiles(t, dir, map[string]string{"Guided.json": missing, "guides/style.md": "# Style"})
	okDir := t.TempDir()
	writeFiles(t, okDir, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style"})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "validate folder", args: []string{"validate", dir}, code: 1,
			stdout: []string{"Guided.json: INVALID", "error   /resources/1:", `"guides/missing.md"`, "0 valid, 1 invalid"}},
		{name: "validate file", args: []string{"validate", filepath.Join(dir, "Guided.json")}, code: 1,
			stdout: []string{"Guided.json: INVALID", "/resources/1", "guides/missing.md"}},
		{name: "validate json", args: []string{"validate", "--json", dir}, code: 1,
			stdout: []string{`"pointer": "/resources/1"`, `"code": "RESOURCE_NOT_FOUND"`}},
		{name: "validate present", args: []string{"validate", okDir}, stdout: []string{"Guided.json: ok", "1 valid, 0 invalid"}},
		{name: "check", args: []string{"check", "--templates", dir}, code: 1,
			stdout: []string{"Guided.json: /resources/1:", "guides/missing.md"}},
		{name: "check present", args: []string{"check", "--templates", okDir}, stdout: []string{"1 valid, 0 invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
		})
	}
}
