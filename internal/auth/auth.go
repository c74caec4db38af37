// Package auth is flowyprompt's OAuth 2.1 resource server: it checks the
// access tokens a team's authorization server issues to its members and
// says who each names.
//
// Every check of a token is a library's: github.com/coreos/go-oidc/v3
// verifies the signature against the issuer's published keys (its
// RemoteKeySet caches them and fetches them again when a token names an
// unknown key id) and the iss, aud, exp and nbf claims, with the signing
// algorithms restricted to asymmetric ones, so that "none" and an HMAC
// keyed with a public key are refused before any key is tried. What this
// package adds is the discovery of the issuer (retried until it answers,
// so that an issuer down at start is not fatal), a bound on how often the
// keys are fetched again (once a minute: a stream of tokens with made-up
// key ids cannot make the server hammer the issuer), and the reading of
// the member and the scopes the token grants.
//
// Tokens the issuer's keys cannot verify, opaque ones above all, are
// checked at the issuer's RFC 7662 introspection endpoint when one is
// configured, through github.com/zitadel/oidc's resource server client;
// its answers are cached, as the JWTs checked are remembered, by the
// SHA-256 of the policy's claim and the token (tokenKey), until the token
// expires, and a refusal for InactiveFor, within MaxIntrospected entries.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// Scopes the server knows.
const (
	// ScopeRead lets a member read: lists, get, render, search, history,
	// resources, completion, flows.
	ScopeRead = "prompts:read"
	// ScopeWrite lets a member save templates.
	ScopeWrite = "prompts:write"
)

// Scopes is what scopes_supported lists.
var Scopes = []string{ScopeRead, ScopeWrite}

// signingAlgs are the algorithms a token may be signed with: asymmetric
// only. A token whose header names another (none, HS256...) is refused
// before its signature is looked at.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// Defaults of Options.
const (
	// DefaultMinRefresh is the least time between two fetches of the
	// issuer's keys.
	DefaultMinRefresh = time.Minute
	// MaxTokenBytes bounds the token read from a request: past it, the
	// token is refused unread. Real access tokens are a few KiB.
	MaxTokenBytes = 16 << 10
	// maxMetadataBytes bounds the issuer's metadata document.
	maxMetadataBytes = 1 << 20
	fetchTimeout     = 10 * time.Second
	maxRetryWait     = time.Minute
)

// What a Verifier remembers of the JWTs it checked.
const (
	// MaxVerified bounds the JWTs remembered: past it, the least recently
	// used is forgotten (about 3 MB at most).
	MaxVerified = 10_000
	// VerifiedFor is the longest a checked JWT is remembered, however
	// far its exp: a key the issuer stopped publishing stops opening the
	// tokens it signed within it. (A change of the policy's claim takes
	// effect at once: a token is remembered under the claim it was read
	// with.)
	VerifiedFor = 5 * time.Minute
)

// Options configure a Verifier.
type Options struct {
	// Issuer is the authorization server's issuer URL, exactly as its
	// tokens' iss claim names it.
	Issuer string
	// Audience is the aud a token must hold: the resource
	// (PUBLIC_URL/mcp), or the override for an authorization server that
	// cannot put the resource there.
	Audience string
	// MinRefresh is the least time between two fetches of the keys
	// (default DefaultMinRefresh).
	MinRefresh time.Duration
	// Client fetches the metadata and the keys (default: a client with a
	// 10 s timeout).
	Client *http.Client
	// Now is the clock the claims are checked against (default
	// time.Now).
	Now func() time.Time
	// Claim, when set, names the claim whose values a Member's Groups
	// hold (the access policy's claim: groups, roles, sub, email...). It
	// is asked for each token, so that a policy reloaded with another
	// claim applies to the tokens checked from then on.
	Claim  func() string
	Logger *slog.Logger
	// Introspection, when set, checks the tokens that are not JWTs the
	// issuer's keys verify at the issuer's introspection endpoint.
	Introspection *Introspection
}

// Member is who a valid token names.
type Member struct {
	Issuer  string
	Subject string
	// Email is the token's email claim, when it has one.
	Email  string
	Scopes []string
	// Groups are the values of the claim Options.Claim names (a string
	// claim's one value, a list's strings), which the access policy
	// matches: the member's groups, or their sub or email.
	Groups []string
}

// Has reports whether the token granted scope.
func (m *Member) Has(scope string) bool {
	for _, s := range m.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// ErrNotReady is returned while the issuer's metadata has not been read
// yet (the issuer has not answered since the server started).
var ErrNotReady = errors.New("the authorization server has not been reached yet")

// Verifier checks access tokens. Its methods are safe for concurrent use.
type Verifier struct {
	opts   Options
	log    *slog.Logger
	client *http.Client
	// keysClient fetches the keys, at most once per MinRefresh.
	keysClient *http.Client
	v          atomic.Pointer[oidc.IDTokenVerifier]
	// in introspects the other tokens; nil without Options.Introspection.
	in *introspector
	// verified remembers the JWTs checked, by tokenKey, until they
	// expire and at most VerifiedFor.
	verified memory
	ready    chan struct{}
	once     sync.Once
}

// New returns a Verifier for opts. It reaches the issuer only once Start
// runs.
func New(opts Options) (*Verifier, error) {
	if err := checkURL(opts.Issuer); err != nil {
		return nil, fmt.Errorf("auth issuer %q: %w; want the authorization server's issuer URL, e.g. https://login.example.com/realms/team", redacted(opts.Issuer), err)
	}
	if opts.Audience == "" {
		return nil, errors.New("auth audience: empty; it is the resource, PUBLIC_URL/mcp, unless --auth-audience overrides it")
	}
	if opts.MinRefresh <= 0 {
		opts.MinRefresh = DefaultMinRefresh
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	base := opts.Client
	if base == nil {
		base = &http.Client{Timeout: fetchTimeout}
	}
	tr := base.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	keys := *base
	keys.Transport = &limitedKeys{base: tr, every: opts.MinRefresh, now: opts.Now}
	verified, err := newMemory(MaxVerified)
	if err != nil {
		return nil, err
	}
	v := &Verifier{opts: opts, log: opts.Logger, client: base, keysClient: &keys, verified: verified, ready: make(chan struct{})}
	if opts.Introspection != nil {
		in, err := newIntrospector(opts.Introspection, opts, base)
		if err != nil {
			return nil, err
		}
		v.in = in
	}
	return v, nil
}

// redacted is u as an error may show it: without a password.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(not a URL)"
	}
	return p.Redacted()
}

// checkURL says what is wrong with u as the URL of an authorization
// server or one of its endpoints, without repeating u.
func checkURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		// url.Parse's error repeats the URL, which may hold credentials.
		return errors.New("not a URL")
	case p.Scheme != "https" && p.Scheme != "http":
		return errors.New("not an http(s) URL")
	case p.Host == "":
		return errors.New("no host")
	case p.User != nil:
		return errors.New("credentials in the URL")
	case p.RawQuery != "" || p.Fragment != "":
		return errors.New("a query or a fragment")
	}
	return nil
}

// Issuer returns the issuer URL.
func (v *Verifier) Issuer() string { return v.opts.Issuer }

// Ready is closed once the issuer's metadata has been read.
func (v *Verifier) Ready() <-chan struct{} { return v.ready }

// Start reads the issuer's metadata, retrying (with a growing wait, up to
// a minute) until it answers or ctx ends. It returns at once; Ready tells
// when it is done.
func (v *Verifier) Start(ctx context.Context) {
	v.once.Do(func() { go v.discoverLoop(ctx) })
}

func (v *Verifier) discoverLoop(ctx context.Context) {
	wait := time.Second
	for {
		err := v.discover(ctx)
		if err == nil {
			// Written before Ready is closed: whoever sees it closed
			// finds the line in the log.
			v.log.Info("authorization server reached", "issuer", v.opts.Issuer)
			close(v.ready)
			return
		}
		v.log.Warn("the authorization server cannot be reached: tokens are refused until it is; retrying",
			"issuer", v.opts.Issuer, "error", err, "retry_in", wait,
			"how", "check --auth-issuer (FLOWYPROMPT_AUTH_ISSUER) and that this machine reaches it")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// metadata is the part of an authorization server's metadata (OpenID
// Connect Discovery, RFC 8414) a resource server needs.
type metadata struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// discover reads the issuer's metadata, from the OpenID Connect location
// and else from RFC 8414's, and sets up the token check.
func (v *Verifier) discover(ctx context.Context) error {
	var errs []error
	for _, u := range metadataURLs(v.opts.Issuer) {
		md, err := v.fetchMetadata(ctx, u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != v.opts.Issuer {
			return fmt.Errorf("%s names the issuer %q, not %q: set --auth-issuer to exactly the issuer its tokens carry", u, md.Issuer, v.opts.Issuer)
		}
		if md.JWKSURI == "" {
			if v.in != nil {
				v.log.Info("the authorization server publishes no keys (jwks_uri): every token is introspected", "issuer", v.opts.Issuer)
				return nil
			}
			return fmt.Errorf("%s has no jwks_uri: the server needs the issuer's keys to check tokens, or --auth-introspection to introspect them", u)
		}
		keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), v.keysClient), md.JWKSURI)
		v.v.Store(oidc.NewVerifier(v.opts.Issuer, keys, &oidc.Config{
			ClientID: v.opts.Audience, SupportedSigningAlgs: signingAlgs, Now: v.opts.Now,
		}))
		return nil
	}
	return errors.Join(errs...)
}

// metadataURLs are where the issuer's metadata may be: OpenID Connect
// Discovery appends its well-known path to the issuer; RFC 8414 inserts
// its own between the host and the issuer's path.
func metadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.Path, "/")
	oidcURL := *u
	oidcURL.Path = path + "/.well-known/openid-configuration"
	oauthURL := *u
	oauthURL.Path = "/.well-known/oauth-authorization-server" + path
	return []string{oidcURL.String(), oauthURL.String()}
}

func (v *Verifier) fetchMetadata(ctx context.Context, u string) (*metadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: %s", u, resp.Status)
	}
	var md metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&md); err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	return &md, nil
}

// claims are the claims read beyond those go-oidc checks. Scopes come as
// RFC 9068's space-separated scope, or as a list in scp (Okta, Entra ID).
type claims struct {
	Email string          `json:"email"`
	Scope string          `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// Verify checks token and returns the member it names. Its errors say why
// a token was refused; they never hold the token. With introspection, a
// token that is not a JWT the issuer's keys can verify (opaque, or signed
// with an algorithm they do not have, or any token while the issuer's keys
// are not known) is introspected; an error then wraps ErrUnavailable when
// the endpoint gave no answer.
func (v *Verifier) Verify(ctx context.Context, token string) (*Member, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("token of %d bytes, more than %d", len(token), MaxTokenBytes)
	}
	// The member's groups are read by the policy's claim in force: a
	// token is remembered under it, so a new claim reads it again.
	claim := ""
	if v.opts.Claim != nil {
		claim = v.opts.Claim()
	}
	key := tokenKey(claim, token)
	// A token checked before is not checked again while it is
	// remembered: its RS256 signature costs 70 µs a request, where the
	// rest of a request costs a tenth of that (BenchmarkGuardCredential).
	// Only verified JWTs are remembered here, so a remembered one needs
	// no telling from an opaque token either.
	now := v.opts.Now()
	if r, ok := v.verified.get(key, now); ok {
		return r.m, nil
	}
	iv := v.v.Load()
	if v.in != nil && (iv == nil || !isJWT(token)) {
		return v.in.verify(ctx, key, claim, token)
	}
	if iv == nil {
		return nil, ErrNotReady
	}
	t, err := iv.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := t.Claims(&raw); err != nil {
		return nil, fmt.Errorf("token claims: %w", err)
	}
	m, err := newMember(t.Issuer, t.Subject, raw, claim)
	if err != nil {
		return nil, err
	}
	until := now.Add(VerifiedFor)
	if !t.Expiry.IsZero() && t.Expiry.Before(until) {
		until = t.Expiry
	}
	v.verified.add(key, result{m: m, until: until})
	return m, nil
}

// isJWT reports whether token is a JWS in compact form signed with one of
// the algorithms the issuer's keys are taken for: only such a token can be
// verified here.
func isJWT(token string) bool {
	_, err := jose.ParseSignedCompact(token, joseAlgs)
	return err == nil
}

// joseAlgs are signingAlgs as go-jose names them.
var joseAlgs = func() []jose.SignatureAlgorithm {
	algs := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return algs
}()

// newMember reads the member of a checked token from its claims: a JWT's,
// or an introspection answer (RFC 7662 names its fields as RFC 7519 does);
// claim names the claim whose values are the member's Groups ("": none
// are read).
func newMember(issuer, subject string, raw json.RawMessage, claim string) (*Member, error) {
	if strings.TrimSpace(subject) == "" {
		return nil, errors.New("token names no subject (sub)")
	}
	var c claims
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("token claims: %w", err)
	}
	m := &Member{Issuer: issuer, Subject: subject, Email: c.Email, Scopes: strings.Fields(c.Scope)}
	if len(c.Scp) > 0 {
		var list []string
		var one string
		switch {
		case json.Unmarshal(c.Scp, &list) == nil:
			m.Scopes = append(m.Scopes, list...)
		case json.Unmarshal(c.Scp, &one) == nil:
			m.Scopes = append(m.Scopes, strings.Fields(one)...)
		}
	}
	if claim != "" {
		var all map[string]json.RawMessage
		if err := json.Unmarshal(raw, &all); err != nil {
			return nil, fmt.Errorf("token claims: %w", err)
		}
		m.Groups = ClaimValues(all[claim])
	}
	return m, nil
}

// ClaimValues reads a claim's values as the access policy matches them: a
// string is one value, a list its strings (anything else in it is
// skipped); a claim that is absent or of another kind has none.
func ClaimValues(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		if json.Unmarshal(x, &one) == nil {
			out = append(out, one)
		}
	}
	return out
}

type memberKey struct{}

// WithMember returns ctx carrying m, for what records who asked (the
// audit log).
func WithMember(ctx context.Context, m *Member) context.Context {
	return context.WithValue(ctx, memberKey{}, m)
}

// MemberOf returns the member ctx carries, nil when none.
func MemberOf(ctx context.Context) *Member {
	m, _ := ctx.Value(memberKey{}).(*Member)
	return m
}
