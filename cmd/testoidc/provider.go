package main

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Config configures the provider.
type Config struct {
	// Issuer is the provider's URL, its tokens' iss.
	Issuer string
	Users  []User
	// ClientID is the one public client; RedirectURIs are its redirect
	// URIs (a loopback one matches any port).
	ClientID     string
	RedirectURIs []string
	TokenTTL     time.Duration
	Logger       *slog.Logger
}

// loginPath is the login the op package sends a user to: it signs in the
// user the request names at once (no page, no consent to give).
const loginPath = "/login"

// newProvider returns the handler of the whole provider: the op package's
// endpoints and the login.
func newProvider(cfg Config) (http.Handler, error) {
	if len(cfg.Users) == 0 {
		return nil, fmt.Errorf("no users: the provider needs at least one to sign in")
	}
	c := &client{id: cfg.ClientID, redirects: cfg.RedirectURIs, scopes: supportedScopes(cfg.Users)}
	st, err := newStorage(cfg.Users, c, cfg.TokenTTL)
	if err != nil {
		return nil, err
	}
	var cryptoKey [32]byte // the op package's key for opaque tokens, which this provider does not issue
	_, _ = rand.Read(cryptoKey[:])
	if cfg.Logger != nil {
		slog.SetDefault(cfg.Logger) // the op package logs through slog's default
	}
	p, err := op.NewProvider(&op.Config{
		CryptoKey:       cryptoKey,
		CodeMethodS256:  true,
		SupportedScopes: c.scopes,
		SupportedClaims: append(slices.Clone(op.DefaultSupportedClaims), "scope", "groups"),
	}, st, op.StaticIssuer(cfg.Issuer),
		op.WithAllowInsecure(), // http on loopback
		op.WithHttpInterceptors(resourceIndicators(st)),
	)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(loginPath, op.NewIssuerInterceptor(p.IssuerFromRequest).HandlerFunc(login(p, st)))
	mux.Handle("/", p)
	return mux, nil
}

// supportedScopes are the scopes the discovery document lists: openid and
// every scope a user may be granted.
func supportedScopes(users []User) []string {
	scopes := []string{oidc.ScopeOpenID, oidc.ScopeEmail}
	for _, u := range users {
		for _, s := range u.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	return scopes
}

// resourceIndicators reads the RFC 8707 resource parameters, which must
// be absolute URLs without a fragment: at the authorization endpoint they
// become the audience of the request's tokens (the storage reads them
// from the context: the op package's request has no field for them); at
// the token endpoint, each must be one the code was authorised for.
func resourceIndicators(st *storage) op.HttpInterceptor {
	authorize := op.DefaultEndpoints.Authorization.Relative()
	token := op.DefaultEndpoints.Token.Relative()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != authorize && r.URL.Path != token {
				next.ServeHTTP(w, r)
				return
			}
			if err := r.ParseForm(); err != nil {
				op.RequestError(w, r, oidc.ErrInvalidRequest().WithDescription("cannot parse the request"), nil)
				return
			}
			resources := r.Form["resource"]
			for _, res := range resources {
				if u, err := url.Parse(res); err != nil || !u.IsAbs() || u.Fragment != "" {
					op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("resource %q is not an absolute URL without a fragment", res), nil)
					return
				}
			}
			if r.URL.Path == authorize {
				r = r.WithContext(withResources(r.Context(), resources))
			} else if r.Form.Get("grant_type") == string(oidc.GrantTypeCode) && !st.authorizedFor(r.Form.Get("code"), resources) {
				op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("the code was not authorised for that resource"), nil)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// login signs in the user the authorization request's login_hint names
// (sub or email), else the first user, and sends the browser on to the
// op package's callback, which redirects to the client with the code. An
// unknown login_hint is access_denied, sent to the client.
func login(p *op.Provider, st *storage) http.HandlerFunc {
	callback := op.AuthCallbackURL(p)
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		req, err := st.AuthRequestByID(r.Context(), id)
		if err != nil {
			http.Error(w, "unknown authorization request", http.StatusBadRequest)
			return
		}
		u, ok := find(st.users, req.(*authRequest).loginHint)
		if !ok {
			op.AuthRequestError(w, r, req, oidc.ErrAccessDenied().WithDescription("login_hint names no test user"), p)
			return
		}
		if err := st.signIn(id, u); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}
}

// client is the one public client: PKCE instead of a secret, JWT access
// tokens, a native application's loopback redirect (any port).
type client struct {
	id        string
	redirects []string
	scopes    []string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType         { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string            { return loginPath + "?id=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(scope string) bool     { return slices.Contains(c.scopes, scope) }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
