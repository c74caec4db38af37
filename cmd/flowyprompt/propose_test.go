package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// proposalFile is a template with a test that passes when content renders
// "ok", written to dir.
func proposalFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name+".json")
	data := `{"metadata": {"name": "` + name + `", "description": "d", "version": "1.1.0"},
 "variables": [{"name": "subject", "type": "string", "description": "s", "required": true}],
 "results": [{"name": "Task", "content": "` + content + `"}],
 "tests": [{"name": "says ok", "arguments": {"subject": "ok"}, "expect": {"contains": ["ok"]}}]}`
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPropose: propose checks the files, runs their tests, and opens a
// pull request on the GitHub source named, then updates it; what it
// refuses is refused before anything reaches GitHub.
func TestPropose(t *testing.T) {
	const readOnly = "github_pat_ReadOnlyCliTokenThatMustNeverLeak01"
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	fake.SetToken(cliToken)
	fake.SetReadOnlyToken(readOnly)
	fake.PutFile("templates/Hello.json", fakegithub.ValidTemplate("Hello", "Hello {{subject}}"))
	served := fake.Head()
	dir := t.TempDir()
	hello := proposalFile(t, dir, "Hello", "Hi {{subject}}")
	second := proposalFile(t, t.TempDir(), "Hello", "Hey {{subject}}")
	failing := proposalFile(t, dir, "Failing", "never {{subject}}")
	os.WriteFile(failing, []byte(strings.Replace(mustRead(t, failing), `"contains": ["ok"]`, `"contains": ["absent"]`, 1)), 0o644)
	invalid := filepath.Join(dir, "Broken.json")
	os.WriteFile(invalid, []byte(`{"metadata": {"name": "Broken"}}`), 0o644)
	spec := "name=team,github=" + fake.RepoURL() + ",api-url=" + fake.URL() + ",token-env=TEAM_PAT"
	sources := map[string]string{"FLOWYPROMPT_SOURCES": spec + ";name=local,dir=" + dir, "TEAM_PAT": cliToken, "FLOWYPROMPT_CACHE_DIR": t.TempDir()}

	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		wantPulls  int
		wantBranch string // what the branch's Hello.json holds
	}{
		{name: "an invalid file", env: githubEnv(fake, t.TempDir(), nil), args: []string{invalid}, code: 1,
			stdout: []string{"INVALID " + invalid, "/metadata/version"}, stderr: []string{"nothing proposed"}},
		{name: "a failing test", env: githubEnv(fake, t.TempDir(), nil), args: []string{failing}, code: 1,
			stdout: []string{"FAIL Failing/says ok"}, stderr: []string{"nothing proposed"}},
		{name: "no file", env: githubEnv(fake, t.TempDir(), nil), code: 2, stderr: []string{"at least one template file"}},
		{name: "a folder source", env: map[string]string{"TEMPLATES_DIR": dir}, args: []string{hello}, code: 2, stderr: []string{"needs a GitHub library"}},
		{name: "several sources, none named", env: map[string]string{"FLOWYPROMPT_SOURCES": spec + ";name=other," + strings.TrimPrefix(spec, "name=team,"), "TEAM_PAT": cliToken},
			args: []string{hello}, code: 2, stderr: []string{"--source NS, one of: team, other"}},
		{name: "the source named is a folder", env: sources, args: []string{hello, "--source", "local"}, code: 2, stderr: []string{"source local is not a GitHub repository"}},
		{name: "an unknown source", env: sources, args: []string{"--source=nope", hello}, code: 2, stderr: []string{"no source is named nope (GitHub sources: team)"}},
		{name: "a token that may only read", env: githubEnv(fake, t.TempDir(), map[string]string{"GITHUB_PAT": readOnly}), args: []string{hello}, code: 1,
			stderr: []string{"PERMISSION_DENIED", "Contents: Read and write", "Pull requests: Read and write", "GITHUB_PAT"}},
		{name: "opens", env: sources, args: []string{hello, "--source", "team", "--message", "Friendlier Hello"}, code: 0,
			stdout:    []string{"valid " + hello + ": Hello v1.1.0", "PASS Hello/says ok", "Opened pull request #1 (branch flowyprompt/Hello-", "https://github.com/acme/prompts/pull/1"},
			wantPulls: 1, wantBranch: "Hi {{subject}}"},
		{name: "updates", env: sources, args: []string{"--source", "team", second}, code: 0,
			stdout: []string{"Updated pull request #1"}, wantPulls: 1, wantBranch: "Hey {{subject}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.env, "", append([]string{"propose"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stdout+stderr, cliToken) || strings.Contains(stdout+stderr, readOnly) {
				t.Error("the output shows a token")
			}
			prs := fake.PullRequests()
			if len(prs) != tt.wantPulls {
				t.Fatalf("%d pull requests, want %d", len(prs), tt.wantPulls)
			}
			if tt.wantBranch != "" {
				got, _ := fake.FileAt(prs[0].Head, "templates/Hello.json")
				if !strings.Contains(string(got), tt.wantBranch) || prs[0].Title != "Friendlier Hello" && tt.name == "opens" {
					t.Errorf("pull request %+v, its Hello.json %s; want %q", prs[0], got, tt.wantBranch)
				}
			}
			if fake.Head() != served {
				t.Error("the served branch moved")
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
