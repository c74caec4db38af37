package httpserver_test

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

const (
	publicURL   = "https://prompts.example.com"
	resourceURL = publicURL + "/mcp"
	challenge   = `Bearer resource_metadata="` + publicURL + `/.well-known/oauth-protected-resource/mcp"`
	invalid     = challenge + `, error="invalid_token"`
)

// testIssuer is an authorization server as a resource server sees one:
// its OpenID Connect metadata and its keys (k1 published, k2 not).
type testIssuer struct {
	srv       *httptest.Server
	k1, k2    *rsa.PrivateKey
	up        atomic.Bool
	jwksFetch atomic.Int32
}

var (
	keysOnce sync.Once
	key1     *rsa.PrivateKey
	key2     *rsa.PrivateKey
)

func newIssuer(t testing.TB) *testIssuer {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if key1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if key2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	is := &testIssuer{k1: key1, k2: key2}
	is.up.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if !is.up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetch.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.k1.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// claims of a token; zero fields take a valid member's.
type tokenClaims struct {
	Iss, Sub, Aud, Scope string
	Exp, Nbf             time.Time
}

func (is *testIssuer) claims(c tokenClaims) map[string]any {
	now := time.Now()
	m := map[string]any{"iss": is.srv.URL, "sub": "alice", "aud": resourceURL, "scope": "openid prompts:read",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "email": "alice@example.com"}
	for k, v := range map[string]string{"iss": c.Iss, "sub": c.Sub, "aud": c.Aud, "scope": c.Scope} {
		if v != "" {
			m[k] = v
		}
	}
	if !c.Exp.IsZero() {
		m["exp"] = c.Exp.Unix()
	}
	if !c.Nbf.IsZero() {
		m["nbf"] = c.Nbf.Unix()
	}
	return m
}

// token mints a token signed with key as kid.
func (is *testIssuer) token(t testing.TB, key *rsa.PrivateKey, kid string, c tokenClaims) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(is.claims(c)).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (is *testIssuer) valid(t testing.TB, c tokenClaims) string { return is.token(t, is.k1, "k1", c) }

// none is an unsigned token ("alg": "none").
func (is *testIssuer) none(t testing.TB) string {
	b, _ := json.Marshal(is.claims(tokenClaims{}))
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","kid":"k1","typ":"at+jwt"}`)) + "." + enc(b) + "."
}

// hs256 is a token signed with HMAC keyed by the issuer's public RSA key:
// a verifier that let the token pick the algorithm would accept it.
func (is *testIssuer) hs256(t testing.TB) string {
	der, err := x509.MarshalPKIXPublicKey(&is.k1.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub},
		(&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(is.claims(tokenClaims{})).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clock is a Verifier's clock a test moves forward.
type clock struct{ ahead atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *clock) advance(d time.Duration) { c.ahead.Add(int64(d)) }

func verifier(t testing.TB, is *testIssuer, clk *clock) *auth.Verifier {
	t.Helper()
	opts := auth.Options{Issuer: is.srv.URL, Audience: resourceURL, Logger: quiet}
	if clk != nil {
		opts.Now = clk.now
	}
	v, err := auth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	select {
	case <-v.Ready():
	case <-time.After(wait):
		t.Fatal("the issuer was not reached")
	}
	return v
}

func bearerOf(token string) []string { return []string{"Authorization", "Bearer " + token} }

// TestOAuthHostileTokens: every token that is not a valid member's of
// this issuer for this resource is refused with 401 and the challenge
// naming the metadata, and reaches nothing: after all of them, the next
// message on the member's SSE stream answers the member's own post.
func TestOAuthHostileTokens(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{}
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	srv, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, clk)})
	good := is.valid(t, tokenClaims{})

	ev := c.stream(t, "/sse", bearerOf(good)...)
	defer ev.close()
	first := ev.next(t)
	m := sessionRE.FindStringSubmatch(first.data)
	if first.name != "endpoint" || m == nil {
		t.Fatalf("first event %q %q, want the endpoint", first.name, first.data)
	}
	if strings.Contains(first.data, "token") {
		t.Fatalf("the endpoint URL carries a token: %s", first.data)
	}
	message := "/sse/message?session_id=" + m[1]
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if r := c.do(t, "POST", message, initMCP, bearerOf(good)...); r.status != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if m := ev.message(t); m["id"] != float64(0) {
		t.Fatalf("initialize answer: %v", m)
	}

	now := time.Now()
	tests := []struct {
		name   string
		path   string
		header []string
		want   string // WWW-Authenticate
	}{
		{"no token", message, nil, challenge},
		{"malformed", message, bearerOf("not.a.jwt"), invalid},
		{"not a bearer", message, []string{"Authorization", "Basic YWxpY2U6cHc="}, invalid},
		{"empty bearer", message, []string{"Authorization", "Bearer "}, invalid},
		{"expired", message, bearerOf(is.valid(t, tokenClaims{Exp: now.Add(-time.Hour)})), invalid},
		{"not yet valid", message, bearerOf(is.valid(t, tokenClaims{Nbf: now.Add(time.Hour)})), invalid},
		{"wrong issuer", message, bearerOf(is.valid(t, tokenClaims{Iss: "https://evil.example.com"})), invalid},
		{"wrong audience", message, bearerOf(is.valid(t, tokenClaims{Aud: "https://other.example.com/mcp"})), invalid},
		{"alg none", message, bearerOf(is.none(t)), invalid},
		{"HS256 keyed with the RSA public key", message, bearerOf(is.hs256(t)), invalid},
		{"signed by an unpublished key", message, bearerOf(is.token(t, is.k2, "k1", tokenClaims{})), invalid},
		{"unknown kid", message, bearerOf(is.token(t, is.k2, "k2", tokenClaims{})), invalid},
		{"no subject", message, bearerOf(is.valid(t, tokenClaims{Sub: " "})), invalid},
		{"32 KiB header", message, bearerOf(strings.Repeat("a", 32<<10)), invalid},
		{"valid token in the query", message + "&token=" + good, nil, invalid},
		{"valid token in the query and the header", message + "&token=" + good, bearerOf(good), invalid},
		{"mcp without a token", "/mcp", nil, challenge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(t, "POST", tc.path, ping, tc.header...)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.status, r.body)
			}
			if got := r.header.Get("WWW-Authenticate"); got != tc.want {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.want)
			}
			if errData(t, r.body).Code != mcp.CodeUnauthorized {
				t.Errorf("error %s, want UNAUTHORIZED", r.body)
			}
			if strings.Contains(r.body, good[:20]) {
				t.Errorf("the answer repeats the token: %s", r.body)
			}
		})
	}

	t.Run("1 MB header", func(t *testing.T) {
		// Past the listener's cap on a head (431 from net/http), so the
		// guard is asked directly.
		req := httptest.NewRequest("POST", c.base+message, strings.NewReader(ping))
		req.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 1<<20))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != invalid {
			t.Fatalf("status %d, WWW-Authenticate %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	})

	t.Run("unknown kid refreshes the keys at most once a minute", func(t *testing.T) {
		before := is.jwksFetch.Load()
		clk.advance(2 * time.Minute)
		unknown := bearerOf(is.token(t, is.k2, "k3", tokenClaims{}))
		if r := c.do(t, "POST", message, ping, unknown...); r.status != http.StatusUnauthorized {
			t.Fatalf("status %d", r.status)
		}
		if got := is.jwksFetch.Load(); got != before+1 {
			t.Fatalf("%d fetches of the keys, want %d (one refresh)", got, before+1)
		}
		for range 3 {
			if r := c.do(t, "POST", message, ping, unknown...); r.status != http.StatusUnauthorized {
				t.Fatalf("status %d", r.status)
			}
		}
		if got := is.jwksFetch.Load(); got != before+1 {
			t.Fatalf("%d fetches of the keys, want still %d within the minute", got, before+1)
		}
	})

	// None of the refused posts reached the session: the next message on
	// the stream answers this one.
	if r := c.do(t, "POST", message, `{"jsonrpc":"2.0","id":99,"method":"ping"}`, bearerOf(good)...); r.status != http.StatusAccepted {
		t.Fatalf("valid post: %d %s", r.status, r.body)
	}
	if m := ev.message(t); m["id"] != float64(99) {
		t.Fatalf("the next message is %v, want the answer to ping 99", m)
	}
}

// TestOAuthMember: a session belongs to the member who opened it: a new
// token of theirs keeps it, another member's valid token finds no such
// session; a token without prompts:read gets the step-up challenge.
func TestOAuthMember(t *testing.T) {
	is := newIssuer(t)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	alice := bearerOf(is.valid(t, tokenClaims{}))
	id := c.openMCP(t, alice...)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	aliceAgain := bearerOf(is.valid(t, tokenClaims{Exp: time.Now().Add(2 * time.Hour)}))
	if r := c.do(t, "POST", "/mcp", ping, append([]string{"Mcp-Session-Id", id}, aliceAgain...)...); r.status != http.StatusOK {
		t.Fatalf("alice's new token on her session: %d %s", r.status, r.body)
	}
	bob := bearerOf(is.valid(t, tokenClaims{Sub: "bob"}))
	r := c.do(t, "POST", "/mcp", ping, append([]string{"Mcp-Session-Id", id}, bob...)...)
	if r.status != http.StatusNotFound || errData(t, r.body).Code != mcp.CodeSessionNotFound {
		t.Fatalf("bob on alice's session: %d %s, want 404 SESSION_NOT_FOUND", r.status, r.body)
	}
	r = c.do(t, "POST", "/mcp", ping, "Mcp-Session-Id", id)
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != challenge {
		t.Fatalf("no token on alice's session: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}

	noRead := bearerOf(is.valid(t, tokenClaims{Scope: "openid"}))
	r = c.do(t, "POST", "/mcp", initMCP, noRead...)
	want := `Bearer error="insufficient_scope", scope="prompts:read", resource_metadata="` + publicURL + `/.well-known/oauth-protected-resource/mcp"`
	if r.status != http.StatusForbidden || r.header.Get("WWW-Authenticate") != want || errData(t, r.body).Code != mcp.CodeInsufficientScope {
		t.Fatalf("token without prompts:read: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
}

// TestOAuthMetadata: both metadata paths answer RFC 9728's document,
// without a token.
func TestOAuthMetadata(t *testing.T) {
	is := newIssuer(t)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	want := map[string]any{
		"resource":                 resourceURL,
		"authorization_servers":    []any{is.srv.URL},
		"scopes_supported":         []any{"prompts:read", "prompts:write"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "flowyprompt",
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		r := c.do(t, "GET", path, "")
		var got map[string]any
		if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &got) != nil {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, d)
		}
	}
	// A page of an allowed origin may read the challenge that leads it
	// to the metadata.
	r := c.do(t, "POST", "/mcp", initMCP, "Origin", "http://localhost:5173")
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Fatalf("status %d, Access-Control-Expose-Headers %q", r.status, r.header.Get("Access-Control-Expose-Headers"))
	}
}

// TestOAuthIssuerLate: an issuer that does not answer at start is retried;
// meanwhile a token gets 503, then, once it answered, is accepted.
func TestOAuthIssuerLate(t *testing.T) {
	is := newIssuer(t)
	is.up.Store(false)
	v, err := auth.New(auth.Options{Issuer: is.srv.URL, Audience: resourceURL, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: v})
	alice := bearerOf(is.valid(t, tokenClaims{}))
	if r := c.do(t, "POST", "/mcp", initMCP, alice...); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("before the issuer answered: %d %s", r.status, r.body)
	}
	is.up.Store(true)
	select {
	case <-v.Ready():
	case <-time.After(wait):
		t.Fatal("the issuer was not retried")
	}
	c.openMCP(t, alice...)
}

// TestOAuthOptions: an issuer needs the public URL, and excludes the
// static token.
func TestOAuthOptions(t *testing.T) {
	is := newIssuer(t)
	v := verifier(t, is, nil)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	for name, opts := range map[string]httpserver.Options{
		"no public URL": {Addr: "127.0.0.1:0", Auth: v},
		"both":          {Addr: "127.0.0.1:0", Auth: v, PublicURL: publicURL, AuthToken: "s3cret"},
	} {
		if _, err := httpserver.New(e, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestOAuthRefusedBeforeTheBody: a request without a valid token is
// answered while its body is still on its way.
func TestOAuthRefusedBeforeTheBody(t *testing.T) {
	is := newIssuer(t)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	addr := strings.TrimPrefix(c.base, "http://")
	for name, headers := range map[string]string{
		"no token":      "",
		"expired token": "Authorization: Bearer " + is.valid(t, tokenClaims{Exp: time.Now().Add(-time.Hour)}) + "\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Ten bytes of a hundred, then nothing.
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 100\r\n\r\n{\"jsonrpc\"", addr, headers)
			_ = conn.SetReadDeadline(time.Now().Add(wait)) // a guard against hanging, not a speed claim
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body is unfinished: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("status %d, WWW-Authenticate %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestOAuthIntrospection: with --auth-introspection, an opaque token the
// endpoint says is an active member's opens a session of theirs; one it
// says is not active is refused as any bad token is; while the endpoint
// gives no answer the token gets 503 AUTH_SERVER_UNREACHABLE, and the
// client credentials appear in no answer.
func TestOAuthIntrospection(t *testing.T) {
	const secret = "introspection-s3cret"
	is := newIssuer(t)
	var down atomic.Bool
	at := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, s, ok := r.BasicAuth(); down.Load() || !ok || id != "flowyprompt" || s != secret {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		answer := map[string]any{"active": false}
		if r.PostFormValue("token") == "opaque-alice" {
			answer = map[string]any{"active": true, "iss": is.srv.URL, "sub": "alice", "aud": resourceURL,
				"scope": "prompts:read", "exp": time.Now().Add(time.Hour).Unix()}
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(at.Close)
	v, err := auth.New(auth.Options{Issuer: is.srv.URL, Audience: resourceURL, Logger: quiet,
		Introspection: &auth.Introspection{URL: at.URL, ClientID: "flowyprompt", ClientSecret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: v})

	id := c.openMCP(t, bearerOf("opaque-alice")...)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	// Alice's JWT, checked against the issuer's keys, is the same member.
	select {
	case <-v.Ready():
	case <-time.After(wait):
		t.Fatal("the issuer was not reached")
	}
	if r := c.do(t, "POST", "/mcp", ping, append([]string{"Mcp-Session-Id", id}, bearerOf(is.valid(t, tokenClaims{}))...)...); r.status != http.StatusOK {
		t.Fatalf("alice's JWT on the session her opaque token opened: %d %s", r.status, r.body)
	}

	r := c.do(t, "POST", "/mcp", initMCP, bearerOf("opaque-revoked")...)
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != invalid {
		t.Fatalf("inactive token: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}

	down.Store(true)
	r = c.do(t, "POST", "/mcp", initMCP, bearerOf("opaque-bob")...)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || errData(t, r.body).Code != mcp.CodeAuthUnavailable {
		t.Fatalf("endpoint down: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if strings.Contains(r.body, secret) || strings.Contains(r.body, "opaque-bob") {
		t.Errorf("the answer shows the secret or the token: %s", r.body)
	}
	// Alice's answer is cached: the endpoint being down does not matter.
	if r := c.do(t, "POST", "/mcp", ping, append([]string{"Mcp-Session-Id", id}, bearerOf("opaque-alice")...)...); r.status != http.StatusOK {
		t.Fatalf("alice's cached token: %d %s", r.status, r.body)
	}
}
