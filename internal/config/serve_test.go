package config

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestServeClientCaps: the caps per client and the trusted proxies come
// from their defaults, MCP_TRUSTED_PROXIES, and the flags, a flag's list
// replacing the environment's.
func TestServeClientCaps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		args      []string
		perClient int
		proxies   []string
	}{
		{name: "defaults", perClient: 1000},
		{name: "environment", env: map[string]string{"MCP_TRUSTED_PROXIES": " 10.0.0.0/8, ::1 ,"}, perClient: 1000,
			proxies: []string{"10.0.0.0/8", "::1"}},
		{name: "flags win", env: map[string]string{"MCP_TRUSTED_PROXIES": "10.0.0.0/8"},
			args: []string{"--trusted-proxies", "127.0.0.1", "--max-sessions-per-client", "5"}, perClient: 5, proxies: []string{"127.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var c Config
			if err := RegisterServe(fs, &c, envOf(tc.env)); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if c.MaxSessionsPerClient != tc.perClient || !slices.Equal(c.TrustedProxies, tc.proxies) {
				t.Errorf("per client %d, proxies %q; want %d, %q", c.MaxSessionsPerClient, c.TrustedProxies, tc.perClient, tc.proxies)
			}
		})
	}
}
