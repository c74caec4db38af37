package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the op.Storage of the provider: what a real one keeps in its
// database, in memory. Only the authorization code grant of the one public
// client is served; refresh tokens, client credentials, JWT profile and
// introspection are refused.
type storage struct {
	users  []User
	client *client
	key    signingKey
	ttl    time.Duration

	mu       sync.Mutex
	requests map[string]*authRequest // by id
	codes    map[string]string       // code → request id
}

// Bounds of the pending authorization requests: a request is kept until
// its code is exchanged, or for requestTTL.
const (
	maxRequests = 1024
	requestTTL  = 10 * time.Minute
)

func newStorage(users []User, c *client, ttl time.Duration) (*storage, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return &storage{
		users: users, client: c, ttl: ttl,
		key:      signingKey{id: rand.Text(), key: k},
		requests: map[string]*authRequest{}, codes: map[string]string{},
	}, nil
}

// authRequest is one authorization request, from the authorization
// endpoint until its code is exchanged.
type authRequest struct {
	id        string
	created   time.Time
	clientID  string
	redirect  string
	state     string
	nonce     string
	loginHint string
	scopes    []string
	respType  oidc.ResponseType
	respMode  oidc.ResponseMode
	challenge *oidc.CodeChallenge
	// resources are the RFC 8707 resource indicators asked for: the
	// access token's audience.
	resources []string

	// Set by the login.
	subject  string
	authTime time.Time
	done     bool
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"test"} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirect }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.respType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.respMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// GetAudience is the resource asked for (RFC 8707), else the client: the
// op package makes it the aud of both the access and the ID token.
func (a *authRequest) GetAudience() []string {
	if len(a.resources) > 0 {
		return a.resources
	}
	return []string{a.clientID}
}

type resourcesKey struct{}

// withResources returns ctx carrying the resource indicators of an
// authorization request: the op package's request type has no field for
// them, so the provider's interceptor reads them from the request.
func withResources(ctx context.Context, resources []string) context.Context {
	return context.WithValue(ctx, resourcesKey{}, resources)
}

func (s *storage) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if r.CodeChallenge == "" || r.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method=S256 is required")
	}
	resources, _ := ctx.Value(resourcesKey{}).([]string)
	req := &authRequest{
		id: rand.Text(), created: time.Now(), clientID: r.ClientID, redirect: r.RedirectURI,
		state: r.State, nonce: r.Nonce, loginHint: r.LoginHint, scopes: r.Scopes,
		respType: r.ResponseType, respMode: r.ResponseMode,
		challenge: &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod},
		resources: resources,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= maxRequests {
		s.pruneLocked(time.Now())
	}
	if len(s.requests) >= maxRequests {
		return nil, oidc.ErrServerError().WithDescription("%d authorization requests pending; exchange their codes first", maxRequests)
	}
	s.requests[req.id] = req
	return req, nil
}

// pruneLocked forgets the requests older than requestTTL.
func (s *storage) pruneLocked(now time.Time) {
	for id, r := range s.requests {
		if now.Sub(r.created) > requestTTL {
			delete(s.requests, id)
		}
	}
	for code, id := range s.codes {
		if _, ok := s.requests[id]; !ok {
			delete(s.codes, code)
		}
	}
}

var errNotFound = errors.New("not found")

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return nil, fmt.Errorf("authorization request: %w", errNotFound)
	}
	return r, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("code: %w", errNotFound)
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// authorizedFor reports whether every resource is one the request of
// code was authorised for. An unknown code passes: the op package refuses
// it.
func (s *storage) authorizedFor(code string, resources []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[s.codes[code]]
	if !ok {
		return true
	}
	for _, res := range resources {
		if !slices.Contains(r.resources, res) {
			return false
		}
	}
	return true
}

// signIn marks the request id as signed in by u, and narrows its scopes
// to those u may be granted (the OpenID Connect ones always pass).
func (s *storage) signIn(id string, u User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return fmt.Errorf("authorization request: %w", errNotFound)
	}
	r.scopes = slices.DeleteFunc(slices.Clone(r.scopes), func(sc string) bool {
		return !oidcScope(sc) && !slices.Contains(u.Scopes, sc)
	})
	r.subject, r.authTime, r.done = u.Subject, time.Now(), true
	return nil
}

func oidcScope(s string) bool {
	switch s {
	case oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail:
		return true
	}
	return false
}

func (s *storage) user(sub string) (User, bool) {
	for _, u := range s.users {
		if u.Subject == sub {
			return u, true
		}
	}
	return User{}, false
}

// CreateAccessToken names a new access token; the op package signs it as
// a JWT (the client's AccessTokenType), so nothing is stored.
func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return rand.Text(), time.Now().Add(s.ttl), nil
}

var errNoRefresh = errors.New("refresh tokens are not issued by this provider")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNoRefresh
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNoRefresh
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrRequestNotSupported().WithDescription("tokens of this provider live until they expire")
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return &s.key, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{&s.key}}, nil }

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.client.id {
		return nil, fmt.Errorf("client %q: %w", id, errNotFound)
	}
	return s.client, nil
}

func (s *storage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return errors.New("this provider has no confidential clients")
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	u, ok := s.user(subject)
	if !ok {
		return fmt.Errorf("user %q: %w", subject, errNotFound)
	}
	info.Subject, info.Email = u.Subject, u.Email
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not served: access tokens are JWTs")
}

// GetPrivateClaimsFromScopes are the access token's claims beyond the
// registered ones: the granted scope (RFC 9068), the user's email and
// groups.
func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, sub, _ string, scopes []string) (map[string]any, error) {
	u, ok := s.user(sub)
	if !ok {
		return nil, fmt.Errorf("user %q: %w", sub, errNotFound)
	}
	claims := map[string]any{"scope": strings.Join(scopes, " ")}
	if u.Email != "" {
		claims["email"] = u.Email
	}
	if u.Groups != nil {
		claims["groups"] = u.Groups
	}
	return claims, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("the JWT profile grant is not served")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not served")
}

func (s *storage) Health(context.Context) error { return nil }

// signingKey is the provider's one RS256 key, made at start.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is the signing key as the JWKS publishes it.
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }
