package github

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

func TestParseRepoURL(t *testing.T) {
	t.Parallel()
	valid := []struct {
		in                string
		host, owner, repo string
	}{
		{"https://github.com/acme/prompts", "github.com", "acme", "prompts"},
		{"https://github.com/acme/prompts.git", "github.com", "acme", "prompts"},
		{"https://github.com/acme/prompts/", "github.com", "acme", "prompts"},
		{"http://github.com/acme/prompts", "github.com", "acme", "prompts"},
		{"https://www.github.com/Acme-Corp/my.prompts_v2", "github.com", "Acme-Corp", "my.prompts_v2"},
		{"  https://github.com/acme/prompts  ", "github.com", "acme", "prompts"},
		{"acme/prompts", "github.com", "acme", "prompts"},
		{"github.com/acme/prompts", "github.com", "acme", "prompts"},
		{"git@github.com:acme/prompts.git", "github.com", "acme", "prompts"},
		{"https://ghe.example.com/team/prompts", "ghe.example.com", "team", "prompts"},
		{"https://GHE.Example.com:8443/team/prompts", "ghe.example.com:8443", "team", "prompts"},
	}
	for _, tt := range valid {
		host, owner, repo, err := parseRepoURL(tt.in)
		if err != nil || host != tt.host || owner != tt.owner || repo != tt.repo {
			t.Errorf("parseRepoURL(%q) = %q, %q, %q, %v; want %q, %q, %q", tt.in, host, owner, repo, err, tt.host, tt.owner, tt.repo)
		}
	}

	invalid := []struct {
		in      string
		wantWhy string
	}{
		{"", "needs the repository"},
		{"acme", "exactly an owner and a repository"},
		{"https://github.com/acme", "exactly an owner and a repository"},
		{"https://github.com/acme/prompts/tree/main/templates", "GITHUB_TEMPLATES_PATH"},
		{"ftp://github.com/acme/prompts", `"ftp" scheme`},
		{"https://github.com/-acme/prompts", "owner name"},
		{"https://github.com/acme/..", "repository name"},
		{"https://github.com/acme/pro mpts", "repository name"},
		{"https://github.com/acme/prompts?tab=readme", "query"},
		{"https:///acme/prompts", "no host"},
		{"git@github.com", "git@HOST:OWNER/REPO"},
		{"https://x-access-token:" + testToken + "@github.com/acme/prompts", "would end up in logs"},
		{"https://" + testToken + "@github.com/acme/prompts", "would end up in logs"},
		{"me:hunter2@github.com/acme/prompts", "would end up in logs"},
		{"me:" + testToken + "@ghe.example.com/team/prompts", "would end up in logs"},
	}
	for _, tt := range invalid {
		_, _, _, err := parseRepoURL(tt.in)
		f := fault.As(err)
		if f == nil || f.Code != fault.InvalidArgument || f.How == "" {
			t.Errorf("parseRepoURL(%q) error = %v, want an INVALID_ARGUMENT fault with a fix", tt.in, err)
			continue
		}
		if !strings.Contains(f.Error(), tt.wantWhy) {
			t.Errorf("parseRepoURL(%q) = %q, want it to explain %q", tt.in, f.Error(), tt.wantWhy)
		}
		if strings.Contains(f.Error()+f.How, testToken) || strings.Contains(f.Error()+f.How, "hunter2") {
			t.Errorf("parseRepoURL(%q) echoed the credentials: %q", tt.in, f.Error())
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	base := Config{RepoURL: "https://github.com/acme/prompts"}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // one substring of What per expected problem; none: valid
	}{
		{name: "minimal config is valid"},
		{name: "zero values take defaults", edit: func(c *Config) { c.TTL, c.MaxFileSize, c.Path = 0, 0, "" }},
		{name: "everything set", edit: func(c *Config) {
			c.Token, c.Ref, c.Path, c.APIURL, c.TTL, c.MaxFileSize = "github_pat_x", "release/v2", "prompts/team", "https://ghe.example.com/api/v3", time.Minute, 1000
		}},
		{name: "repository root", edit: func(c *Config) { c.Path = "." }},
		{name: "a hidden folder", edit: func(c *Config) { c.Path = ".github/prompts" }},
		{name: "plain http on this machine", edit: func(c *Config) { c.APIURL = "http://localhost:8080/api/v3" }},
		{name: "plain http on loopback IPv6", edit: func(c *Config) { c.APIURL = "http://[::1]:8080/" }},
		{name: "plain http elsewhere", edit: func(c *Config) { c.APIURL = "http://ghe.example.com/api/v3" }, want: []string{"GITHUB_API_URL \"http://ghe.example.com/api/v3\" uses plain http"}},
		{name: "plain http to a look-alike of localhost", edit: func(c *Config) { c.APIURL = "http://localhost.example.com/" }, want: []string{"uses plain http"}},
		{name: "repository URL with credentials and no scheme", edit: func(c *Config) { c.RepoURL = "me:" + testToken + "@github.com/acme/prompts" }, want: []string{"GITHUB_REPO_URL contains credentials"}},
		{name: "missing repository", edit: func(c *Config) { c.RepoURL = "" }, want: []string{"GITHUB_REPO_URL is not set"}},
		{name: "negative ttl", edit: func(c *Config) { c.TTL = -time.Second }, want: []string{"CACHE_TTL_MS is -1000"}},
		{name: "negative max size", edit: func(c *Config) { c.MaxFileSize = -1 }, want: []string{"MAX_FILE_SIZE is -1"}},
		{name: "path escapes", edit: func(c *Config) { c.Path = "../secrets" }, want: []string{"GITHUB_TEMPLATES_PATH"}},
		{name: "path not clean", edit: func(c *Config) { c.Path = "a/./b" }, want: []string{"GITHUB_TEMPLATES_PATH"}},
		{name: "path with a backslash", edit: func(c *Config) { c.Path = `a\b` }, want: []string{"GITHUB_TEMPLATES_PATH"}},
		{name: "bad ref", edit: func(c *Config) { c.Ref = "feature..x" }, want: []string{"GITHUB_REF"}},
		{name: "ref with space", edit: func(c *Config) { c.Ref = "my branch" }, want: []string{"GITHUB_REF"}},
		{name: "ref option-like", edit: func(c *Config) { c.Ref = "-rf" }, want: []string{"GITHUB_REF"}},
		{name: "api url relative", edit: func(c *Config) { c.APIURL = "api.github.com" }, want: []string{"GITHUB_API_URL"}},
		{name: "api url with credentials", edit: func(c *Config) { c.APIURL = "https://user:" + testToken + "@ghe.example.com/api/v3" }, want: []string{"GITHUB_API_URL contains credentials"}},
		{name: "api url with query", edit: func(c *Config) { c.APIURL = "https://ghe.example.com/api/v3?access_token=" + testToken }, want: []string{"GITHUB_API_URL"}},
		{name: "token with a line break", edit: func(c *Config) { c.Token = testToken + "\n" }, want: []string{"GITHUB_PAT contains whitespace"}},
		{name: "several problems are all reported", edit: func(c *Config) { c.RepoURL, c.TTL, c.MaxFileSize = "nope", -1, -1 },
			want: []string{"GITHUB_REPO_URL", "CACHE_TTL_MS", "MAX_FILE_SIZE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			var faults []*fault.Error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					faults = append(faults, fault.As(e))
				}
			} else {
				faults = append(faults, fault.As(err))
			}
			if len(faults) != len(tt.want) {
				t.Fatalf("Validate() reported %d problems (%v), want %d", len(faults), err, len(tt.want))
			}
			for i, f := range faults {
				if f == nil || f.Code != fault.InvalidArgument || f.Why == "" || f.How == "" {
					t.Errorf("problem %d = %#v, want INVALID_ARGUMENT with what, why and how", i, f)
					continue
				}
				if !strings.Contains(f.What, tt.want[i]) {
					t.Errorf("problem %d what = %q, want it to contain %q", i, f.What, tt.want[i])
				}
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("Validate echoed the token: %v", err)
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want settings
	}{
		{
			name: "github.com",
			cfg:  Config{RepoURL: "acme/prompts"},
			want: settings{host: "github.com", owner: "acme", repo: "prompts", webURL: "https://github.com/acme/prompts",
				apiURL: DefaultAPIURL, path: "templates", ttl: DefaultTTL, maxFileSize: DefaultMaxFileSize, versionLookups: DefaultVersionLookups, tokenVar: "GITHUB_PAT"},
		},
		{
			name: "enterprise host derives its API URL",
			cfg:  Config{RepoURL: "https://ghe.example.com/team/prompts.git", Path: "/prompts/", Ref: " v1.0.0 "},
			want: settings{host: "ghe.example.com", owner: "team", repo: "prompts", webURL: "https://ghe.example.com/team/prompts",
				apiURL: "https://ghe.example.com/api/v3/", path: "prompts", ref: "v1.0.0", ttl: DefaultTTL, maxFileSize: DefaultMaxFileSize, versionLookups: DefaultVersionLookups, tokenVar: "GITHUB_PAT"},
		},
		{
			name: "explicit API URL is used as given, with a trailing slash",
			cfg:  Config{RepoURL: "https://ghe.example.com/team/prompts", APIURL: "http://127.0.0.1:9999", Path: "."},
			want: settings{host: "ghe.example.com", owner: "team", repo: "prompts", webURL: "https://ghe.example.com/team/prompts",
				apiURL: "http://127.0.0.1:9999/", path: "", ttl: DefaultTTL, maxFileSize: DefaultMaxFileSize, versionLookups: DefaultVersionLookups, tokenVar: "GITHUB_PAT"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got.httpClient == nil || got.httpClient.Timeout != DefaultHTTPTimeout || got.logger == nil || got.now == nil {
				t.Error("defaults for HTTP client, logger or clock missing")
			}
			if got.api == nil || got.api.String() != got.apiURL {
				t.Errorf("api = %v, want the URL apiURL says (%s)", got.api, got.apiURL)
			}
			got.httpClient, got.logger, got.now, got.api = nil, nil, nil, nil
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(settings{})); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		token string
		ttl   time.Duration
		want  int
	}{
		{token: "ghp_abc", want: 0},
		{token: "github_pat_abc", want: 0},
		{token: "ghs_actionsToken", want: 0},
		{token: "", want: 0},
		{token: "glpat-notgithub", want: 1},
		{token: "0123456789abcdef0123456789abcdef01234567", want: 1}, // an old-style 40-hex token
		{token: "ghp_abc", ttl: time.Second, want: 1},
	}
	for _, tt := range tests {
		w := Config{RepoURL: "acme/prompts", Token: tt.token, TTL: tt.ttl}.Warnings()
		if len(w) != tt.want {
			t.Errorf("Warnings(token %q, ttl %v) = %q, want %d", tt.token, tt.ttl, w, tt.want)
		}
		for _, s := range w {
			if tt.token != "" && strings.Contains(s, tt.token) {
				t.Errorf("warning echoes the token: %q", s)
			}
		}
	}
	// A token with an unknown prefix is only a warning.
	if err := (Config{RepoURL: "acme/prompts", Token: "glpat-notgithub"}).Validate(); err != nil {
		t.Errorf("unknown token prefix refused: %v", err)
	}
}

func TestIsCommitSHA(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef01234567":                         true,
		"0123456789ABCDEF0123456789ABCDEF01234567":                         true,
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"0123456": false,
		"main":    false,
		"":        false,
		"0123456789abcdef0123456789abcdef0123456g": false,
	} {
		if got := IsCommitSHA(ref); got != want {
			t.Errorf("IsCommitSHA(%q) = %v, want %v", ref, got, want)
		}
	}
}

func FuzzParseRepoURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/prompts", "acme/prompts", "git@github.com:a/b.git", "https://u:p@h/a/b",
		"https://ghe.example.com/team/prompts.git/", "github.com/a/b", "://", "a//b", "https://github.com/a/b?x#y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, owner, repo, err := parseRepoURL(s)
		if err != nil {
			if fault.As(err) == nil {
				t.Fatalf("error %v is not a fault", err)
			}
			if errors.Is(err, ErrNotFound) {
				t.Fatal("config error matches a GitHub sentinel")
			}
			return
		}
		if !ownerRE.MatchString(owner) || !repoRE.MatchString(repo) || repo == "." || repo == ".." || host == "" {
			t.Fatalf("parseRepoURL(%q) accepted host %q owner %q repo %q", s, host, owner, repo)
		}
		// The canonical forms parse back to the same repository.
		h2, o2, r2, err := parseRepoURL("https://" + host + "/" + owner + "/" + repo)
		if err != nil || h2 != host || o2 != owner || r2 != repo {
			t.Fatalf("canonical URL of %q does not round-trip: %q %q %q %v", s, h2, o2, r2, err)
		}
	})
}
