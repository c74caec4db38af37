//go:build linux

package main

// The tests in this file run the built binary and read what it logs on
// stderr: what a person starting flowyprompt, or a client's log window,
// sees.

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// TestBinaryServingMeansServing: "serving" is logged only once the HTTP
// listener is up; an address without a host, or a port another process
// holds, ends serve with the error, a non-zero status and no such line.
func TestBinaryServingMeansServing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name    string
		addr    string
		wantErr []string
	}{
		{name: "port without a host", addr: "3917", wantErr: []string{`--addr "3917" is not HOST:PORT`, "--addr 127.0.0.1:3917"}},
		{name: "port taken", addr: taken.Addr().String(), wantErr: []string{"address already in use", "how to fix"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runBinary(t, nil, "serve", "--transport", "http", "--addr", tt.addr)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero\nstderr: %s", stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "serving") {
				t.Errorf("stderr says serving though nothing listens:\n%s", stderr)
			}
		})
	}

	// A server that does listen says so, after the listener is up.
	s := startHTTP(t, 0)
	waitFor(t, 30*time.Second, "the serving line", func() (bool, string) {
		out := s.Output()
		return strings.Contains(out, `msg="flowyprompt serving"`), out
	})
}

// Template files for the log tests: one valid, one valid with a warning
// (an undefined placeholder), one invalid.
const (
	helloJSON = `{"metadata":{"name":"Hello","description":"Greets","version":"1.0.0"},"variables":[{"name":"who","type":"string","description":"Who","required":true}],"results":[{"name":"G","content":"Hello {{who}}!"}]}`
	warnJSON  = `{"metadata":{"name":"Warn","description":"x","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"uses {{ghost}}"}]}`
	badJSON   = `{"metadata":`
)

// templateDir writes files (name → content) into a new folder.
func templateDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBinaryProblemsLoggedOnce: a one-shot command reports each problem
// of the templates once, and render only those of the template it renders.
func TestBinaryProblemsLoggedOnce(t *testing.T) {
	dir := templateDir(t, map[string]string{"Hello.json": helloJSON, "Warn.json": warnJSON, "Bad.json": badJSON})
	tests := []struct {
		name string
		args []string
		code int
		// count is how many times each string appears in stdout and
		// stderr together.
		count map[string]int
	}{
		{name: "render another template", args: []string{"render", "Hello", "--arg", "who=Ada", "--templates", dir},
			count: map[string]int{"Hello Ada!": 1, "Warn.json": 0, "Bad.json": 0, "ghost": 0}},
		{name: "render the template with a warning", args: []string{"render", "Warn", "--templates", dir},
			count: map[string]int{`msg="template warning"`: 1, "Bad.json": 0}},
		{name: "check", args: []string{"check", "--templates", dir}, code: 1,
			count: map[string]int{"malformed JSON": 1, "2 valid, 1 invalid": 1}},
		{name: "list", args: []string{"list", "--templates", dir},
			count: map[string]int{`msg="template warning"`: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for s, n := range tt.count {
				if got := strings.Count(stdout+stderr, s); got != n {
					t.Errorf("%q appears %d times, want %d\nstdout: %s\nstderr: %s", s, got, n, stdout, stderr)
				}
			}
		})
	}
}

// TestBinaryCheckNetworkErrorOnce: check against a GitHub that fails
// reports the network error once (the report and the exit message may
// both describe it, but it is not logged as well).
func TestBinaryCheckNetworkErrorOnce(t *testing.T) {
	tests := []struct {
		name string
		warm bool // a passing check fills the disk cache first
	}{
		{name: "nothing cached"},
		{name: "templates cached", warm: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakegithub.New("acme", "prompts")
			t.Cleanup(fake.Close)
			fake.SetToken(cliToken)
			fake.PutFile("templates/Hello.json", fakegithub.ValidTemplate("Hello", "Hello {{subject}}"))
			var env []string
			for k, v := range githubEnv(fake, t.TempDir(), nil) {
				env = append(env, k+"="+v)
			}
			if tt.warm {
				if stdout, stderr, code := runBinary(t, env, "check"); code != 0 {
					t.Fatalf("warming check: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
			}
			fake.SetFault(503)
			stdout, stderr, code := runBinary(t, env, "check")
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			// The whole phrase: the fake's random port may hold "503" too.
			if n := strings.Count(stdout+stderr, "GitHub returned 503"); n != 1 {
				t.Errorf("the error (503) appears %d times, want 1\nstdout: %s\nstderr: %s", n, stdout, stderr)
			}
			if !strings.Contains(stderr, "NETWORK_ERROR") || !strings.Contains(stderr, "how to fix") {
				t.Errorf("stderr lacks the error's code or fix:\n%s", stderr)
			}
		})
	}
}

// TestBinaryWatchLogsChangesOnce: a server watching a folder logs each
// problem when it appears and when it is resolved, never again on a
// rebuild, and a half-written file as kept rather than as left out too.
func TestBinaryWatchLogsChangesOnce(t *testing.T) {
	dir := templateDir(t, map[string]string{"Hello.json": helloJSON, "Warn.json": warnJSON, "Bad.json": badJSON})
	cmd := exec.Command(binary(t), "serve", "--templates", dir)
	cmd.Env = serverEnv(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &tail{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitLog := func(what string, n int) {
		t.Helper()
		waitFor(t, 30*time.Second, fmt.Sprintf("%d × %s", n, what), func() (bool, string) {
			out := string(logs.Bytes())
			return strings.Count(out, what) >= n, out
		})
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitLog(`msg="flowyprompt serving"`, 1)
	// A change elsewhere in the folder: nothing about the others again.
	write("Other.json", strings.ReplaceAll(helloJSON, `"Hello"`, `"Other"`))
	waitLog(`msg="templates changed"`, 1)
	// A save half-way through: the last valid version is served.
	write("Hello.json", helloJSON[:40])
	waitLog(`serving its last valid version`, 1)
	// Saved whole, with the warning fixed and the bad file too.
	write("Hello.json", helloJSON)
	write("Warn.json", strings.Replace(warnJSON, `"variables":[]`, `"variables":[{"name":"ghost","type":"string","description":"g"}]`, 1))
	write("Bad.json", strings.ReplaceAll(helloJSON, `"Hello"`, `"Bad"`))
	waitLog(`msg="template warning resolved"`, 1)
	waitLog(`msg="template file is valid again" path=Bad.json`, 1)
	waitLog(`msg="template file is valid again" path=Hello.json`, 1)
	// One more rebuild, to be sure that nothing is logged again.
	write("Other2.json", strings.ReplaceAll(helloJSON, `"Hello"`, `"Other2"`))
	waitLog(`added=[Other2]`, 1)

	out := string(logs.Bytes())
	for s, n := range map[string]int{
		`msg="template warning" template=Warn`:               1,
		`msg="invalid template left out" path=Bad.json`:      1,
		`msg="invalid template left out" path=Hello.json`:    0,
		`serving its last valid version`:                     1,
		`msg="template warning resolved"`:                    1,
		`msg="template file is valid again" path=Bad.json`:   1,
		`msg="template file is valid again" path=Hello.json`: 1,
	} {
		if got := strings.Count(out, s); got != n {
			t.Errorf("%q logged %d times, want %d\nlog:\n%s", s, got, n, out)
		}
	}
}

// TestBinaryCommandLineErrors: the command line's mistakes are answered in
// command-line terms, in one line that points at the command's -h, and
// -h prints the usage.
func TestBinaryCommandLineErrors(t *testing.T) {
	dir := templateDir(t, map[string]string{"Hello.json": helloJSON, "Bad.json": badJSON})
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  []string // substrings
		not     []string // substrings stderr must not hold
		once    string   // appears exactly once in stderr
		oneLine bool     // stderr is a single line
	}{
		{name: "render unknown template", args: []string{"render", "Nope"}, code: 1,
			stderr: []string{"flowyprompt list"}, not: []string{"tools/list", "flowyprompt_list_templates", "prompts/list"}},
		{name: "render typo", args: []string{"render", "Helo", "--templates", dir}, code: 1,
			stderr: []string{"Hello"}, once: "did you mean"},
		// render logs nothing about other files, so the file that would
		// have been the template is named in the error.
		{name: "render a template whose file is invalid", args: []string{"render", "Bad", "--templates", dir}, code: 1,
			stderr: []string{"Bad.json", "malformed JSON", "flowyprompt validate"}},
		{name: "argument typo", args: []string{"render", "Commit_Message", "--arg", "diff=x", "--arg", "styel=plain"},
			stderr: []string{"styel", `did you mean "style"`}},
		{name: "call bad JSON", args: []string{"call", "flowyprompt_list_templates", "{\"limit\":\n  x}"}, code: 2,
			stderr: []string{"not valid JSON", "line 2, column 3"}},
		{name: "render -h", args: []string{"render", "-h"}, stderr: []string{"Usage: flowyprompt render", "Flags:"}},
		{name: "unknown flag", args: []string{"render", "Hello", "--bogus"}, code: 2, oneLine: true,
			stderr: []string{"-bogus", "see flowyprompt render -h"}},
		{name: "render without a name", args: []string{"render"}, code: 2, oneLine: true,
			stderr: []string{"template NAME", "see flowyprompt render -h"}},
		{name: "validate without a path", args: []string{"validate"}, code: 2, oneLine: true,
			stderr: []string{"at least one", "see flowyprompt validate -h"}},
		{name: "call without a tool", args: []string{"call"}, code: 2, oneLine: true,
			stderr: []string{"TOOL", "see flowyprompt call -h"}},
		{name: "version with an argument", args: []string{"version", "now"}, code: 2, oneLine: true,
			stderr: []string{"no arguments", "see flowyprompt version -h"}},
		{name: "bad flag value", args: []string{"list", "--cache-ttl", "soon"}, code: 2, oneLine: true,
			stderr: []string{"cache-ttl", "see flowyprompt list -h"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, oneLine: true,
			stderr: []string{`unknown command "frobnicate"`, "see flowyprompt -h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			checkOutput(t, "", stderr, nil, tt.stderr)
			for _, s := range tt.not {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr holds %q:\n%s", s, stderr)
				}
			}
			if tt.once != "" {
				if n := strings.Count(stderr, tt.once); n != 1 {
					t.Errorf("%q appears %d times, want once:\n%s", tt.once, n, stderr)
				}
			}
			if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n") + 1; tt.oneLine && lines != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", lines, stderr)
			}
		})
	}
}

// TestBinaryHelp: each command's -h tells its own defaults: the log
// level it really uses, a folder that is watched only by serve, and the
// GitHub variables that are not flags.
func TestBinaryHelp(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
		not  []string
	}{
		{cmd: "serve", want: []string{`(default "info")`, "watched for changes", "GITHUB_PAT", "GITHUB_REPO_URL"}},
		{cmd: "list", want: []string{`(default "warn")`, "GITHUB_PAT"}, not: []string{"watched", `(default "info")`}},
		{cmd: "render", want: []string{`(default "warn")`}, not: []string{"watched", `(default "info")`}},
		{cmd: "call", want: []string{`(default "warn")`}, not: []string{"watched", `(default "info")`}},
		{cmd: "check", want: []string{`(default "error")`, "GITHUB_PAT"}, not: []string{"watched", `(default "info")`}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			_, stderr, code := runBinary(t, nil, tt.cmd, "-h")
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			checkOutput(t, "", stderr, nil, tt.want)
			for _, s := range tt.not {
				if strings.Contains(stderr, s) {
					t.Errorf("%s -h says %q:\n%s", tt.cmd, s, stderr)
				}
			}
		})
	}
}
