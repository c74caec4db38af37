package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// memberIssuer is an authorization server as the binary sees one: its
// metadata and its key, and the access tokens it issues to members (the
// end-to-end tests sign in at cmd/testoidc's real provider; these tests
// need only tokens the server checks).
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

// token is an access token for sub, of the groups given, for audience,
// granting prompts:read.
func (is *memberIssuer) token(t *testing.T, audience, sub string, groups ...string) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := map[string]any{"iss": is.srv.URL, "sub": sub, "aud": audience, "scope": "prompts:read",
		"email": sub + "@example.com", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if len(groups) > 0 {
		claims["groups"] = groups
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// bearer is the Authorization header of an access token for sub, for the
// resource audience.
func (is *memberIssuer) bearer(t *testing.T, sub, audience string) []string {
	t.Helper()
	return []string{"Authorization", "Bearer " + is.token(t, audience, sub)}
}
