package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/internal/golden"
)

// greetingFile is a Greeting template at version, one member a line, so
// that its diff reads line by line; its variable's default is the value it
// renders with.
func greetingFile(version, line string) []byte {
	return []byte(`{
  "metadata": {"name": "Greeting", "description": "Greets someone", "version": "` + version + `"},
  "variables": [
    {"name": "who", "type": "string", "description": "Who to greet", "default": "the team"}
  ],
  "results": [
    {"name": "Greeting", "content": "` + line + `"}
  ]
}
`)
}

// welcomeFile is a template that only a pull request adds.
var welcomeFile = []byte(`{
  "metadata": {"name": "Welcome", "description": "Welcomes a new member", "version": "1.0.0"},
  "variables": [
    {"name": "who", "type": "string", "description": "Who joined", "default": "Ada"}
  ],
  "results": [
    {"name": "Welcome", "content": "Welcome aboard, {{who}}."}
  ]
}
`)

// TestDiffCommand: flowyprompt diff prints the file's and the rendered
// prompt's unified diffs (golden text files, testdata/diff/NAME.golden)
// and exits as diff(1) does: 0 and nothing printed when the versions are
// the same, 1 when they differ, 2 on trouble. Against a GitHub
// repository (the fake) and a folder in a Git work tree.
func TestDiffCommand(t *testing.T) {
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	const p = "templates/Greeting.json"
	first := fake.CommitFiles("Greeting 1.0.0", map[string][]byte{p: greetingFile("1.0.0", "Hello, {{who}}.")})
	fake.SetTag("greeting-first", first)
	fake.CommitFiles("Greeting 1.1.0", map[string][]byte{p: greetingFile("1.1.0", "Hello, {{who}}!")})
	fake.CommitFiles("Greeting 2.0.0", map[string][]byte{p: greetingFile("2.0.0", "Good morning, {{who}}!")})
	gh := githubEnv(fake, t.TempDir(), map[string]string{"GITHUB_PATH": "templates"})

	r := gittest.New(t)
	r.Commit("Ada", "Greeting 1.0.0", map[string][]byte{"prompts/Greeting.json": greetingFile("1.0.0", "Hello, {{who}}.")})
	r.Git("tag", "v1.0.0")
	r.Commit("Ada", "Greeting 1.1.0", map[string][]byte{"prompts/Greeting.json": greetingFile("1.1.0", "Hello, {{who}}!")})
	// An edit not committed yet is what the folder serves.
	r.Write(map[string][]byte{"prompts/Greeting.json": greetingFile("1.2.0", "Hi, {{who}}!")})
	dir := filepath.Join(r.Root, "prompts")

	// A change proposed as pull request #1, as `flowyprompt propose` does.
	proposed := filepath.Join(t.TempDir(), "Greeting.json")
	if err := os.WriteFile(proposed, greetingFile("2.1.0", "Good evening, {{who}}!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI(t, gh, "", "propose", proposed); code != 0 {
		t.Fatalf("propose: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// A template the library does not have, which pull request #2 adds.
	added := filepath.Join(t.TempDir(), "Welcome.json")
	if err := os.WriteFile(added, welcomeFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runCLI(t, gh, "", "propose", added); code != 0 || !strings.Contains(stdout, "pull request #2") {
		t.Fatalf("propose: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		golden string   // stdout's golden file, "" for none printed
		stderr []string // substrings
	}{
		{name: "two versions", env: gh, args: []string{"diff", "Greeting", "1.0.0", "1.1.0"}, code: 1, golden: "github-two-versions"},
		{name: "a tag and the served version", env: gh, args: []string{"diff", "Greeting", "greeting-first"}, code: 1, golden: "github-tag-to-served"},
		{name: "the served version, empty FROM", env: gh, args: []string{"diff", "Greeting", "", "1.1.0"}, code: 1, golden: "github-served-to-version"},
		{name: "the served version and a pull request", env: gh, args: []string{"diff", "Greeting", "", "#1"}, code: 1, golden: "github-served-to-pull"},
		{name: "a template a pull request adds", env: gh, args: []string{"diff", "Welcome", "", "#2"}, code: 1, golden: "github-served-to-new-pull"},
		{name: "a template a pull request adds, the other way", env: gh, args: []string{"diff", "Welcome", "pr:2"}, code: 1, golden: "github-new-pull-to-served"},
		{name: "a template on neither side", env: gh, args: []string{"diff", "Nowhere", "", "#2"}, code: 2,
			stderr: []string{"TEMPLATE_NOT_FOUND", `"Nowhere"`, "nor does pull request #2 add it", "flowyprompt_list_templates"}},
		{name: "the same version", env: gh, args: []string{"diff", "Greeting", "2.0.0", ""}, code: 0},
		{name: "a folder: a tag and the uncommitted edit", args: []string{"diff", "Greeting", "v1.0.0", "--templates", dir}, code: 1, golden: "folder-tag-to-served"},
		{name: "an unknown version", env: gh, args: []string{"diff", "Greeting", "9.9.9"}, code: 2,
			stderr: []string{"VERSION_NOT_FOUND", "versions found: 2.0.0 (", "nor is it a label"}},
		{name: "an unknown template", env: gh, args: []string{"diff", "Greting", "1.0.0"}, code: 2, stderr: []string{"TEMPLATE_NOT_FOUND", "Greeting"}},
		{name: "no FROM", env: gh, args: []string{"diff", "Greeting"}, code: 2, stderr: []string{"diff needs a template NAME, FROM", "see flowyprompt diff -h"}},
		{name: "a bad flag", env: gh, args: []string{"diff", "Greeting", "1.0.0", "--nope"}, code: 2, stderr: []string{"-nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.env, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, nil, tt.stderr)
			if tt.golden == "" {
				if stdout != "" {
					t.Errorf("stdout is not empty:\n%s", stdout)
				}
				return
			}
			golden.Text(t, filepath.Join("testdata", "diff", tt.golden+".golden"), stdout)
		})
	}
}

// TestDiffArgumentOrder: NAME, FROM and TO may come before, between or
// after the flags, as propose's files may; each order prints the same
// diff. A wrong count of words is a usage error that names the words,
// given before any library is read (the folder here does not exist).
func TestDiffArgumentOrder(t *testing.T) {
	r := gittest.New(t)
	r.Commit("Ada", "Greeting 1.0.0", map[string][]byte{"prompts/Greeting.json": greetingFile("1.0.0", "Hello, {{who}}.")})
	r.Git("tag", "v1.0.0")
	r.Commit("Ada", "Greeting 1.1.0", map[string][]byte{"prompts/Greeting.json": greetingFile("1.1.0", "Hello, {{who}}!")})
	dir := filepath.Join(r.Root, "prompts")
	missing := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string // substrings
	}{
		{"words first", []string{"Greeting", "v1.0.0", "1.1.0", "--templates", dir, "--log-level", "error"}, 1, nil},
		{"flags first", []string{"--templates", dir, "--log-level", "error", "Greeting", "v1.0.0", "1.1.0"}, 1, nil},
		{"a flag between the words", []string{"Greeting", "--templates", dir, "v1.0.0", "--log-level=error", "1.1.0"}, 1, nil},
		{"flags around the words", []string{"--templates=" + dir, "Greeting", "v1.0.0", "1.1.0", "--log-level", "error"}, 1, nil},
		{"the words after --", []string{"--templates", dir, "--", "Greeting", "v1.0.0", "1.1.0"}, 1, nil},
		{"one word", []string{"--templates", missing, "Greeting"}, 2,
			[]string{`diff needs a template NAME, FROM`, `got 1 words ("Greeting")`, "see flowyprompt diff -h"}},
		{"four words", []string{"Greeting", "--templates", missing, "v1.0.0", "1.1.0", "2.0.0"}, 2,
			[]string{`got 4 words ("Greeting", "v1.0.0", "1.1.0", "2.0.0")`, "see flowyprompt diff -h"}},
		{"a stray word after the flags", []string{"Greeting", "v1.0.0", "1.1.0", "--templates", missing, "error"}, 2,
			[]string{`got 4 words ("Greeting", "v1.0.0", "1.1.0", "error")`}},
		{"no words", []string{"--templates", missing}, 2, []string{"got 0 words (none)"}},
	}
	var want string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, "", append([]string{"diff"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, nil, tt.stderr)
			if tt.code != 1 {
				if stdout != "" || strings.Contains(stderr, missing) {
					t.Errorf("a usage error printed a diff or read the library:\nstdout: %s\nstderr: %s", stdout, stderr)
				}
				return
			}
			if !strings.HasPrefix(stdout, "--- Greeting.json@v1.0.0\n+++ Greeting.json@1.1.0\n") || !strings.Contains(stdout, "+    {\"name\": \"Greeting\", \"content\": \"Hello, {{who}}!\"}") {
				t.Errorf("not the diff to 1.1.0:\n%s", stdout)
			}
			if want == "" {
				want = stdout
			} else if stdout != want {
				t.Errorf("a different diff from the first order's:\n%s\nwant:\n%s", stdout, want)
			}
		})
	}
}

// TestDiffHelp: diff -h shows its synopsis, what it does, how it exits,
// and the source flags alone (it never saves).
func TestDiffHelp(t *testing.T) {
	_, stderr, code := runCLI(t, nil, "", "diff", "-h")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	checkOutput(t, "", stderr, nil, []string{"Usage: flowyprompt diff NAME FROM [TO]", "Like diff(1)", "Example:\n  flowyprompt diff "})
	want := slices.Clone(sourceFlagNames)
	sort.Strings(want)
	if got := usageFlags(stderr); !slices.Equal(got, want) {
		t.Errorf("usage lists flags %v, want %v", got, want)
	}
}
