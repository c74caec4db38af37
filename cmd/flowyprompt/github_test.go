package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
)

const cliToken = "ghp_CliT0kenThatMustNeverLeak0123456789ab"

// githubEnv is the environment of a command run against fake, with its own
// disk cache in cacheDir.
func githubEnv(fake *fakegithub.Server, cacheDir string, extra map[string]string) map[string]string {
	env := map[string]string{
		"GITHUB_REPO_URL":       fake.RepoURL(),
		"GITHUB_API_URL":        fake.URL(),
		"GITHUB_PAT":            cliToken,
		"FLOWYPROMPT_CACHE_DIR": cacheDir,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func TestCheckGitHub(t *testing.T) {
	revoke := func(f *fakegithub.Server) { f.SetToken("ghp_someoneElsesToken000000000000000000") }
	fail := func(f *fakegithub.Server) { f.SetFault(503) }
	tests := []struct {
		name    string
		pinned  bool // GITHUB_REF is the head commit
		warm    bool // a passing check fills the disk cache first
		breakIt func(f *fakegithub.Server)
		code    int
		stdout  []string
		stderr  []string
	}{
		{name: "passes", code: 0, stdout: []string{"1 valid, 0 invalid", "rate limit:"}},
		{name: "token refused", breakIt: revoke, code: 1,
			stderr: []string{"GITHUB_AUTH_FAILED", "how to fix: check GITHUB_PAT"}},
		{name: "GitHub failing", breakIt: fail, code: 1, stderr: []string{"NETWORK_ERROR", "503", "how to fix:"}},
		{name: "pinned on a warm cache passes", pinned: true, warm: true, code: 0, stdout: []string{"1 valid, 0 invalid", "rate limit:"}},
		// Serving needs nothing from GitHub here; check must still ask.
		{name: "pinned on a warm cache, token revoked", pinned: true, warm: true, breakIt: revoke, code: 1,
			stdout: []string{"1 valid"}, stderr: []string{"GITHUB_AUTH_FAILED", "how to fix: check GITHUB_PAT"}},
		{name: "pinned on a warm cache, GitHub failing", pinned: true, warm: true, breakIt: fail, code: 1,
			stderr: []string{"NETWORK_ERROR", "how to fix:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakegithub.New("acme", "prompts")
			t.Cleanup(fake.Close)
			fake.SetToken(cliToken)
			fake.PutFile("templates/Hello.json", fakegithub.ValidTemplate("Hello", "Hello {{subject}}"))
			extra := map[string]string{}
			if tt.pinned {
				extra["GITHUB_REF"] = fake.Head()
			}
			env := githubEnv(fake, t.TempDir(), extra)
			if tt.warm {
				if stdout, stderr, code := runCLI(t, env, "", "check"); code != 0 {
					t.Fatalf("warming check: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
			}
			if tt.breakIt != nil {
				tt.breakIt(fake)
			}
			fake.Reset()
			stdout, stderr, code := runCLI(t, env, "", "check")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if fake.Total() == 0 {
				t.Error("check made no request to GitHub")
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
			if strings.Contains(stdout+stderr, cliToken[4:]) {
				t.Error("the output contains the token")
			}
		})
	}
}

func TestBadGitHubConfiguration(t *testing.T) {
	// Refused before any request, with exit status 2 and, for each
	// problem, how to fix it: fault.Error's text alone leaves the fix out.
	const badToken = "ghp_Pasted0WithANewline000000000000000\n"
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		stderr []string
	}{
		{name: "token pasted with a line break", env: map[string]string{"GITHUB_PAT": badToken}, args: []string{"check"},
			stderr: []string{"bad GitHub configuration", "GITHUB_PAT contains whitespace", "how to fix: copy the token again"}},
		{name: "repository URL without a repository", env: map[string]string{"GITHUB_REPO_URL": "https://github.com/acme"}, args: []string{"check"},
			stderr: []string{"INVALID_ARGUMENT", "GITHUB_REPO_URL", "how to fix: set GITHUB_REPO_URL to https://github.com/OWNER/REPO"}},
		{name: "every problem with its fix", env: map[string]string{"GITHUB_PAT": badToken, "GITHUB_API_URL": "ftp://ghe.example.com"}, args: []string{"list"},
			stderr: []string{"GITHUB_PAT contains whitespace", "how to fix: copy the token again",
				"GITHUB_API_URL", "how to fix: set GITHUB_API_URL to https://api.github.com"}},
		{name: "serve refuses too", env: map[string]string{"GITHUB_REF": "bad..ref"}, args: []string{"serve"},
			stderr: []string{"GITHUB_REF", "how to fix: set GITHUB_REF to a branch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakegithub.New("acme", "prompts")
			t.Cleanup(fake.Close)
			env := githubEnv(fake, t.TempDir(), tt.env)
			stdout, stderr, code := runCLI(t, env, "", tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if strings.Contains(stdout+stderr, strings.TrimSpace(badToken)[4:]) {
				t.Error("the output contains the token")
			}
			if n := fake.Total(); n != 0 {
				t.Errorf("%d requests reached GitHub with a bad configuration", n)
			}

			// The explanation wraps the faults rather than replacing them.
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			err := run(context.Background(), tt.args, strings.NewReader(""), io.Discard, io.Discard, lookup)
			var f *fault.Error
			if !errors.As(err, &f) || f.Code != fault.InvalidArgument || f.How == "" {
				t.Errorf("errors.As found %+v in %v, want the INVALID_ARGUMENT fault", f, err)
			}
		})
	}
}

// TestSeveralRepositories: two repositories, each with its own token read
// from the variable its --source names, are listed together, and no token
// shows in the output or the log, whether the tokens work or not.
func TestSeveralRepositories(t *testing.T) {
	const otherToken = "ghp_0therT0kenThatMustNeverLeak012345678"
	team := fakegithub.New("acme", "prompts")
	t.Cleanup(team.Close)
	team.SetToken(cliToken)
	team.PutFile("templates/Code_Review.json", fakegithub.ValidTemplate("Code_Review", "team {{subject}}"))
	platform := fakegithub.New("ops", "prompts")
	t.Cleanup(platform.Close)
	platform.SetToken(otherToken)
	platform.PutFile("prompts/Code_Review.json", fakegithub.ValidTemplate("Code_Review", "platform {{subject}}"))
	platform.PutFile("prompts/Incident_Update.json", fakegithub.ValidTemplate("Incident_Update", "incident {{subject}}"))
	args := []string{"--log-level", "debug",
		"--source", "name=team,github=" + team.RepoURL() + ",ref=main,api-url=" + team.URL() + ",token-env=TEAM_PAT",
		"--source", "name=platform,github=" + platform.RepoURL() + ",path=prompts,api-url=" + platform.URL() + ",token-env=PLATFORM_PAT"}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "list", env: map[string]string{"TEAM_PAT": cliToken, "PLATFORM_PAT": otherToken},
			args:   append([]string{"list"}, args...),
			stdout: []string{"team/Code_Review", "platform/Code_Review", "platform/Incident_Update", "3 templates from multi"},
			stderr: []string{"template name conflict", "Code_Review"}},
		{name: "render a bare name", env: map[string]string{"TEAM_PAT": cliToken, "PLATFORM_PAT": otherToken},
			args: append([]string{"render", "Code_Review", "--arg", "subject=x"}, args...), stdout: []string{"team x"}},
		{name: "check", env: map[string]string{"TEAM_PAT": cliToken, "PLATFORM_PAT": otherToken},
			args: append([]string{"check"}, args...), stdout: []string{"3 valid, 0 invalid", "Code_Review: team, platform"}},
		{name: "tokens swapped", env: map[string]string{"TEAM_PAT": otherToken, "PLATFORM_PAT": cliToken},
			args: append([]string{"list"}, args...), code: 1,
			stderr: []string{"source team: GITHUB_AUTH_FAILED", "acme/prompts", "how to fix: check TEAM_PAT (token-env= of --source team)",
				"source platform: GITHUB_AUTH_FAILED", "ops/prompts", "check PLATFORM_PAT"}},
		{name: "token variable unset", env: map[string]string{"TEAM_PAT": cliToken},
			args: append([]string{"list"}, args...), code: 2, stderr: []string{"token-env=PLATFORM_PAT names an environment variable that is not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"FLOWYPROMPT_CACHE_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			stdout, stderr, code := runCLI(t, env, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
			for _, tok := range []string{cliToken, otherToken} {
				if strings.Contains(stdout+stderr, tok) {
					t.Errorf("a token shows in the output:\nstdout: %s\nstderr: %s", stdout, stderr)
				}
			}
		})
	}
}
