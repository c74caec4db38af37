package config

import (
	"flag"
	"io"
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
		{"no cache time", []string{"--cache-ttl", "0s"}, []string{"--cache-ttl must be positive (got 0s)", "--cache-ttl 15m"}},
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
