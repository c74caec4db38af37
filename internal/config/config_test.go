package config

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func envOf(vars map[string]string) Env {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names // VisitAll goes in lexical order
}

// TestRegisterGroups: each group registers exactly its flags, and reports
// bad environment values only for the variables it reads, so a command is
// never refused over a setting it does not use.
func TestRegisterGroups(t *testing.T) {
	source := []string{"cache-dir", "cache-ttl", "github-api-url", "github-labels", "github-path", "github-ref", "github-repo",
		"github-version-lookups", "log-format", "log-level", "max-file-size", "source", "templates"}
	write := []string{"allow-write", "write-allow"}
	all := append(append([]string{}, source...), write...)
	slices.Sort(all)
	bad := map[string]string{"MAX_FILE_SIZE": "big", "CACHE_TTL_MS": "soon", "WRITE_ENABLED": "maybe", "GITHUB_VERSION_LOOKUPS": "many"}
	tests := []struct {
		name     string
		register func(*flag.FlagSet, *Config, Env) error
		flags    []string
		badVars  []string // the variables of bad the group complains about
	}{
		{"Register", Register, all, []string{"MAX_FILE_SIZE", "CACHE_TTL_MS", "WRITE_ENABLED", "GITHUB_VERSION_LOOKUPS"}},
		{"RegisterSource", RegisterSource, source, []string{"MAX_FILE_SIZE", "CACHE_TTL_MS", "GITHUB_VERSION_LOOKUPS"}},
		{"RegisterWrite", RegisterWrite, write, []string{"WRITE_ENABLED"}},
		{"RegisterFileSize", RegisterFileSize, []string{"max-file-size"}, []string{"MAX_FILE_SIZE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet(tt.name, flag.ContinueOnError)
			if err := tt.register(fs, &Config{}, envOf(nil)); err != nil {
				t.Fatalf("empty environment: %v", err)
			}
			if got := flagNames(fs); !slices.Equal(got, tt.flags) {
				t.Errorf("flags %v, want %v", got, tt.flags)
			}

			err := tt.register(flag.NewFlagSet(tt.name, flag.ContinueOnError), &Config{}, envOf(bad))
			if err == nil {
				t.Fatalf("bad environment %v: no error", bad)
			}
			for name := range bad {
				if got, want := strings.Contains(err.Error(), name), slices.Contains(tt.badVars, name); got != want {
					t.Errorf("error names %s: %v, want %v:\n%v", name, got, want, err)
				}
			}
		})
	}
}

// TestRegisterDefaults: defaults come from the environment, an empty
// variable counts as unset, and a flag overrides both.
func TestRegisterDefaults(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(c *Config) bool
	}{
		{"built-in defaults", nil, nil, func(c *Config) bool {
			return c.MaxFileSize == 102400 && c.LogLevel == "info" && c.LogFormat == "text" &&
				c.GitHubPath == "templates" && c.CacheTTL == 15*time.Minute && !c.AllowWrite && c.WritePatterns == "*" &&
				c.VersionLookups == 20
		}},
		{"from the environment", map[string]string{"MAX_FILE_SIZE": "2048", "LOG_LEVEL": "debug", "CACHE_TTL_MS": "1500",
			"WRITE_ENABLED": "true", "WRITE_ALLOW": "team_*", "TEMPLATES_DIR": "/srv/prompts", "GITHUB_PAT": "secret",
			"GITHUB_VERSION_LOOKUPS": "5"}, nil,
			func(c *Config) bool {
				return c.VersionLookups == 5 && c.MaxFileSize == 2048 && c.LogLevel == "debug" && c.CacheTTL == 1500*time.Millisecond &&
					c.AllowWrite && c.WritePatterns == "team_*" && c.TemplatesDir == "/srv/prompts" && c.GitHubToken == "secret"
			}},
		{"empty means unset", map[string]string{"LOG_LEVEL": "", "GITHUB_TEMPLATES_PATH": "", "WRITE_ALLOW": ""}, nil,
			func(c *Config) bool {
				return c.LogLevel == "info" && c.GitHubPath == "templates" && c.WritePatterns == "*"
			}},
		{"flags win", map[string]string{"MAX_FILE_SIZE": "2048", "WRITE_ENABLED": "true"},
			[]string{"--max-file-size", "4096", "--allow-write=false", "--github-version-lookups", "60"},
			func(c *Config) bool { return c.MaxFileSize == 4096 && !c.AllowWrite && c.VersionLookups == 60 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet(tt.name, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var c Config
			if err := Register(fs, &c, envOf(tt.env)); err != nil {
				t.Fatalf("Register: %v", err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tt.check(&c) {
				t.Errorf("unexpected config: %+v", c)
			}
		})
	}
}

// TestUnreplacedPlaceholders: a bundle's settings form left empty reaches
// the server as the literal "${user_config.…}" (Claude Desktop does not
// replace a variable without a value); those four settings then count as
// unset, as an empty value does, and the debug log says which were
// ignored, without their values.
func TestUnreplacedPlaceholders(t *testing.T) {
	for v, want := range map[string]bool{
		"${user_config.templates_dir}":      true,
		"${user_config.x}":                  true,
		"${user_config.}":                   true,
		"":                                  false,
		"/srv/prompts":                      false,
		"${HOME}/prompts":                   false,
		"${user_config.a}/${user_config.b}": false,
		"/srv/${user_config.dir}":           false,
		"${user_config.dir}/templates":      false,
	} {
		if got := Unreplaced(v); got != want {
			t.Errorf("Unreplaced(%q) = %v, want %v", v, got, want)
		}
	}

	env := map[string]string{
		"TEMPLATES_DIR":   "${user_config.templates_dir}",
		"GITHUB_REPO_URL": "${user_config.github_repo_url}",
		"GITHUB_PAT":      "${user_config.github_token}",
		"GITHUB_REF":      "",
		"LOG_LEVEL":       "debug",
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c Config
	if err := Register(fs, &c, envOf(env)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.TemplatesDir != "" || c.GitHubRepoURL != "" || c.GitHubToken != "" || c.GitHubRef != "" {
		t.Errorf("placeholders were taken as values: %+v", c)
	}
	// Both a folder and a repository would be refused; neither is set.
	if err := c.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	var log strings.Builder
	c.Logger(&log).Info("started")
	out := log.String()
	for _, name := range []string{"TEMPLATES_DIR", "GITHUB_REPO_URL", "GITHUB_PAT"} {
		if !strings.Contains(out, "level=DEBUG msg=\"ignored an unreplaced settings placeholder: the setting is unset\" variable="+name+"\n") {
			t.Errorf("debug log does not name %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "GITHUB_REF") || strings.Contains(out, "${user_config") {
		t.Errorf("debug log names an empty setting or a placeholder's text:\n%s", out)
	}
	if !strings.Contains(out, "msg=started") {
		t.Errorf("logger lost its own lines:\n%s", out)
	}

	// At the default level the notes stay out of the log, and real values
	// pass through untouched.
	env = map[string]string{"TEMPLATES_DIR": "/srv/prompts", "GITHUB_PAT": "${user_config.github_token}"}
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	c = Config{}
	if err := Register(fs, &c, envOf(env)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if c.TemplatesDir != "/srv/prompts" || c.GitHubToken != "" {
		t.Errorf("TemplatesDir %q, GitHubToken %q", c.TemplatesDir, c.GitHubToken)
	}
	log.Reset()
	c.Logger(&log).Debug("hidden")
	if log.Len() != 0 {
		t.Errorf("info logger wrote debug lines:\n%s", log.String())
	}
}
