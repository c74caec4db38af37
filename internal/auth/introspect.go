package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rs"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/flowyprompt/flowyprompt/internal/hostguard"
)

// Bounds of token introspection.
const (
	// MaxIntrospected bounds the introspection results kept: past it, the
	// least recently used goes.
	MaxIntrospected = 10_000
	// InactiveFor is how long the answer that a token is not active (or
	// is refused for its audience, issuer or times) is kept, so that a
	// client repeating a bad token costs the authorization server one
	// request each InactiveFor, not one each time.
	InactiveFor = 30 * time.Second
	// NoExpiryFor is how long an active token whose introspection names
	// no exp is kept.
	NoExpiryFor = time.Minute
	// maxIntrospecting bounds the introspection requests in flight: a
	// flood of distinct tokens waits for its turn instead of opening a
	// connection each to the authorization server.
	maxIntrospecting = 16
	// nbfLeeway is the leeway go-oidc gives nbf, for clocks that differ.
	nbfLeeway = 5 * time.Minute
)

// ErrUnavailable wraps the error of an introspection that got no answer:
// the endpoint is down, slow, answered an error, or refused this server's
// client credentials. Whether the token is valid is not known.
var ErrUnavailable = errors.New("the token introspection endpoint gave no answer")

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	// URL is the authorization server's introspection endpoint.
	URL string
	// ClientID and ClientSecret authenticate this server to it (HTTP
	// Basic, RFC 6749 section 2.3.1). The secret is never logged nor put
	// in an error.
	ClientID     string
	ClientSecret string
}

// String shows the endpoint and the client, never the secret.
func (i Introspection) String() string {
	return fmt.Sprintf("introspection at %s as client %q", i.URL, i.ClientID)
}

// GoString is String, so that %#v does not show the secret either.
func (i Introspection) GoString() string { return i.String() }

// LogValue is String, for log/slog.
func (i Introspection) LogValue() slog.Value { return slog.StringValue(i.String()) }

// endpoint is the introspection endpoint as github.com/zitadel/oidc's
// resource server client calls it.
type endpoint struct {
	url    string
	client *http.Client
	authn  httphelper.RequestAuthorization
}

func (e *endpoint) IntrospectionURL() string { return e.url }

// TokenEndpoint is not used: this server only introspects.
func (e *endpoint) TokenEndpoint() string    { return "" }
func (e *endpoint) HttpClient() *http.Client { return e.client }
func (e *endpoint) AuthFn() (any, error)     { return e.authn, nil }

// introspected is an introspection answer: the library's reading of
// RFC 7662's fields, and the whole document, from which the member is read
// as from a JWT's claims.
type introspected struct {
	oidc.IntrospectionResponse
	raw json.RawMessage
}

func (i *introspected) UnmarshalJSON(b []byte) error {
	i.raw = slices.Clone(b)
	return json.Unmarshal(b, &i.IntrospectionResponse)
}

// introspector checks tokens at the introspection endpoint. Its results
// are cached by tokenKey, never the token itself.
type introspector struct {
	ep       rs.ResourceServer
	url      string
	issuer   string
	audience string
	now      func() time.Time
	log      *slog.Logger

	cache    memory
	flights  singleflight.Group
	slots    *semaphore.Weighted
	warnings rate.Sometimes
}

func newIntrospector(in *Introspection, opts Options, client *http.Client) (*introspector, error) {
	if err := checkURL(in.URL); err != nil {
		return nil, fmt.Errorf("auth introspection %q: %w; want the authorization server's introspection endpoint, e.g. https://login.example.com/realms/team/protocol/openid-connect/token/introspect", redacted(in.URL), err)
	}
	if in.ClientID == "" || in.ClientSecret == "" {
		return nil, errors.New("auth introspection: no client credentials; set FLOWYPROMPT_AUTH_CLIENT_ID and FLOWYPROMPT_AUTH_CLIENT_SECRET")
	}
	if u, _ := url.Parse(in.URL); u.Scheme == "http" && !hostguard.Loopback(u.Hostname()) {
		opts.Logger.Warn("the token introspection endpoint is plain http: the client secret and the members' tokens cross the network unencrypted",
			"endpoint", in.URL, "how", "use the endpoint's https:// URL")
	}
	cache, err := newMemory(MaxIntrospected)
	if err != nil {
		return nil, err
	}
	return &introspector{
		ep:       &endpoint{url: in.URL, client: client, authn: httphelper.AuthorizeBasic(in.ClientID, in.ClientSecret)},
		url:      in.URL,
		issuer:   opts.Issuer,
		audience: opts.Audience,
		now:      opts.Now,
		log:      opts.Logger,
		cache:    cache,
		slots:    semaphore.NewWeighted(maxIntrospecting),
		warnings: rate.Sometimes{Interval: 30 * time.Second},
	}, nil
}

// verify returns the member token names, its Groups read by claim, from
// the cache (under key, tokenKey(claim, token)) or the endpoint.
// Concurrent checks of one token share one request.
func (in *introspector) verify(ctx context.Context, key [sha256.Size]byte, claim, token string) (*Member, error) {
	if r, ok := in.cache.get(key, in.now()); ok {
		return r.m, r.err
	}
	// The request outlives the caller that started it, for the others
	// waiting on it; fetchTimeout bounds it.
	ch := in.flights.DoChan(string(key[:]), func() (any, error) {
		if r, ok := in.cache.get(key, in.now()); ok {
			return r, nil
		}
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		defer cancel()
		return in.introspect(ictx, key, claim, token)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case c := <-ch:
		if c.Err != nil {
			return nil, c.Err
		}
		r := c.Val.(result)
		return r.m, r.err
	}
}

// introspect asks the endpoint about token and caches the answer. Its
// error is ErrUnavailable's: no answer, nothing cached.
func (in *introspector) introspect(ctx context.Context, key [sha256.Size]byte, claim, token string) (result, error) {
	if err := in.slots.Acquire(ctx, 1); err != nil {
		return result{}, in.unavailable(fmt.Errorf("waiting for a turn: %w", err))
	}
	resp, err := rs.Introspect[*introspected](ctx, in.ep, token)
	in.slots.Release(1)
	if err != nil {
		return result{}, in.unavailable(err)
	}
	if resp == nil {
		return result{}, in.unavailable(errors.New("an empty answer (null)"))
	}
	now := in.now()
	m, err := in.member(resp, claim, now)
	r := result{m: m, err: err, until: now.Add(InactiveFor)}
	if err == nil {
		r.until = now.Add(NoExpiryFor)
		if exp := resp.Expiration.AsTime(); !exp.IsZero() {
			r.until = exp
		}
	}
	in.cache.add(key, r)
	return r, nil
}

// member checks an introspection answer as go-oidc checks a JWT's claims
// and returns the member it names, its Groups read by claim.
func (in *introspector) member(resp *introspected, claim string, now time.Time) (*Member, error) {
	if !resp.Active {
		return nil, errors.New("the introspection endpoint says the token is not active (revoked, expired or unknown)")
	}
	if exp := resp.Expiration.AsTime(); !exp.IsZero() && !now.Before(exp) {
		return nil, fmt.Errorf("token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf := resp.NotBefore.AsTime(); !nbf.IsZero() && now.Add(nbfLeeway).Before(nbf) {
		return nil, fmt.Errorf("token not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if resp.Issuer != "" && resp.Issuer != in.issuer {
		return nil, fmt.Errorf("token issued by %q, not %q", resp.Issuer, in.issuer)
	}
	if !slices.Contains(resp.Audience, in.audience) {
		return nil, fmt.Errorf("token for the audience %q, not %q", []string(resp.Audience), in.audience)
	}
	return newMember(in.issuer, resp.Subject, resp.raw, claim)
}

// unavailable wraps err as ErrUnavailable's and logs it, at most once
// every 30 s: while the endpoint is down every request that needs it
// fails, and one line says why.
func (in *introspector) unavailable(err error) error {
	how := "check --auth-introspection (FLOWYPROMPT_AUTH_INTROSPECTION) and that this machine reaches it"
	var oe *oidc.Error
	if errors.As(err, &oe) && oe.ErrorType == oidc.InvalidClient {
		how = "the authorization server refused this server's client credentials: check FLOWYPROMPT_AUTH_CLIENT_ID and FLOWYPROMPT_AUTH_CLIENT_SECRET"
	}
	in.warnings.Do(func() {
		in.log.Warn("token introspection failed: requests whose tokens need it are answered 503 until it works",
			"endpoint", in.url, "error", err, "how", how)
	})
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
