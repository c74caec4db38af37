package httpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// keyRecorder is a SessionRouter that holds every session elsewhere and
// notes the client key of each request it is asked to forward.
type keyRecorder struct{ keys []string }

func (k *keyRecorder) Serve(http.Handler)          {}
func (k *keyRecorder) Hold(string) (func(), error) { return func() {}, nil }
func (k *keyRecorder) Connected() bool             { return true }
func (k *keyRecorder) Forward(w http.ResponseWriter, r *http.Request, _ string, _ []byte) bool {
	k.keys = append(k.keys, httpserver.ClientKey(r))
	w.WriteHeader(http.StatusOK)
	return true
}

// TestForwardedRequestsCountTheirClient: the key a forwarded request's
// client is counted under by the forwarding bounds
// (--max-forwarded-per-client) is the one the transports count sessions
// by: behind a trusted proxy each client is its own address, with a
// token the token, never the token itself.
func TestForwardedRequestsCountTheirClient(t *testing.T) {
	const token = "s3cret-token-value"
	type from struct{ remote, xff string }
	tests := []struct {
		name string
		opts httpserver.Options
		a, b from
		same bool
	}{
		{name: "behind a trusted proxy, two clients are two",
			opts: httpserver.Options{TrustedProxies: []string{"127.0.0.1"}},
			a:    from{"127.0.0.1:4001", "203.0.113.7"}, b: from{"127.0.0.1:4002", "203.0.113.8"}},
		{name: "behind a trusted proxy, one client from two connections is one",
			opts: httpserver.Options{TrustedProxies: []string{"127.0.0.1"}},
			a:    from{"127.0.0.1:4001", "203.0.113.7"}, b: from{"127.0.0.1:4002", "203.0.113.7"}, same: true},
		{name: "an untrusted peer's X-Forwarded-For is not believed",
			a: from{"127.0.0.1:4001", "203.0.113.7"}, b: from{"127.0.0.1:4002", "203.0.113.8"}, same: true},
		{name: "with a token, the token's holder is one client from anywhere",
			opts: httpserver.Options{AuthToken: token, TrustedProxies: []string{"127.0.0.1"}},
			a:    from{"127.0.0.1:4001", "203.0.113.7"}, b: from{"127.0.0.1:4002", "198.51.100.9"}, same: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
			rec := &keyRecorder{}
			tc.opts.Sessions = rec
			srv, err := httpserver.New(e, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []from{tc.a, tc.b} {
				r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:3000/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				r.RemoteAddr = f.remote
				r.Header.Set("X-Forwarded-For", f.xff)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Mcp-Session-Id", strings.Repeat("ab", 16))
				if tc.opts.AuthToken != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				w := httptest.NewRecorder()
				srv.Handler().ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Fatalf("the request was not forwarded: %d %s", w.Code, w.Body)
				}
			}
			if len(rec.keys) != 2 {
				t.Fatalf("forwarded %d requests, want 2", len(rec.keys))
			}
			if got := rec.keys[0] == rec.keys[1]; got != tc.same {
				t.Errorf("keys %q and %q: same = %v, want %v", rec.keys[0], rec.keys[1], got, tc.same)
			}
			for _, k := range rec.keys {
				if strings.Contains(k, token) {
					t.Errorf("a client key shows the token: %q", k)
				}
			}
		})
	}
}
