package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

const (
	resource = "http://127.0.0.1:3000/mcp"
	// redirectURI is the client's: registered without a port, used with
	// one, as a native application on loopback does (RFC 8252).
	redirectURI = "http://127.0.0.1:49152/callback"
)

var testUsers = []User{
	{Subject: "alice", Email: "alice@example.com", Groups: []string{"sre", "prompt-authors"}, Scopes: []string{auth.ScopeRead, auth.ScopeWrite}},
	{Subject: "bob", Groups: []string{"dev"}, Scopes: []string{auth.ScopeRead}},
}

// startProvider serves the provider on loopback and returns its issuer.
func startProvider(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	h, err := newProvider(Config{Issuer: issuer, Users: testUsers, ClientID: "test-client",
		RedirectURIs: []string{"http://127.0.0.1/callback"}, TokenTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

func TestDiscovery(t *testing.T) {
	issuer := startProvider(t)
	ctx := t.Context()
	// go-oidc reads the discovery document and checks that it names the
	// issuer, as flowyprompt's resource server does.
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Issuer          string   `json:"issuer"`
		JWKS            string   `json:"jwks_uri"`
		Scopes          []string `json:"scopes_supported"`
		CodeChallenge   []string `json:"code_challenge_methods_supported"`
		ResponseTypes   []string `json:"response_types_supported"`
		TokenAuthMethod []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := p.Claims(&md); err != nil {
		t.Fatal(err)
	}
	if md.Issuer != issuer || md.JWKS != issuer+"/keys" {
		t.Errorf("issuer %q, jwks_uri %q; want %q and its /keys", md.Issuer, md.JWKS, issuer)
	}
	for _, want := range []struct {
		name string
		in   []string
		v    string
	}{
		{"scopes_supported", md.Scopes, auth.ScopeRead},
		{"scopes_supported", md.Scopes, auth.ScopeWrite},
		{"code_challenge_methods_supported", md.CodeChallenge, "S256"},
		{"response_types_supported", md.ResponseTypes, "code"},
		{"token_endpoint_auth_methods_supported", md.TokenAuthMethod, "none"},
	} {
		if !slices.Contains(want.in, want.v) {
			t.Errorf("%s = %v, want it to hold %q", want.name, want.in, want.v)
		}
	}

	resp, err := http.Get(md.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var keys jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&keys); err != nil {
		t.Fatal(err)
	}
	if len(keys.Keys) != 1 || keys.Keys[0].Algorithm != "RS256" || !keys.Keys[0].IsPublic() || keys.Keys[0].KeyID == "" {
		t.Errorf("JWKS = %+v, want one public RS256 key with a kid", keys.Keys)
	}
}

// authorize walks the authorization endpoint as a browser would, up to
// the redirect to the client, and returns that redirect's query.
func authorize(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), strings.TrimSuffix(redirectURI, "/callback")) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("authorization ended with %s, not a redirect to the client: %v", resp.Status, err)
	}
	if !strings.HasPrefix(loc.String(), redirectURI) {
		t.Fatalf("redirected to %s, want the client's %s", loc, redirectURI)
	}
	return loc.Query()
}

func verifier(t *testing.T, issuer, audience string) *auth.Verifier {
	t.Helper()
	v, err := auth.New(auth.Options{Issuer: issuer, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	select {
	case <-v.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the verifier did not read the provider's metadata")
	}
	return v
}

func TestCodeFlow(t *testing.T) {
	issuer := startProvider(t)
	ctx := t.Context()
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatal(err)
	}
	forResource := verifier(t, issuer, resource)
	forOther := verifier(t, issuer, "http://127.0.0.1:4000/mcp")
	both := []string{auth.ScopeRead, auth.ScopeWrite}

	for _, tc := range []struct {
		name      string
		loginHint string
		resource  string
		scopes    []string
		// want is the member the resource server sees; nil: the token
		// is refused for the resource.
		want   *auth.Member
		groups []string
	}{
		{name: "the first user by default", resource: resource, scopes: both,
			want:   &auth.Member{Issuer: issuer, Subject: "alice", Email: "alice@example.com", Scopes: both},
			groups: []string{"sre", "prompt-authors"}},
		{name: "login_hint by email", loginHint: "alice@example.com", resource: resource, scopes: []string{auth.ScopeRead},
			want:   &auth.Member{Issuer: issuer, Subject: "alice", Email: "alice@example.com", Scopes: []string{auth.ScopeRead}},
			groups: []string{"sre", "prompt-authors"}},
		{name: "a user is granted only their scopes", loginHint: "bob", resource: resource, scopes: both,
			want:   &auth.Member{Issuer: issuer, Subject: "bob", Scopes: []string{auth.ScopeRead}},
			groups: []string{"dev"}},
		{name: "no resource: the audience is the client", loginHint: "bob", scopes: both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := oauth2.Config{ClientID: "test-client", Endpoint: p.Endpoint(), RedirectURL: redirectURI, Scopes: tc.scopes}
			conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
			pkce := oauth2.GenerateVerifier()
			opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(pkce)}
			if tc.loginHint != "" {
				opts = append(opts, oauth2.SetAuthURLParam("login_hint", tc.loginHint))
			}
			if tc.resource != "" {
				opts = append(opts, oauth2.SetAuthURLParam("resource", tc.resource))
			}
			back := authorize(t, conf.AuthCodeURL("st4te", opts...))
			if back.Get("state") != "st4te" || back.Get("code") == "" {
				t.Fatalf("redirect to the client: %v, want a code and the state", back)
			}
			exchange := []oauth2.AuthCodeOption{oauth2.VerifierOption(pkce)}
			if tc.resource != "" {
				exchange = append(exchange, oauth2.SetAuthURLParam("resource", tc.resource))
			}
			tok, err := conf.Exchange(ctx, back.Get("code"), exchange...)
			if err != nil {
				t.Fatal(err)
			}

			m, err := forResource.Verify(ctx, tok.AccessToken)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("a token without the resource was accepted for it: %+v", m)
				}
				return
			}
			if err != nil {
				t.Fatalf("the resource server refused the token: %v", err)
			}
			if diff := cmp.Diff(tc.want, m); diff != "" {
				t.Errorf("member (-want +got):\n%s", diff)
			}
			if _, err := forOther.Verify(ctx, tok.AccessToken); err == nil {
				t.Error("a token for the resource was accepted for another audience")
			}
			// The groups claim, read from the verified token.
			idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: tc.resource}).Verify(ctx, tok.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			var claims struct {
				Groups []string `json:"groups"`
			}
			if err := idt.Claims(&claims); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.groups, claims.Groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusals: the flow's refusals, each from the provider library.
func TestRefusals(t *testing.T) {
	issuer := startProvider(t)
	ctx := t.Context()
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: "test-client", Endpoint: p.Endpoint(), RedirectURL: redirectURI, Scopes: []string{auth.ScopeRead}}
	conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	res := oauth2.SetAuthURLParam("resource", resource)

	t.Run("an unknown login_hint is access_denied", func(t *testing.T) {
		back := authorize(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), res,
			oauth2.SetAuthURLParam("login_hint", "mallory")))
		if back.Get("error") != "access_denied" || back.Get("code") != "" {
			t.Errorf("redirect to the client: %v, want error=access_denied and no code", back)
		}
	})
	t.Run("no PKCE", func(t *testing.T) {
		back := authorize(t, conf.AuthCodeURL("s", res))
		if back.Get("error") != "invalid_request" || back.Get("code") != "" {
			t.Errorf("redirect to the client: %v, want error=invalid_request and no code", back)
		}
	})
	t.Run("plain PKCE", func(t *testing.T) {
		back := authorize(t, conf.AuthCodeURL("s", res, oauth2.SetAuthURLParam("code_challenge", oauth2.GenerateVerifier()),
			oauth2.SetAuthURLParam("code_challenge_method", "plain")))
		if back.Get("error") == "" || back.Get("code") != "" {
			t.Errorf("redirect to the client: %v, want an error and no code", back)
		}
	})
	t.Run("the wrong code_verifier", func(t *testing.T) {
		back := authorize(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), res))
		_, err := conf.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("exchange with another verifier: %v, want invalid_grant", err)
		}
	})
	t.Run("a resource at the token endpoint the code was not authorised for", func(t *testing.T) {
		pkce := oauth2.GenerateVerifier()
		back := authorize(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(pkce), res))
		_, err := conf.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(pkce), oauth2.SetAuthURLParam("resource", "http://127.0.0.1:4000/mcp"))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_target" {
			t.Errorf("exchange for another resource: %v, want invalid_target", err)
		}
	})
	t.Run("a resource that is not an absolute URL", func(t *testing.T) {
		resp, err := http.Get(conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("resource", "/mcp")))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error string `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusBadRequest || body.Error != "invalid_target" {
			t.Errorf("authorization with resource=/mcp: %s, %+v (%v), want 400 invalid_target", resp.Status, body, err)
		}
	})
	t.Run("a code exchanged twice", func(t *testing.T) {
		pkce := oauth2.GenerateVerifier()
		back := authorize(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(pkce), res))
		if _, err := conf.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(pkce)); err != nil {
			t.Fatal(err)
		}
		if _, err := conf.Exchange(ctx, back.Get("code"), oauth2.VerifierOption(pkce)); err == nil {
			t.Error("a code was exchanged twice")
		}
	})
}

func TestParseUsers(t *testing.T) {
	for _, tc := range []struct {
		name, doc, wantErr string
	}{
		{"valid", `{"users":[{"sub":"a","scopes":["prompts:read"]}]}`, ""},
		{"no users", `{"users":[]}`, "no users"},
		{"no sub", `{"users":[{"email":"a@example.com"}]}`, "has no sub"},
		{"twice", `{"users":[{"sub":"a"},{"sub":"a"}]}`, "appears twice"},
		{"unknown field", `{"users":[{"sub":"a","group":["x"]}]}`, "unknown field"},
		{"not JSON", `users: a`, "want {"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseUsers([]byte(tc.doc))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestListenLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		wantErr string
	}{
		{"127.0.0.1:0", ""},
		{"localhost:0", ""},
		{"0.0.0.0:0", "not a loopback address"},
		{"192.0.2.1:0", "not a loopback address"},
		{"127.0.0.1", "missing port"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ln, err := listenLoopback(tc.addr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				ln.Close()
				return
			}
			if err == nil {
				ln.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("listenLoopback(%q) = %v, want an error saying %q", tc.addr, err, tc.wantErr)
			}
		})
	}
}
