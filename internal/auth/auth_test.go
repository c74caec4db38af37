package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

// issuer serves its metadata at RFC 8414's location only (the issuer has a
// path, as Keycloak's realms do), or names another issuer there.
func issuer(t *testing.T, key *rsa.PrivateKey, named func(self string) string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server/realms/team", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": named(srv.URL + "/realms/team"), "jwks_uri": srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func sign(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ready(t *testing.T, v *auth.Verifier) {
	t.Helper()
	select {
	case <-v.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the issuer was not reached")
	}
}

// TestVerifyRFC8414: metadata from RFC 8414's location, and the member and
// scopes read from scope or scp.
func TestVerifyRFC8414(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := issuer(t, key, func(self string) string { return self })
	iss := srv.URL + "/realms/team"
	v, err := auth.New(auth.Options{Issuer: iss, Audience: "https://p.example.com/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	ready(t, v)
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": iss, "sub": "u1", "aud": []string{"other", "https://p.example.com/mcp"}, "exp": time.Now().Add(time.Hour).Unix()}
		for k, x := range extra {
			c[k] = x
		}
		return c
	}
	tests := []struct {
		name   string
		claims map[string]any
		want   *auth.Member
	}{
		{"scope", base(map[string]any{"scope": "prompts:read prompts:write", "email": "u1@example.com"}),
			&auth.Member{Issuer: iss, Subject: "u1", Email: "u1@example.com", Scopes: []string{"prompts:read", "prompts:write"}}},
		{"scp list", base(map[string]any{"scp": []string{"prompts:read"}}),
			&auth.Member{Issuer: iss, Subject: "u1", Scopes: []string{"prompts:read"}}},
		{"scp string", base(map[string]any{"scp": "prompts:read prompts:write"}),
			&auth.Member{Issuer: iss, Subject: "u1", Scopes: []string{"prompts:read", "prompts:write"}}},
		{"no scope", base(nil), &auth.Member{Issuer: iss, Subject: "u1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := v.Verify(t.Context(), sign(t, key, tc.claims))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, m, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("member (-want +got):\n%s", d)
			}
			if m.Has(auth.ScopeWrite) != strings.Contains(strings.Join(tc.want.Scopes, " "), auth.ScopeWrite) {
				t.Errorf("Has(%s) = %v", auth.ScopeWrite, m.Has(auth.ScopeWrite))
			}
		})
	}
	if _, err := v.Verify(t.Context(), strings.Repeat("a", auth.MaxTokenBytes+1)); err == nil {
		t.Error("an oversized token was accepted")
	}
}

// TestNotReady: until the issuer's metadata was read, and while it names
// another issuer, every token is refused with ErrNotReady.
func TestNotReady(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := issuer(t, key, func(string) string { return "https://impostor.example.com" })
	v, err := auth.New(auth.Options{Issuer: srv.URL + "/realms/team", Audience: "https://p.example.com/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	tok := sign(t, key, map[string]any{"iss": srv.URL + "/realms/team", "sub": "u1", "aud": "https://p.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix()})
	if _, err := v.Verify(t.Context(), tok); err != auth.ErrNotReady {
		t.Fatalf("Verify: %v, want ErrNotReady", err)
	}
}

// readyWatch is a log handler that tells, when the line saying the issuer
// was reached is written, whether Ready was closed already.
type readyWatch struct {
	ready  func() <-chan struct{}
	closed chan bool
}

func (h *readyWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h *readyWatch) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *readyWatch) WithGroup(string) slog.Handler            { return h }

func (h *readyWatch) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "authorization server reached" {
		select {
		case <-h.ready():
			h.closed <- true
		default:
			h.closed <- false
		}
	}
	return nil
}

// TestReadyAfterItsLine: the line saying the issuer was reached is written
// before Ready is closed, so whoever sees Ready closed finds it in the log.
func TestReadyAfterItsLine(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := issuer(t, key, func(self string) string { return self })
	h := &readyWatch{closed: make(chan bool, 1)}
	v, err := auth.New(auth.Options{Issuer: srv.URL + "/realms/team", Audience: "https://p.example.com/mcp", Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	h.ready = v.Ready
	v.Start(t.Context())
	select {
	case closed := <-h.closed:
		if closed {
			t.Error("Ready was closed before the line saying the issuer was reached was written")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the issuer was not reached")
	}
	ready(t, v)
}

// TestNewRefuses: an issuer that is not an http(s) URL, or no audience.
func TestNewRefuses(t *testing.T) {
	for _, o := range []auth.Options{
		{Issuer: "login.example.com", Audience: "a"},
		{Issuer: "https://login.example.com?x=1", Audience: "a"},
		{Issuer: "https://login.example.com"},
	} {
		if _, err := auth.New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}

// TestVerifiedRemembered: a JWT checked once is not checked again (the
// same member comes back, not a new one) while it is remembered, which is
// until its exp and at most VerifiedFor; past either it is checked again,
// and an expired token is refused.
func TestVerifiedRemembered(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := issuer(t, key, func(self string) string { return self })
	iss := srv.URL + "/realms/team"
	start := time.Now()
	var now atomic.Pointer[time.Time]
	now.Store(&start)
	v, err := auth.New(auth.Options{Issuer: iss, Audience: "https://p.example.com/mcp", Now: func() time.Time { return *now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	ready(t, v)
	token := func(exp time.Time) string {
		return sign(t, key, map[string]any{"iss": iss, "sub": "u1", "aud": "https://p.example.com/mcp", "exp": exp.Unix(), "scope": "prompts:read"})
	}
	at := func(d time.Duration) { t2 := start.Add(d); now.Store(&t2) }

	long := token(start.Add(time.Hour))
	first, err := v.Verify(t.Context(), long)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := v.Verify(t.Context(), long); err != nil || again != first {
		t.Errorf("the same token again: %p, %v; want the member remembered (%p)", again, err, first)
	}
	at(auth.VerifiedFor + time.Second)
	if later, err := v.Verify(t.Context(), long); err != nil || later == first {
		t.Errorf("after VerifiedFor: %p, %v; want the token checked again (a new member)", later, err)
	}

	at(0)
	short := token(start.Add(time.Minute))
	if _, err := v.Verify(t.Context(), short); err != nil {
		t.Fatal(err)
	}
	at(2 * time.Minute)
	if m, err := v.Verify(t.Context(), short); err == nil {
		t.Errorf("a token past its exp was accepted from memory: %+v", m)
	}
}
