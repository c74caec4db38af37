package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

// TestUnknownFlagSuggests: a mistyped flag of any command is answered with
// the command's flag it most likely meant, on the one line of the usage
// error; a server's flag given to another command is named as serve's; a
// flag like none of them gets no guess.
func TestUnknownFlagSuggests(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for no suggestion
	}{
		{[]string{"list", "--template", "./prompts"}, "did you mean --templates?"},
		{[]string{"serve", "--transprt", "http"}, "did you mean --transport?"},
		{[]string{"serve", "--adr", "127.0.0.1:3001"}, "did you mean --addr?"},
		{[]string{"render", "Hello", "--args", "who=Ada"}, "did you mean --arg?"},
		{[]string{"validate", "--jsn", "x.json"}, "did you mean --json?"},
		{[]string{"call", "flowyprompt_list_templates", "--allow-writes"}, "did you mean --allow-write?"},
		{[]string{"check", "-github-rep", "https://github.com/a/b"}, "did you mean --github-ref or --github-repo?"},
		{[]string{"list", "--transport", "http"}, "--transport is a flag of flowyprompt serve alone"},
		{[]string{"call", "flowyprompt_list_templates", "--addr", "127.0.0.1:3001"}, "--addr is a flag of flowyprompt serve alone"},
		{[]string{"list", "--bogus"}, ""},
		{[]string{"version", "--json"}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(t, nil, "", tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", code, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", lines, stderr)
			}
			want := []string{"flag provided but not defined", "(see flowyprompt " + tt.args[0] + " -h)"}
			if tt.want != "" {
				want = append(want, tt.want)
			} else if strings.Contains(stderr, "did you mean") || strings.Contains(stderr, "a flag of") {
				t.Errorf("stderr guesses a flag:\n%s", stderr)
			}
			checkOutput(t, "", stderr, nil, want)
		})
	}
}

// TestRefusalsSayHowToFix: a refused command line says what is wrong and
// a fix that works as written from where the user stands.
func TestRefusalsSayHowToFix(t *testing.T) {
	// A port in use: the fix names the next port both as serve's flag and
	// as make run's variable, which is all a make run user can set.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	next := fmt.Sprintf("127.0.0.1:%d", port+1)
	if port == 65535 {
		next = "127.0.0.1:65534"
	}
	hello := map[string]string{"Hello.json": `{"metadata":{"name":"Hello","description":"Greets","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"G","content":"Hello!"}]}`}
	dir := t.TempDir()
	testfiles.Write(t, dir, hello)
	spaced := filepath.Join(t.TempDir(), "my prompts")
	testfiles.Write(t, spaced, hello)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string
		not  []string // substrings stderr must not hold
	}{
		{name: "the legacy SSE transport is --transport http", args: []string{"serve", "--transport", "sse"}, code: 2,
			want: []string{`--transport "sse" is not stdio or http`, "use --transport http", "/sse"}},
		{name: "a mistyped command", args: []string{"sevre"}, code: 2,
			want: []string{`unknown command "sevre"; did you mean flowyprompt serve?`}},
		{name: "a flag before the command", args: []string{"--templates", "./prompts"}, code: 2,
			want: []string{"flags come after the command, e.g. flowyprompt serve --templates ./prompts"}},
		// The server's fix for an unknown tool is an MCP client's (call
		// tools/list); call names its own.
		{name: "call an unknown tool", args: []string{"call", "flowyprompt_list_template"}, code: 2,
			want: []string{`unknown tool "flowyprompt_list_template"`, "how to fix: name one of the tools, e.g. flowyprompt call flowyprompt_",
				"flowyprompt_start_flow", "did you mean: flowyprompt_list_templates"},
			not: []string{"tools/list"}},
		// flowyprompt list alone would list the built-in examples.
		{name: "render a template the folder lacks", args: []string{"render", "Helo", "--templates", dir, "--arg", "who=Ada", "--arg=x=y"}, code: 1,
			want: []string{"how to fix: run flowyprompt list --templates " + dir + " to see the names", "did you mean: Hello"},
			not:  []string{"who=Ada", "x=y"}},
		{name: "render, a folder needing quotes", args: []string{"render", "--templates", spaced, "Helo"}, code: 1,
			want: []string{"how to fix: run flowyprompt list --templates '" + spaced + "' to see the names"}},
		{name: "an --arg file that is not there", args: []string{"render", "Hello", "--templates", dir, "--arg", "who=@nofile.txt"}, code: 2,
			want: []string{"--arg who=@nofile.txt: cannot read the value", "name a file that exists", "@- for stdin"}},
		// A flag wins over its variable: the fix names what was given.
		{name: "a bad --github-repo", args: []string{"list", "--github-repo", "acme"}, code: 2,
			want: []string{`--github-repo "acme" is not a repository address`, "how to fix: set --github-repo to https://github.com/OWNER/REPO"},
			not:  []string{"GITHUB_REPO_URL"}},
		{name: "check, a bad --github-repo", args: []string{"check", "--github-repo", "acme"}, code: 2,
			want: []string{"how to fix: set --github-repo to https://github.com/OWNER/REPO"}, not: []string{"GITHUB_REPO_URL"}},
		{name: "a bad GITHUB_REPO_URL", env: map[string]string{"GITHUB_REPO_URL": "acme"}, args: []string{"list"}, code: 2,
			want: []string{"how to fix: set GITHUB_REPO_URL to https://github.com/OWNER/REPO"}},
		// make run ADDR=3001 runs serve --addr 3001.
		{name: "a port alone", args: []string{"serve", "--transport", "http", "--addr", "3001"}, code: 2,
			want: []string{`--addr "3001" is not HOST:PORT`, "make run ADDR=127.0.0.1:3001"}},
		{name: "a busy port", args: []string{"serve", "--transport", "http", "--addr", busy.Addr().String()}, code: 1,
			want: []string{"address already in use", "how to fix: another program", "--addr " + next, "make run ADDR=" + next}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tt.env, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			checkOutput(t, "", stderr, nil, tt.want)
			for _, s := range tt.not {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr holds %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// TestTemplatesDirAtHome: TEMPLATES_DIR='~/prompts', quoted so that the
// shell leaves the ~ alone, serves the prompts folder of the home folder.
func TestTemplatesDirAtHome(t *testing.T) {
	home := t.TempDir()
	testfiles.Write(t, home, map[string]string{"prompts/Hello.json": `{"metadata":{"name":"Hello","description":"Greets","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"G","content":"Hello!"}]}`})
	for _, tt := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"TEMPLATES_DIR": "~/prompts"}, []string{"Hello", "1 template from directory " + filepath.Join(home, "prompts")}},
		{map[string]string{"FLOWYPROMPT_SOURCES": "name=mine,dir=~/prompts"}, []string{"mine/Hello", "1 template from"}},
	} {
		tt.env["HOME"], tt.env["USERPROFILE"] = home, home
		stdout, stderr, code := runCLI(t, tt.env, "", "list")
		if code != 0 {
			t.Fatalf("%v: exit %d\nstderr: %s", tt.env, code, stderr)
		}
		checkOutput(t, stdout, stderr, tt.want, nil)
	}
}
