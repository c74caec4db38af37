package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
)

// memberIssuer is an authorization server as the replicas see one: its
// metadata and its key, and the tokens it issues to members.
type memberIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newMemberIssuer(t *testing.T) *memberIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &memberIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	// Started once is.srv is set: the handlers read its URL.
	is.srv = httptest.NewUnstartedServer(mux)
	is.srv.Start()
	t.Cleanup(is.srv.Close)
	return is
}

// bearer is the Authorization header of an access token for sub, for the
// resource audience.
func (is *memberIssuer) bearer(t *testing.T, sub, audience string) []string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": is.srv.URL, "sub": sub, "aud": audience,
		"scope": "prompts:read", "email": sub + "@example.com", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"Authorization", "Bearer " + tok}
}

// TestBinaryMemberAcrossReplicas: two `serve --nats --auth-issuer`
// processes: a member's session opened on one is served through the
// other to that member, whose name the holder's audit line carries, and
// is not found for another member.
func TestBinaryMemberAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	is := newMemberIssuer(t)
	const public = "https://prompts.example.com"
	keys := strings.TrimPrefix(clusterKeysEnv, "FLOWYPROMPT_STATE_KEYS=")
	flags := []string{"--nats", ns.URL(), "--state-keys", keys, "--auth-issuer", is.srv.URL, "--public-url", public, "--log-format", "json"}
	a := startHTTPWith(t, flags...)
	b := startHTTPWith(t, flags...)
	for _, s := range []*httpServer{a, b} {
		if !s.waitOutput("authorization server reached", 15*time.Second) {
			s.fatalf(t, "the issuer was not reached")
		}
	}
	alice, bob := is.bearer(t, "alice", public+"/mcp"), is.bearer(t, "bob", public+"/mcp")
	res, body := postMCP(t, a, initializeMsg, alice...)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		a.fatalf(t, "initialize on a: %s %q", res.Status, body)
	}
	prompt := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"Code_Review","arguments":{"code":"x := 1","language":"Go"}}}`, n)
	}
	alicesLine := a.expect(`"request_id":"3"`)
	res, body = postMCP(t, b, prompt(2), append([]string{"Mcp-Session-Id", id}, bob...)...)
	if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "SESSION_NOT_FOUND") {
		b.fatalf(t, "bob through b: %s %q, want 404 SESSION_NOT_FOUND", res.Status, body)
	}
	res, body = postMCP(t, b, prompt(3), append([]string{"Mcp-Session-Id", id}, alice...)...)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "x := 1") {
		b.fatalf(t, "alice through b: %s %q, want her prompt", res.Status, body)
	}
	select {
	case <-alicesLine:
	case <-time.After(15 * time.Second):
		a.fatalf(t, "no audit line of alice's request on the holder")
	}
	out := a.Output()
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"request_id":"3"`) &&
			(!strings.Contains(line, `"member":"alice"`) || !strings.Contains(line, `"member_email":"alice@example.com"`)) {
			a.fatalf(t, "the holder's audit line %s does not name alice", line)
		}
	}
	// Bob's request was refused before it ran: the holder's only audit
	// line, written after it, is alice's.
	if strings.Contains(out, `"member":"bob"`) || strings.Contains(out, `"request_id":"2"`) {
		a.fatalf(t, "bob's request ran on the holder")
	}
}
