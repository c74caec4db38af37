package config

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// githubSettings is the part of Config the GitHub source is built from.
type githubSettings struct {
	RepoURL, Token, Ref, Path, APIURL, CacheDir string
	CacheTTL                                    time.Duration
	MaxFileSize                                 int
}

func githubPart(c *Config) githubSettings {
	return githubSettings{RepoURL: c.GitHubRepoURL, Token: c.GitHubToken, Ref: c.GitHubRef, Path: c.GitHubPath,
		APIURL: c.GitHubAPIURL, CacheDir: c.CacheDir, CacheTTL: c.CacheTTL, MaxFileSize: c.MaxFileSize}
}

// registerGitHub registers the flags with env as the environment and
// parses args.
func registerGitHub(t *testing.T, env map[string]string, args ...string) (*Config, *flag.FlagSet, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	err := Register(fs, &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if perr := fs.Parse(args); perr != nil {
		t.Fatalf("parse %v: %v", args, perr)
	}
	return &c, fs, err
}

func TestGitHubSettings(t *testing.T) {
	defaults := githubSettings{Path: "templates", CacheTTL: 15 * time.Minute, MaxFileSize: 102400}
	fullEnv := map[string]string{
		"GITHUB_REPO_URL":       "https://github.com/acme/prompts",
		"GITHUB_PAT":            "github_pat_0123456789abcdefghij",
		"GITHUB_REF":            "release/1.x",
		"GITHUB_TEMPLATES_PATH": "prompts/team",
		"GITHUB_API_URL":        "https://ghe.example.com/api/v3",
		"CACHE_TTL_MS":          "60000",
		"MAX_FILE_SIZE":         "2048",
		"FLOWYPROMPT_CACHE_DIR": "/var/cache/fp",
	}
	fromEnv := githubSettings{RepoURL: "https://github.com/acme/prompts", Token: "github_pat_0123456789abcdefghij",
		Ref: "release/1.x", Path: "prompts/team", APIURL: "https://ghe.example.com/api/v3", CacheDir: "/var/cache/fp",
		CacheTTL: time.Minute, MaxFileSize: 2048}
	flags := []string{"--github-repo", "other/repo", "--github-ref", "v2.0.0", "--github-path", ".",
		"--github-api-url", "http://127.0.0.1:8080/", "--cache-ttl", "30s", "--max-file-size", "4096", "--cache-dir", "/tmp/fp"}
	fromFlags := githubSettings{RepoURL: "other/repo", Ref: "v2.0.0", Path: ".", APIURL: "http://127.0.0.1:8080/",
		CacheDir: "/tmp/fp", CacheTTL: 30 * time.Second, MaxFileSize: 4096}
	with := func(s githubSettings, edit func(*githubSettings)) githubSettings { edit(&s); return s }

	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    githubSettings
		wantErr []string // substrings of the error; none: no error
	}{
		{name: "defaults", want: defaults},
		{name: "from the environment", env: fullEnv, want: fromEnv},
		{name: "flags override the environment", env: fullEnv, args: flags,
			// The token is never a flag: it still comes from GITHUB_PAT.
			want: with(fromFlags, func(s *githubSettings) { s.Token = fullEnv["GITHUB_PAT"] })},
		{name: "flags alone", args: flags, want: fromFlags},
		{name: "empty variables are unset",
			env:  map[string]string{"GITHUB_TEMPLATES_PATH": "", "CACHE_TTL_MS": "", "MAX_FILE_SIZE": "", "GITHUB_REF": ""},
			want: defaults},
		{name: "CACHE_TTL_MS of one millisecond", env: map[string]string{"CACHE_TTL_MS": "1"},
			want: with(defaults, func(s *githubSettings) { s.CacheTTL = time.Millisecond })},
		{name: "CACHE_TTL_MS not a number", env: map[string]string{"CACHE_TTL_MS": "15m"},
			want: defaults, wantErr: []string{`CACHE_TTL_MS="15m"`, "positive number of milliseconds", "900000"}},
		{name: "CACHE_TTL_MS zero", env: map[string]string{"CACHE_TTL_MS": "0"},
			want: defaults, wantErr: []string{`CACHE_TTL_MS="0"`, "milliseconds"}},
		{name: "CACHE_TTL_MS negative", env: map[string]string{"CACHE_TTL_MS": "-5"},
			want: defaults, wantErr: []string{`CACHE_TTL_MS="-5"`, "milliseconds"}},
		{name: "MAX_FILE_SIZE not a number", env: map[string]string{"MAX_FILE_SIZE": "100KB"},
			want: defaults, wantErr: []string{`MAX_FILE_SIZE="100KB"`, "positive integer", "102400"}},
		{name: "MAX_FILE_SIZE zero", env: map[string]string{"MAX_FILE_SIZE": "0"},
			want: defaults, wantErr: []string{`MAX_FILE_SIZE="0"`, "positive integer"}},
		{name: "every bad value is reported", env: map[string]string{"MAX_FILE_SIZE": "-1", "CACHE_TTL_MS": "soon"},
			want: defaults, wantErr: []string{"MAX_FILE_SIZE", "CACHE_TTL_MS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := registerGitHub(t, tt.env, tt.args...)
			if diff := cmp.Diff(tt.want, githubPart(c)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tt.wantErr)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// leakToken looks like a real token, so that pattern-based redaction is
// exercised as well.
const leakToken = "ghp_T0kenThatMustNeverLeak0123456789abcd"

func TestGitHubTokenIsNeverAFlag(t *testing.T) {
	// Command lines are visible to every user of the machine, and -h
	// prints flag defaults: the token must be neither, nor shown inside a
	// URL taken from the environment.
	const token = leakToken
	env := map[string]string{
		"GITHUB_PAT":      token,
		"GITHUB_REPO_URL": "https://x:" + token + "@github.com/acme/prompts",
		"GITHUB_API_URL":  "https://me:" + "hunter2" + "@ghe.example.com/api/v3?access_token=" + token,
	}
	c, fs, err := registerGitHub(t, env)
	if err != nil || c.GitHubToken != token {
		t.Fatalf("token = %q, %v; want it from GITHUB_PAT", c.GitHubToken, err)
	}
	// The value itself is kept as given: the GitHub source refuses it
	// with an explanation.
	if c.GitHubRepoURL != env["GITHUB_REPO_URL"] || c.GitHubAPIURL != env["GITHUB_API_URL"] {
		t.Errorf("URLs = %q, %q; want them as given", c.GitHubRepoURL, c.GitHubAPIURL)
	}
	var usage bytes.Buffer
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasSuffix(f.Name, "pat") || strings.Contains(f.Name, "token") {
			t.Errorf("flag -%s would put a GitHub token on the command line", f.Name)
		}
	})
	if strings.Contains(usage.String(), token[4:]) || strings.Contains(usage.String(), "hunter2") {
		t.Errorf("the usage text shows the credentials:\n%s", usage.String())
	}
	if !strings.Contains(usage.String(), "https://github.com/acme/prompts") {
		t.Errorf("the usage text lacks the (redacted) default repository:\n%s", usage.String())
	}
}

func TestCheckGitHubValues(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string // substring; "" means valid
	}{
		{name: "defaults are valid"},
		{name: "a repository alone is valid", env: map[string]string{"GITHUB_REPO_URL": "acme/prompts"}},
		{name: "zero cache TTL", args: []string{"--cache-ttl", "0s"}, wantErr: "--cache-ttl must be positive"},
		{name: "negative cache TTL", args: []string{"--cache-ttl", "-1m"}, wantErr: "--cache-ttl must be positive"},
		{name: "zero file size", args: []string{"--max-file-size", "0"}, wantErr: "--max-file-size must be positive"},
		{name: "a folder and a repository", env: map[string]string{"GITHUB_REPO_URL": "acme/prompts", "TEMPLATES_DIR": "/srv/p"},
			wantErr: "unset TEMPLATES_DIR / --templates or GITHUB_REPO_URL / --github-repo"},
		{name: "a folder and a repository URL with a token", env: map[string]string{"GITHUB_REPO_URL": "https://x:" + leakToken + "@github.com/acme/prompts", "TEMPLATES_DIR": "/srv/p"},
			wantErr: "GitHub repository (https://github.com/acme/prompts) are set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := registerGitHub(t, tt.env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want an error mentioning %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), leakToken[4:]):
				t.Errorf("Check shows the token: %v", err)
			}
		})
	}
}
