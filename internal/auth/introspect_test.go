package auth_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

const (
	resource     = "https://p.example.com/mcp"
	clientID     = "flowyprompt:rs" // a ':' the Basic credentials must escape
	clientSecret = "s3cr3t/with+symbols"
)

// endpoint is an authorization server's introspection endpoint: it takes
// this server's client credentials (HTTP Basic, form-encoded as RFC 6749
// section 2.3.1 says), answers each known token as given, every other
// as inactive, and counts the requests.
type endpoint struct {
	answers map[string]map[string]any
	down    atomic.Bool
	calls   atomic.Int32
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	if e.down.Load() {
		http.Error(w, "upstream down", http.StatusBadGateway)
		return
	}
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || !ok || id != clientID || secret != clientSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"client authentication failed"}`))
		return
	}
	answer, known := e.answers[r.PostFormValue("token")]
	if !known {
		answer = map[string]any{"active": false}
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// introspecting returns a Verifier for iss that introspects at e with the
// given secret, logging into log, on clock now.
func introspecting(t *testing.T, iss, at, secret string, now func() time.Time, log *bytes.Buffer, client *http.Client) *auth.Verifier {
	t.Helper()
	v, err := auth.New(auth.Options{Issuer: iss, Audience: resource, Now: now, Client: client,
		Logger:        slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Introspection: &auth.Introspection{URL: at, ClientID: clientID, ClientSecret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestIntrospection: opaque tokens are checked at the endpoint, as a JWT's
// claims are checked here; each answer is cached (active ones until their
// exp, refusals for InactiveFor); no answer is ErrUnavailable, not cached;
// neither the secret nor a token is ever in an error or the log.
func TestIntrospection(t *testing.T) {
	const iss = "https://login.example.com/realms/team"
	start := time.Now()
	var ahead atomic.Int64
	now := func() time.Time { return start.Add(time.Duration(ahead.Load())) }
	exp := start.Add(time.Hour).Unix()
	member := func(extra map[string]any) map[string]any {
		a := map[string]any{"active": true, "iss": iss, "sub": "alice", "aud": []string{"other", resource},
			"exp": exp, "scope": "openid prompts:read prompts:write", "email": "alice@example.com", "client_id": "claude"}
		for k, x := range extra {
			if x == nil {
				delete(a, k)
			} else {
				a[k] = x
			}
		}
		return a
	}
	e := &endpoint{answers: map[string]map[string]any{
		"tok-active":       member(nil),
		"tok-aud-string":   member(map[string]any{"aud": resource, "scope": nil, "scp": []string{"prompts:read"}, "email": nil, "iss": nil}),
		"tok-no-exp":       member(map[string]any{"exp": nil}),
		"tok-inactive":     {"active": false},
		"tok-expired":      member(map[string]any{"exp": start.Add(-time.Minute).Unix()}),
		"tok-not-yet":      member(map[string]any{"nbf": start.Add(time.Hour).Unix()}),
		"tok-wrong-aud":    member(map[string]any{"aud": "https://other.example.com/mcp"}),
		"tok-no-aud":       member(map[string]any{"aud": nil}),
		"tok-wrong-issuer": member(map[string]any{"iss": "https://evil.example.com"}),
		"tok-no-sub":       member(map[string]any{"sub": nil}),
	}}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	// The issuer's metadata is never read here: while the keys are not
	// known, every token is introspected.
	v := introspecting(t, iss, srv.URL, clientSecret, now, &log, nil)

	alice := &auth.Member{Issuer: iss, Subject: "alice", Email: "alice@example.com", Scopes: []string{"openid", "prompts:read", "prompts:write"}}
	tests := []struct {
		token string
		want  *auth.Member // nil: refused
		why   string       // in the refusal
	}{
		{"tok-active", alice, ""},
		{"tok-aud-string", &auth.Member{Issuer: iss, Subject: "alice", Scopes: []string{"prompts:read"}}, ""},
		{"tok-no-exp", alice, ""},
		{"tok-inactive", nil, "not active"},
		{"tok-unknown", nil, "not active"},
		{"tok-expired", nil, "expired"},
		{"tok-not-yet", nil, "not valid before"},
		{"tok-wrong-aud", nil, `not "` + resource + `"`},
		{"tok-no-aud", nil, "audience"},
		{"tok-wrong-issuer", nil, `issued by "https://evil.example.com"`},
		{"tok-no-sub", nil, "no subject"},
	}
	var errs []string
	for _, tc := range tests {
		t.Run(tc.token, func(t *testing.T) {
			before := e.calls.Load()
			for i := range 3 {
				m, err := v.Verify(t.Context(), tc.token)
				if tc.want == nil {
					if err == nil || !strings.Contains(err.Error(), tc.why) || errors.Is(err, auth.ErrUnavailable) {
						t.Fatalf("Verify #%d: %v, want a refusal saying %q", i, err, tc.why)
					}
					errs = append(errs, err.Error())
					continue
				}
				if err != nil {
					t.Fatalf("Verify #%d: %v", i, err)
				}
				if d := cmp.Diff(tc.want, m, cmpopts.EquateEmpty()); d != "" {
					t.Fatalf("member (-want +got):\n%s", d)
				}
			}
			if got := e.calls.Load() - before; got != 1 {
				t.Errorf("%d requests to the endpoint for 3 checks, want 1 (then the cache)", got)
			}
		})
	}

	t.Run("refusals expire from the cache", func(t *testing.T) {
		before := e.calls.Load()
		ahead.Store(int64(auth.InactiveFor))
		if _, err := v.Verify(t.Context(), "tok-inactive"); err == nil {
			t.Fatal("accepted")
		}
		if got := e.calls.Load() - before; got != 1 {
			t.Errorf("%d requests, want 1: a refusal is kept %s", got, auth.InactiveFor)
		}
	})
	t.Run("a token without exp is kept a minute", func(t *testing.T) {
		ahead.Store(int64(auth.NoExpiryFor))
		before := e.calls.Load()
		if _, err := v.Verify(t.Context(), "tok-no-exp"); err != nil {
			t.Fatal(err)
		}
		if got := e.calls.Load() - before; got != 1 {
			t.Errorf("%d requests, want 1", got)
		}
	})
	t.Run("an active token is kept until its exp", func(t *testing.T) {
		before := e.calls.Load()
		ahead.Store(int64(time.Hour - time.Second))
		if _, err := v.Verify(t.Context(), "tok-active"); err != nil {
			t.Fatal(err)
		}
		if got := e.calls.Load() - before; got != 0 {
			t.Errorf("%d requests before exp, want 0", got)
		}
		ahead.Store(int64(time.Hour + time.Second))
		_, err := v.Verify(t.Context(), "tok-active")
		if err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("after exp: %v, want expired", err)
		}
		if got := e.calls.Load() - before; got != 1 {
			t.Errorf("%d requests after exp, want 1", got)
		}
		ahead.Store(0)
	})

	t.Run("endpoint down", func(t *testing.T) {
		e.down.Store(true)
		for range 2 {
			before := e.calls.Load()
			_, err := v.Verify(t.Context(), "tok-fresh")
			if !errors.Is(err, auth.ErrUnavailable) {
				t.Fatalf("Verify: %v, want ErrUnavailable", err)
			}
			if e.calls.Load() != before+1 {
				t.Fatal("no answer was cached: the next check must ask again")
			}
			errs = append(errs, err.Error())
		}
		e.down.Store(false)
		if _, err := v.Verify(t.Context(), "tok-fresh"); err == nil || errors.Is(err, auth.ErrUnavailable) {
			t.Fatalf("once up: %v, want the endpoint's refusal", err)
		}
	})
	if n := strings.Count(log.String(), "token introspection failed"); n != 1 {
		t.Errorf("%d warnings for two failures within 30 s, want 1:\n%s", n, log.String())
	}

	t.Run("wrong client credentials", func(t *testing.T) {
		var log bytes.Buffer
		v := introspecting(t, iss, srv.URL, "not-the-secret", now, &log, nil)
		_, err := v.Verify(t.Context(), "tok-active")
		if !errors.Is(err, auth.ErrUnavailable) || !strings.Contains(err.Error(), "invalid_client") {
			t.Fatalf("Verify: %v, want ErrUnavailable naming invalid_client", err)
		}
		if !strings.Contains(log.String(), "check FLOWYPROMPT_AUTH_CLIENT_ID and FLOWYPROMPT_AUTH_CLIENT_SECRET") {
			t.Errorf("the log does not say how to fix it:\n%s", log.String())
		}
		errs = append(errs, err.Error(), log.String())
	})

	t.Run("oversized token", func(t *testing.T) {
		before := e.calls.Load()
		if _, err := v.Verify(t.Context(), strings.Repeat("a", auth.MaxTokenBytes+1)); err == nil {
			t.Fatal("accepted")
		}
		if e.calls.Load() != before {
			t.Error("an oversized token was sent to the endpoint")
		}
	})

	for _, s := range append(errs, log.String(), (&auth.Introspection{URL: srv.URL, ClientID: clientID, ClientSecret: clientSecret}).String()) {
		for _, secret := range []string{clientSecret, "not-the-secret", url.QueryEscape(clientSecret), "tok-"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q shows a secret or a token:\n%s", secret, s)
			}
		}
	}
}

// TestIntrospectionCollapses: concurrent checks of one token while its
// introspection is under way share it: one request to the endpoint.
func TestIntrospectionCollapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			<-release
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "alice", "aud": resource, "scope": "prompts:read",
				"exp": time.Now().Add(time.Hour).Unix()})
		})
		var log bytes.Buffer
		v := introspecting(t, "https://login.example.com", "https://login.example.com/introspect", clientSecret, nil, &log,
			&http.Client{Transport: inProcess{h}})
		const n = 8
		var wg sync.WaitGroup
		got := make([]error, n)
		for i := range n {
			wg.Go(func() {
				m, err := v.Verify(t.Context(), "tok-shared")
				if err == nil && m.Subject != "alice" {
					err = errors.New("member " + m.Subject)
				}
				got[i] = err
			})
		}
		synctest.Wait() // every check waits: one in the endpoint, the others on it
		if c := calls.Load(); c != 1 {
			t.Errorf("%d requests under way for %d checks of one token, want 1", c, n)
		}
		close(release)
		wg.Wait()
		for i, err := range got {
			if err != nil {
				t.Errorf("check %d: %v", i, err)
			}
		}
		if c := calls.Load(); c != 1 {
			t.Errorf("%d requests, want 1", c)
		}
	})
}

// inProcess serves a client's requests with a handler, without a network,
// so that a synctest bubble sees every wait.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestIntrospectionRoute: with the issuer's keys known, a JWT they verify
// is checked here and never introspected, as is a JWT they refuse; an
// opaque token, or a JWT signed with an algorithm the keys do not have, is
// introspected. An issuer that publishes no keys has every token
// introspected.
func TestIntrospectionRoute(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := issuer(t, key, func(self string) string { return self })
	iss := srv.URL + "/realms/team"
	e := &endpoint{answers: map[string]map[string]any{
		"opaque": {"active": true, "sub": "bob", "aud": resource, "scope": "prompts:read"},
	}}
	at := httptest.NewServer(e)
	t.Cleanup(at.Close)
	var log bytes.Buffer
	v := introspecting(t, iss, at.URL, clientSecret, nil, &log, nil)
	v.Start(t.Context())
	ready(t, v)

	claims := map[string]any{"iss": iss, "sub": "alice", "aud": resource, "scope": "prompts:read", "exp": time.Now().Add(time.Hour).Unix()}
	expired := map[string]any{"iss": iss, "sub": "alice", "aud": resource, "exp": time.Now().Add(-time.Hour).Unix()}
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs256, err := jwt.Signed(hs).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		sub         string // "": refused
		asked       int32
	}{
		{"JWT", sign(t, key, claims), "alice", 0},
		{"expired JWT", sign(t, key, expired), "", 0},
		{"opaque", "opaque", "bob", 1},
		{"HS256 JWT", hs256, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls.Load()
			m, err := v.Verify(t.Context(), tc.token)
			switch {
			case tc.sub == "" && err == nil:
				t.Fatalf("accepted as %s", m.Subject)
			case tc.sub != "" && err != nil:
				t.Fatal(err)
			case tc.sub != "" && m.Subject != tc.sub:
				t.Fatalf("member %s, want %s", m.Subject, tc.sub)
			}
			if got := e.calls.Load() - before; got != tc.asked {
				t.Errorf("%d introspections, want %d", got, tc.asked)
			}
		})
	}

	t.Run("no keys", func(t *testing.T) {
		mux := http.NewServeMux()
		var self string
		mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": self})
		})
		noKeys := httptest.NewServer(mux)
		t.Cleanup(noKeys.Close)
		self = noKeys.URL
		var log bytes.Buffer
		v := introspecting(t, self, at.URL, clientSecret, nil, &log, nil)
		v.Start(t.Context())
		ready(t, v)
		before := e.calls.Load()
		if _, err := v.Verify(t.Context(), sign(t, key, claims)); err == nil {
			t.Fatal("a JWT the endpoint does not know was accepted")
		}
		if e.calls.Load() != before+1 {
			t.Error("the JWT was not introspected")
		}
	})
}

// TestIntrospectionRefused: New refuses an endpoint that is not an http(s)
// URL, or one without client credentials.
func TestIntrospectionRefused(t *testing.T) {
	for _, in := range []auth.Introspection{
		{URL: "login.example.com/introspect", ClientID: "a", ClientSecret: clientSecret},
		{URL: "https://a:" + clientSecret + "@login.example.com/introspect", ClientID: "a", ClientSecret: clientSecret},
		{URL: "https://login.example.com/introspect", ClientID: "a"},
		{URL: "https://login.example.com/introspect", ClientSecret: clientSecret},
	} {
		_, err := auth.New(auth.Options{Issuer: "https://login.example.com", Audience: resource, Introspection: &in})
		if err == nil {
			t.Errorf("New(%v): no error", in)
		} else if strings.Contains(err.Error(), clientSecret) || strings.Contains(err.Error(), url.PathEscape(clientSecret)) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// TestIntrospectionPlainHTTP: an endpoint beyond this machine over plain
// http is taken, with a warning that the secret crosses the network
// unencrypted; a loopback one is not warned about.
func TestIntrospectionPlainHTTP(t *testing.T) {
	for at, warned := range map[string]bool{
		"http://login.example.com/introspect":  true,
		"https://login.example.com/introspect": false,
		"http://127.0.0.1:8080/introspect":     false,
		"http://localhost:8080/introspect":     false,
	} {
		var log bytes.Buffer
		introspecting(t, "https://login.example.com", at, clientSecret, nil, &log, nil)
		if got := strings.Contains(log.String(), "unencrypted"); got != warned {
			t.Errorf("%s: warned %v, want %v:\n%s", at, got, warned, log.String())
		}
	}
}

// BenchmarkIntrospectionCached: the check of an opaque token whose answer
// is cached (the common case: a member's requests after the first).
func BenchmarkIntrospectionCached(b *testing.B) {
	e := &endpoint{answers: map[string]map[string]any{
		"tok-bench": {"active": true, "sub": "alice", "aud": resource, "scope": "prompts:read", "exp": time.Now().Add(time.Hour).Unix()},
	}}
	srv := httptest.NewServer(e)
	b.Cleanup(srv.Close)
	v, err := auth.New(auth.Options{Issuer: "https://login.example.com", Audience: resource,
		Introspection: &auth.Introspection{URL: srv.URL, ClientID: clientID, ClientSecret: clientSecret}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Verify(b.Context(), "tok-bench"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(b.Context(), "tok-bench"); err != nil {
			b.Fatal(err)
		}
	}
	if c := e.calls.Load(); c != 1 {
		b.Fatalf("%d introspections, want 1", c)
	}
}

// TestIntrospectionReadsTheClaim: an introspected token's member is read
// by the policy's claim in force, as a JWT's is: a claim changed while the
// answer is cached applies to the token's next check.
func TestIntrospectionReadsTheClaim(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "u1", "aud": resource, "email": "u1@example.com",
			"exp": time.Now().Add(time.Hour).Unix(), "groups": []string{"sre", "dev"}, "role": "admin"})
	})
	var claim atomic.Value
	claim.Store("groups")
	v, err := auth.New(auth.Options{Issuer: "https://login.example.com", Audience: resource, Client: &http.Client{Transport: inProcess{h}},
		Claim:         func() string { return claim.Load().(string) },
		Introspection: &auth.Introspection{URL: "https://login.example.com/introspect", ClientID: clientID, ClientSecret: clientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		claim string
		want  []string
	}{
		{"groups", []string{"sre", "dev"}},
		{"role", []string{"admin"}},
		{"email", []string{"u1@example.com"}},
		{"groups", []string{"sre", "dev"}},
	} {
		claim.Store(tc.claim)
		m, err := v.Verify(t.Context(), "tok-opaque")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, m.Groups); d != "" {
			t.Errorf("claim %s: Groups (-want +got):\n%s", tc.claim, d)
		}
	}
}
