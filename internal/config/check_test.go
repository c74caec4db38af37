package config

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkArgs registers every flag of serve, parses args and checks the
// result.
func checkArgs(t *testing.T, env map[string]string, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	if err := Register(fs, &c, envOf(env)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := RegisterServe(fs, &c, envOf(env)); err != nil {
		t.Fatalf("RegisterServe: %v", err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return &c, c.Check()
}

// TestCheckSaysHowToFix: each refused value is answered with what is
// wrong and a fix that works as written.
func TestCheckSaysHowToFix(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"sse is served by http", []string{"--transport", "sse"},
			[]string{`--transport "sse" is not stdio or http`, "legacy SSE", "use --transport http", "/sse"}},
		{"streamable http is served by http", []string{"--transport", "streamable-http"},
			[]string{"Streamable HTTP", "use --transport http", "/mcp"}},
		{"upper case", []string{"--transport", "HTTP"}, []string{"lower case, --transport http"}},
		{"a typo", []string{"--transport", "stdoi"}, []string{"did you mean --transport stdio?"}},
		{"anything else", []string{"--transport", "websocket"}, []string{"use --transport stdio", "or --transport http"}},
		{"a port alone", []string{"--transport", "http", "--addr", "3001"},
			[]string{`--addr "3001" is not HOST:PORT`, "--addr 127.0.0.1:3001", "make run ADDR=127.0.0.1:3001"}},
		{"a host alone", []string{"--transport", "http", "--addr", "localhost"},
			[]string{`--addr "localhost" is not HOST:PORT`, "--addr 127.0.0.1:3000"}},
		{"no port", []string{"--transport", "http", "--addr", "localhost:"},
			[]string{"--addr localhost:3000", "make run ADDR=localhost:3000"}},
		{"a log level", []string{"--log-level", "verbose"}, []string{`--log-level / LOG_LEVEL: log level "verbose" is not debug, info, warn or error`}},
		{"a log format", []string{"--log-format", "yaml"}, []string{`--log-format / LOG_FORMAT "yaml" is not text or json`}},
		{"no cache time", []string{"--cache-ttl", "0s"}, []string{"--cache-ttl must be positive (got 0s)", "--cache-ttl 15m"}},
		{"issuer and token", []string{"--transport", "http", "--public-url", "https://p.example.com", "--auth-issuer", "https://id.example.com", "--auth-token", "t"},
			[]string{"--auth-issuer (FLOWYPROMPT_AUTH_ISSUER) and --auth-token (MCP_AUTH_TOKEN) are both set", "unset one of them"}},
		{"issuer without a public URL", []string{"--transport", "http", "--auth-issuer", "https://id.example.com"},
			[]string{"--auth-issuer needs --public-url", "--public-url https://prompts.example.com"}},
		{"audience without an issuer", []string{"--auth-audience", "https://api.example.com"},
			[]string{"--auth-audience is set without --auth-issuer"}},
		{"introspection without an issuer", []string{"--auth-introspection", "https://id.example.com/introspect"},
			[]string{"--auth-introspection (FLOWYPROMPT_AUTH_INTROSPECTION) is set without --auth-issuer"}},
		{"introspection without client credentials", []string{"--transport", "http", "--public-url", "https://p.example.com",
			"--auth-issuer", "https://id.example.com", "--auth-introspection", "https://id.example.com/introspect"},
			[]string{"--auth-introspection needs this server's client credentials", "FLOWYPROMPT_AUTH_CLIENT_ID and FLOWYPROMPT_AUTH_CLIENT_SECRET"}},
		{"policy without an issuer", []string{"--transport", "http", "--auth-policy", "policy.json"},
			[]string{"--auth-policy (FLOWYPROMPT_AUTH_POLICY) is set without --auth-issuer", "set --auth-issuer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkArgs(t, nil, tt.args...)
			if err == nil {
				t.Fatalf("Check accepted %v", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestIssuerWithReplicas: an authorization server and replicas go
// together: a forwarded request carries its member to the replica holding
// its session.
func TestIssuerWithReplicas(t *testing.T) {
	c, err := checkArgs(t, nil, "--transport", "http", "--public-url", "https://p.example.com",
		"--auth-issuer", "https://id.example.com", "--nats", "nats://127.0.0.1:4222")
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if c.AuthIssuer != "https://id.example.com" || c.NATSURL != "nats://127.0.0.1:4222" {
		t.Errorf("issuer %q, NATS %q", c.AuthIssuer, c.NATSURL)
	}
}

// TestHomeExpanded: a folder setting that starts with ~ (quoted for the
// shell, or set where no shell runs) is the user's home folder, as a
// shell would have made it; another user's ~NAME and a missing HOME are
// refused with the fix.
func TestHomeExpanded(t *testing.T) {
	home := filepath.Join(string(filepath.Separator)+"home", "ada")
	withHome := map[string]string{"HOME": home, "USERPROFILE": home}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		got  func(c *Config) string
		want string
	}{
		{"TEMPLATES_DIR", map[string]string{"TEMPLATES_DIR": "~/prompts"}, nil,
			func(c *Config) string { return c.TemplatesDir }, filepath.Join(home, "prompts")},
		{"--templates", nil, []string{"--templates", "~/team/prompts/"},
			func(c *Config) string { return c.TemplatesDir }, filepath.Join(home, "team", "prompts")},
		{"the home folder itself", nil, []string{"--templates", "~"},
			func(c *Config) string { return c.TemplatesDir }, home},
		{"--source dir=", nil, []string{"--source", "name=mine,dir=~/prompts"},
			func(c *Config) string { return c.Sources[0].Location }, filepath.Join(home, "prompts")},
		{"FLOWYPROMPT_SOURCES dir=", map[string]string{SourcesEnv: "name=ex,examples;name=mine,dir=~/prompts"}, nil,
			func(c *Config) string { return c.Sources[1].Location }, filepath.Join(home, "prompts")},
		{"FLOWYPROMPT_CACHE_DIR", map[string]string{"FLOWYPROMPT_CACHE_DIR": "~/.cache/fp"}, nil,
			func(c *Config) string { return c.CacheDir }, filepath.Join(home, ".cache", "fp")},
		{"a ~ inside the path stays", nil, []string{"--templates", "./~/prompts"},
			func(c *Config) string { return c.TemplatesDir }, "./~/prompts"},
		{"an absolute path stays", nil, []string{"--templates", "/srv/prompts"},
			func(c *Config) string { return c.TemplatesDir }, "/srv/prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := maps.Clone(withHome)
			maps.Copy(env, tt.env)
			c, err := checkArgs(t, env, tt.args...)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if got := tt.got(c); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	refused := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"another user's home", withHome, []string{"--templates", "~bob/prompts"},
			[]string{"--templates / TEMPLATES_DIR", `"~bob/prompts" starts with ~bob`, "give the full path", "./~bob/prompts"}},
		{"no home", nil, []string{"--templates", "~/prompts"},
			[]string{"--templates / TEMPLATES_DIR", "is not set", "give the full path"}},
		{"a source's dir without a home", nil, []string{"--source", "name=mine,dir=~/prompts"},
			[]string{"--source mine dir=", "is not set"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkArgs(t, tt.env, tt.args...)
			if err == nil {
				t.Fatalf("Check accepted %v", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestIntrospectionFromEnvironment: the introspection endpoint comes from
// its flag or FLOWYPROMPT_AUTH_INTROSPECTION, the client credentials from
// the environment alone, and the secret never shows when the
// configuration is printed.
func TestIntrospectionFromEnvironment(t *testing.T) {
	env := map[string]string{
		"FLOWYPROMPT_AUTH_ISSUER":        "https://id.example.com",
		"FLOWYPROMPT_AUTH_INTROSPECTION": "https://id.example.com/introspect",
		"FLOWYPROMPT_AUTH_CLIENT_ID":     "flowyprompt",
		"FLOWYPROMPT_AUTH_CLIENT_SECRET": "s3cr3t-never-shown",
	}
	c, err := checkArgs(t, env, "--transport", "http", "--public-url", "https://p.example.com")
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	got := []string{c.AuthIntrospection, c.AuthClientID, string(c.AuthClientSecret)}
	want := []string{"https://id.example.com/introspect", "flowyprompt", "s3cr3t-never-shown"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if s := fmt.Sprintf(format, c); strings.Contains(s, "s3cr3t") {
			t.Errorf("%s of the configuration shows the client secret", format)
		}
	}
}
