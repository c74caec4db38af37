package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

// runBinary runs the built flowyprompt with args and env as its whole
// environment, stdin empty, and returns its stdout, stderr and exit code.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, fmt.Sprintf("flowyprompt %v", args), "", serverEnv(t, env...), binary(t), args...)
}

// runCommand runs name with args in dir (empty: this one), with env as its
// whole environment and stdin empty, for at most 30 s, and returns its
// stdout, stderr and exit code; what names it in failures.
func runCommand(t *testing.T, what, dir string, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s did not exit within 30s\nstderr: %s", what, errOut.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", what, err)
	}
	return out.String(), errOut.String(), code
}

const guideTemplate = `{"metadata":{"name":"Guided","description":"Writes with the guide.","version":"1.0.0"},"variables":[],` +
	`"results":[{"name":"s","content":"Write it, following the attached guide."}],"resources":["guides/style.md"]}`

// TestRenderPrintsResources: `flowyprompt render` prints the files a
// template lists after the prompt, as prompts/get sends them.
func TestRenderPrintsResources(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style\nBe brief."})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // in this order
	}{
		{name: "text then resource", args: []string{"render", "Guided", "--templates", dir},
			stdout: []string{"Write it, following the attached guide.", "template-file:///guides/style.md", "# Style\nBe brief."}},
		{name: "call prints the tool's resources", args: []string{"call", "flowyprompt_render_template", `{"name":"Guided"}`, "--templates", dir},
			stdout: []string{"Write it, following the attached guide.", "PROMPT>>>", "Attached resources", "template-file:///guides/style.md", "# Style\nBe brief."}},
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
	testfiles.Write(t, dir, map[string]string{"Guided.json": missing, "guides/style.md": "# Style"})
	okDir := t.TempDir()
	testfiles.Write(t, okDir, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style"})
	// Linked attaches a template of its library and one that is none.
	refs := t.TempDir()
	testfiles.Write(t, refs, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style",
		"Linked.json": `{"metadata":{"name":"Linked","description":"d","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"x"}],"resources":["template://Guided","template://Nope"]}`})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		absent []string // from stdout
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
		{name: "validate template uri", args: []string{"validate", refs}, code: 1,
			stdout: []string{"Linked.json: INVALID", `error   /resources/1: resource "template://Nope" names no template`, "1 valid, 1 invalid"},
			absent: []string{"/resources/0"}},
		{name: "validate template uri, named file", args: []string{"validate", filepath.Join(refs, "Linked.json")}, code: 1,
			stdout: []string{"Linked.json: INVALID", `/resources/1: resource "template://Nope"`}, absent: []string{"/resources/0"}},
		{name: "check template uri", args: []string{"check", "--templates", refs}, code: 1,
			stdout: []string{`Linked.json: /resources/1: resource "template://Nope" names no template`}, absent: []string{"/resources/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
			for _, s := range tt.absent {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
		})
	}
}

// TestValidateWholeStory: validate shows every problem of a file at once,
// warnings included, each at a JSON pointer, and says how to fix each.
func TestValidateWholeStory(t *testing.T) {
	dir := t.TempDir()
	// An error (the version), an undefined placeholder, an unused variable
	// and a file name that disagrees, all in one file.
	testfiles.Write(t, dir, map[string]string{"Wrong_Name.json": `{"metadata":{"name":"Story","description":"d","version":"1"},` +
		`"variables":[{"name":"unused","type":"string","description":"u"}],"results":[{"name":"s","content":"uses {{ghost}}"}]}`})
	badName := t.TempDir()
	testfiles.Write(t, badName, map[string]string{"Hyphen.json": `{"metadata":{"name":"Hyphen","description":"d","version":"1.0.0"},` +
		`"variables":[{"name":"company-name","type":"string","description":"u"}],"results":[{"name":"s","content":"for {{company-name}}"}]}`})
	large := t.TempDir()
	testfiles.Write(t, large, map[string]string{"Large.json": `{"metadata":{"name":"Large","description":"` + strings.Repeat("x", 2000) +
		`","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`})
	empty := t.TempDir()
	testfiles.Write(t, empty, map[string]string{"notes.md": "not a template"})
	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "warnings beside errors", args: []string{"validate", dir}, code: 1, stdout: []string{
			"Wrong_Name.json: INVALID", "error   /metadata/version:",
			"/results/0/content: placeholder {{ghost}}", "/variables/0/name: variable \"unused\"", "/metadata/name: file \"Wrong_Name.json\""}},
		{name: "warnings beside errors, json", args: []string{"validate", "--json", dir}, code: 1, stdout: []string{
			"/results/0/content: placeholder {{ghost}}", "/variables/0/name:", "/metadata/name:"}},
		{name: "variable name as written", args: []string{"validate", badName}, code: 1, stdout: []string{
			"/variables/0/name: \"company-name\" is not a valid variable name", "{{company-name}}", "company_name"}},
		{name: "too large", env: []string{"MAX_FILE_SIZE=1000"}, args: []string{"validate", large}, code: 1, stdout: []string{
			"Large.json: INVALID", "TEMPLATE_TOO_LARGE", "split the template", "resource file"}},
		{name: "too large, named file", env: []string{"MAX_FILE_SIZE=1000"}, args: []string{"validate", filepath.Join(large, "Large.json")}, code: 1,
			stdout: []string{"TEMPLATE_TOO_LARGE", "split the template", "resource file"}},
		{name: "no templates", args: []string{"validate", empty}, code: 1, stderr: []string{"no template files", empty}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, tt.env, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
		})
	}
}

// TestListSaysHowMany: list ends with the count, in words that agree with
// it.
func TestListSaysHowMany(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{"Guided.json": guideTemplate, "guides/style.md": "# Style"})
	out, errOut, code := runBinary(t, nil, "list", "--templates", dir)
	if code != 0 || !strings.Contains(out, "\n1 template from directory") {
		t.Fatalf("list of one template (exit %d):\n%s\n%s", code, out, errOut)
	}
}
