// Package httpserver is flowyprompt's one HTTP listener: the legacy SSE
// transport (/sse, /sse/message) for Void, Streamable HTTP (/mcp) for MCP
// Inspector and modern clients, /healthz, and with Options.UI the preview
// page at /ui/, behind one security layer.
//
// The security layer is there because a server on 127.0.0.1 is reachable
// from every web page the user opens: a page whose DNS name is rebound to
// 127.0.0.1 sends requests with its own Host and Origin, so both are
// checked against allow lists (loopback names by default). An optional
// bearer token guards /mcp, /sse and every post to an SSE session; Void
// cannot send headers, so the SSE URL may carry it as ?token= instead, and
// the endpoint URL handed to such a client then carries it too. Sessions
// and bodies are capped, sessions per server and per client (the token,
// else the address, which X-Forwarded-For gives only from the trusted
// proxies).
//
// Behind a load balancer, replicas reach each other's 2025-era sessions
// through Options.Sessions: a request for a session another replica holds
// passes this replica's guard, then is forwarded to the holder, which runs
// it on its own endpoints (after the guard) and streams the answer back.
package httpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/hostguard"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/sse"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
)

// Defaults of Options.
const (
	DefaultAddr        = "127.0.0.1:3000"
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerClient is a tenth of the server's cap: ten
	// clients are needed to fill it, and one that tries is refused long
	// before, while a client's own sessions and streams fit many times.
	DefaultMaxSessionsPerClient = 1000
	// DefaultMaxInflightBytes bounds the bytes of posted messages held at
	// once (Options.MaxInflightBytes).
	DefaultMaxInflightBytes  = httpx.DefaultMaxInflightBytes
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	// MaxHeaderBytes bounds a request's head; a larger one gets 431.
	MaxHeaderBytes = 64 << 10
)

// Options configure the server; zero values take the defaults.
type Options struct {
	// Addr is the listen address (default 127.0.0.1:3000).
	Addr string
	// PublicURL is the base URL clients use when the server sits behind a
	// reverse proxy, e.g. https://prompts.example.com. Its host is allowed
	// as a Host and its origin as an Origin.
	PublicURL string
	// AllowedHosts are extra Host header values: "name" (any port) or
	// "name:port"; "*" turns the Host check off.
	AllowedHosts []string
	// AllowedOrigins are extra Origin values, "scheme://host[:port]"; "*"
	// turns the Origin check off. Loopback origins are always allowed.
	AllowedOrigins []string
	// AuthToken, when set, is required on every request to /mcp, /sse and
	// /sse/message as "Authorization: Bearer TOKEN" (or ?token=TOKEN on
	// /sse and /sse/message), whatever session it names.
	AuthToken string
	// Auth, when set, makes the server an OAuth 2.1 resource server: every
	// request to /mcp, /sse and /sse/message needs a member's access token
	// in the Authorization header, which Auth verifies; the member owns the
	// sessions they open. It needs PublicURL (the resource is
	// PublicURL/mcp) and excludes AuthToken. The caller starts it
	// (auth.Verifier.Start).
	Auth *auth.Verifier
	// RequiredScope, with Auth, names the scope a posted message needs
	// beyond prompts:read ("" for none): a member whose token lacks it is
	// answered 403 with the step-up challenge (WWW-Authenticate: Bearer
	// error="insufficient_scope", scope=...) before the message runs, on
	// /mcp of both eras, /sse/message and POST /sse. The transports know
	// nothing of what a message does; the application says (for
	// flowyprompt, a call of the save tool needs prompts:write).
	RequiredScope func(in *mcp.Inbound) string
	// ReadHeaderTimeout bounds the wait for a request's head, from the
	// connection's start or the end of its previous request: a connection
	// that stays silent is closed after it (default 10 s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request after it
	// (default 30 s).
	IdleTimeout time.Duration
	// BodyTimeout bounds the wait for a posted message's body, once its
	// head has passed every check (default 30 s).
	BodyTimeout time.Duration
	// KeepAlive is the interval of keep-alive comments on streams
	// (default 15 s).
	KeepAlive time.Duration
	// MaxSessions caps live sessions and subscriptions/listen streams
	// together (default 10,000; negative: no cap). At the cap the least
	// recently used idle session is ended to make room; a client is
	// refused (503) only when none is idle.
	MaxSessions int
	// MaxSessionsPerClient caps the sessions and listen streams one client
	// holds (default 1,000; negative: no cap); more are refused with 429.
	// A client is the access token it presented, else its address (an
	// IPv6 address's /64).
	MaxSessionsPerClient int
	// TrustedProxies are the reverse proxies (addresses, CIDR ranges)
	// whose X-Forwarded-For names the client; from any other peer the
	// header is ignored.
	TrustedProxies []string
	// MaxBodyBytes caps a request body (default: the engine's
	// MaxMessageSize).
	MaxBodyBytes int64
	// MaxInflightBytes bounds the bytes of posted messages held at once,
	// from before a body is read until its request has run (default
	// DefaultMaxInflightBytes; negative: no bound): a quarter of it
	// per client, a sixteenth per session (httpx.Budgets).
	MaxInflightBytes int64
	// WriteTimeout drops a streaming client that has not taken a write for
	// this long (default 30 s).
	WriteTimeout time.Duration
	// PreferStreams makes /mcp answer with an event stream whenever the
	// client accepts one (see streamable.Options.PreferStreams).
	PreferStreams bool
	// Status adds to /healthz: its value's JSON object members are merged
	// into the report (templates, invalid, source, stale, ...). detail is
	// true for a request that carries the access token, which may see
	// paths and messages; anyone who reaches the listener may ask without
	// it (load balancers do), and a server without a token has nobody to
	// show them to: counts and codes only. ctx is the request's: with
	// Auth, it carries the member whose token it holds (auth.MemberOf), so
	// that a member is shown only what they may see.
	Status func(ctx context.Context, detail bool) any
	// Sessions, when set, makes 2025-era sessions reachable from every
	// replica behind a load balancer: a request for a session another
	// replica holds is forwarded to it (see SessionRouter).
	Sessions SessionRouter
	// UI, when set, is served at /ui/ (with the prefix stripped): the
	// preview page (internal/preview), read-only. Its files are the
	// binary's and public; its API, /ui/api/..., reads the library and
	// needs the credential /mcp does: the access token, which a page
	// that cannot send headers gives as ?token=, or a member's token in
	// the Authorization header (an OAuth server takes no token in a URL).
	UI     http.Handler
	Logger *slog.Logger
}

// SessionRouter reaches the sessions other replicas hold (cluster.Router
// is one, over NATS); httpserver uses it so:
//
//   - Serve is called once, by New, with the HTTP surface behind the
//     security guard: requests other replicas forward here run on it, and
//     their credential is not checked again (the forwarding replica's
//     guard did that). Who asked travels instead: the router gives the
//     holder's request the member the forwarder's guard admitted
//     (auth.MemberOf of the request Forward got, attached with
//     auth.WithMember to the one Serve's handler gets), never the token;
//     the handler binds it to the session's owner as the guard would (a
//     session of another member, or of none, is not found). A request
//     without a member has the zero httpx.Owner, as with the static token,
//     which names no one.
//   - Hold is called as a session opens, before its id reaches the client,
//     and what it returns as the session ends. An error does not fail the
//     session: it is served here only, and the error logged once.
//   - Connected is asked before forwarding: with the link down, a request
//     for a session this replica does not hold is answered 404 at once.
//   - Forward is called, after the guard and with the body read within
//     the usual limits, for a request naming a session this replica does
//     not hold; false means nobody holds it, and the request is answered
//     as for an unknown session.
//
// All of them may be called concurrently.
type SessionRouter interface {
	Serve(h http.Handler)
	Hold(id string) (release func(), err error)
	Connected() bool
	Forward(w http.ResponseWriter, r *http.Request, id string, body []byte) (held bool)
}

// Server is the HTTP front of one engine.
type Server struct {
	e    *mcp.Engine
	opts Options
	log  *slog.Logger

	sse    *sse.Handler
	mcp    *streamable.Handler
	srv    *http.Server
	ln     net.Listener
	public *url.URL

	hosts     atomic.Pointer[hostguard.Hosts]
	origins   map[string]bool
	anyOrigin bool
	tokenSum  [sha256.Size]byte
	// oauth checks members' tokens (Options.Auth); nil without.
	oauth    *resourceServer
	hasToken bool
	// credential is the client key of every request that presented the
	// token (clientid.ForCredential); proxies are the trusted proxies.
	credential string
	proxies    clientid.Proxies
	gate       *httpx.Gate
	closing    atomic.Bool
	// stopped is cancelled by Shutdown: forwarded GET streams end then,
	// as local ones do when the engine closes their sessions.
	stopped    context.Context
	stop       context.CancelFunc
	holdFailed atomic.Bool // the last Hold failed: logged, not again until one succeeds
	settings   httpx.Settings
	handler    http.Handler
	debugLog   bool
	listenHost string
}

// New builds the server; Listen binds it.
func New(e *mcp.Engine, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessions < 0 {
		opts.MaxSessions = 0
	}
	if opts.MaxSessionsPerClient == 0 {
		opts.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if opts.MaxSessionsPerClient < 0 {
		opts.MaxSessionsPerClient = 0
	}
	proxies, err := clientid.ParseProxies(opts.TrustedProxies)
	if err != nil {
		return nil, err
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	gate := httpx.NewGate(httpx.Limits{Max: opts.MaxSessions, PerClient: opts.MaxSessionsPerClient})
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = int64(e.Options().MaxMessageSize)
	}
	budget := httpx.NewBudget(httpx.BudgetLimits{})
	switch {
	case opts.MaxInflightBytes == 0:
		budget = httpx.NewBudget(httpx.Budgets(DefaultMaxInflightBytes, maxBody))
	case opts.MaxInflightBytes > 0:
		budget = httpx.NewBudget(httpx.Budgets(opts.MaxInflightBytes, maxBody))
	}
	settings := httpx.Settings{KeepAlive: opts.KeepAlive, MaxBodyBytes: maxBody,
		WriteTimeout: opts.WriteTimeout, BodyTimeout: opts.BodyTimeout, Logger: opts.Logger, Gate: gate, Budget: budget}
	settings.Fill(e)
	s := &Server{e: e, opts: opts, log: settings.Logger, origins: map[string]bool{}, gate: gate, proxies: proxies}
	s.stopped, s.stop = context.WithCancel(context.Background())
	if opts.Sessions != nil {
		settings.OnSession = s.holdSession
	}
	if opts.Auth != nil && opts.RequiredScope != nil {
		// A posted message's member must hold the scope it needs.
		settings.Admit = s.admitScope
	}
	s.settings = settings
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: want HOST:PORT, e.g. 127.0.0.1:3000: %w", opts.Addr, err)
	}
	s.listenHost = host
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("public URL %q: want an absolute http(s) URL without query, e.g. https://prompts.example.com", opts.PublicURL)
		}
		s.public = u
		s.origins[u.Scheme+"://"+strings.ToLower(u.Host)] = true
	}
	for _, o := range opts.AllowedOrigins {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
		case o == "*":
			s.anyOrigin = true
		default:
			origin, err := hostguard.ParseOrigin(o)
			if err != nil {
				return nil, fmt.Errorf("allowed origin %q: want scheme://host[:port], e.g. https://inspector.example.com: %w", o, err)
			}
			s.origins[origin] = true
		}
	}
	if opts.Auth != nil {
		if opts.AuthToken != "" {
			return nil, errors.New("an access token (--auth-token, MCP_AUTH_TOKEN) and an authorization server (--auth-issuer) are both set: members sign in with the issuer's tokens; unset one of them")
		}
		if s.public == nil {
			return nil, errors.New("an authorization server (--auth-issuer) needs --public-url: the resource its tokens are issued for is PUBLIC_URL/mcp")
		}
		rs, err := newResourceServer(opts.Auth, opts.PublicURL)
		if err != nil {
			return nil, err
		}
		s.oauth = rs
	}
	if opts.AuthToken != "" {
		s.hasToken = true
		s.tokenSum = sha256.Sum256([]byte(opts.AuthToken))
		s.credential = clientid.ForCredential(opts.AuthToken)
	}
	s.debugLog = s.log.Enabled(context.Background(), slog.LevelDebug)
	s.sse = sse.New(e, sse.Options{Settings: settings, PublicURL: opts.PublicURL})
	s.mcp = streamable.New(e, streamable.Options{Settings: settings, PreferStreams: opts.PreferStreams})

	mux := http.NewServeMux()
	mux.Handle("/sse", s.sse)
	mux.Handle("/sse/message", s.sse)
	mux.Handle("/mcp", s.mcp)
	mux.HandleFunc("/healthz", s.health)
	if opts.UI != nil {
		mux.Handle("/ui/", s.admitUIStreams(http.StripPrefix("/ui", opts.UI)))
	}
	if s.oauth != nil {
		mux.HandleFunc(metadataRoot, s.oauth.serveMetadata)
		mux.HandleFunc(metadataMCP, s.oauth.serveMetadata)
	}
	mux.HandleFunc("/", notFound)
	var inner http.Handler = mux
	if opts.Sessions != nil {
		opts.Sessions.Serve(forwarded(mux))
		inner = s.forwarding(mux)
	}
	s.handler = s.guard(inner)
	// net/http does what a server facing any client needs: a head that
	// does not arrive within ReadHeaderTimeout closes its connection (a
	// silent connection costs at most that long), a kept-alive connection
	// idle for IdleTimeout is closed, and the accept loop backs off instead
	// of failing when the process runs out of file descriptors. There is
	// no ReadTimeout or WriteTimeout: streams live for hours. Bodies get
	// their own deadline once their request has passed the guard
	// (httpx.ReadBody), and stream writes carry theirs.
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.setHosts(listenPort(opts.Addr))
	return s, nil
}

// Handler returns the whole HTTP surface, security layer included.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the listen address. The default Host allow list takes the
// port actually bound (which matters for ":0").
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	s.ln = ln
	s.setHosts(strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	return nil
}

// Addr returns the bound address (after Listen).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the base URL a client on this machine uses (after Listen):
// the configured host, or 127.0.0.1 when listening on every interface.
func (s *Server) URL() string {
	host := s.listenHost
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port))
}

// Serve serves until Shutdown; it returns nil after a shutdown.
func (s *Server) Serve() error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits (until ctx ends) for
// the requests being served to finish; past ctx it cuts the remaining
// connections. Streams end only when their sessions do: whoever owns the
// engine shuts it down at the same time (mcp.Engine.Shutdown), and
// /healthz says "shutting_down" meanwhile.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.stop()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// Sessions returns the live sessions of each transport.
func (s *Server) Sessions() (sseSessions, mcpSessions int) {
	return s.sse.Sessions(), s.mcp.Sessions()
}

func listenPort(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// setHosts builds the Host allow list for the bound port: the loopback
// names, the listen address itself when it is a specific address, the
// public URL's host, and the configured extras.
func (s *Server) setHosts(port string) {
	s.hosts.Store(hostguard.New(hostguard.Config{ListenHost: s.listenHost, Port: port, Public: s.public, Allowed: s.opts.AllowedHosts}))
}

// originAllowed: no Origin is a non-browser client; a browser page is
// allowed when it is served from this machine or listed. A value that is
// not an origin (hostguard.ParseOrigin: user information, a path, a
// fragment, "null") is refused whatever the lists say, so it is never
// echoed back either.
func (s *Server) originAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	o, err := hostguard.ParseOrigin(origin)
	if err != nil {
		return false
	}
	if s.anyOrigin || s.origins[o] {
		return true
	}
	u, _ := url.Parse(o)
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// credential returns the token r carries, and whether it came in the
// URL: the Authorization header's bearer token, else ?token= on the SSE
// paths and the preview page's API, for clients that cannot send headers
// (Void; a browser's EventSource).
func credential(r *http.Request) (token string, inURL bool) {
	if tok, ok := bearer(r.Header.Get("Authorization")); ok {
		return tok, false
	}
	if (r.URL.Path == "/sse" || r.URL.Path == "/sse/message" || isUIAPI(r.URL.Path)) && r.URL.RawQuery != "" {
		return r.URL.Query().Get("token"), true
	}
	return "", false
}

func (s *Server) tokenOK(got string) bool {
	if got == "" {
		return false
	}
	// Comparing digests keeps the time independent of where the strings
	// differ and of the token's length.
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// needsToken: the token guards every request that opens, runs or names a
// session. A session id is no credential: it travels in URLs and headers
// that are not kept secret, so a post to /sse/message needs the token as
// much as GET /sse does.
func needsToken(r *http.Request) bool {
	switch r.URL.Path {
	case "/mcp", "/sse", "/sse/message":
		return true
	}
	return isUIAPI(r.URL.Path)
}

// isUIAPI reports whether path is the preview page's API, which reads
// the library (Options.UI); the page's own files hold nothing of it.
func isUIAPI(path string) bool { return strings.HasPrefix(path, "/ui/api/") }

// uiEvents is the preview page's event stream, which a page holds open
// for as long as it is shown.
const uiEvents = "/ui/api/events"

// admitUIStreams admits each event stream of the page (Options.UI) under
// the caps of sessions and listen streams (httpx.Gate), for as long as it
// is open: it holds a connection as a listen stream does, so a client
// holds no more than --max-sessions-per-client of them all, nor the
// server more than --max-sessions. The page's own cap (its MaxStreams)
// counts every client's together.
func (s *Server) admitUIStreams(ui http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != uiEvents {
			ui.ServeHTTP(w, r)
			return
		}
		release, status, err := s.gate.AdmitStream(clientid.Of(r), "new event stream of the preview page")
		if err != nil {
			httpx.WriteError(w, r, status, err)
			return
		}
		defer release()
		ui.ServeHTTP(w, r)
	})
}

var corsAllowHeaders = strings.Join([]string{"Content-Type", "Accept", "Authorization", streamable.HeaderSession,
	streamable.HeaderProtocolVersion, streamable.HeaderLastEventID, label.Header}, ", ")

// guard is the security layer in front of every endpoint.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.debugLog {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			w = sw
			// Path only: the query may hold a token or a session id.
			defer func() {
				s.log.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
					"duration", time.Since(start))
			}()
		}
		if !s.hosts.Load().Allowed(r.Host) {
			s.log.Warn("refused a request for a foreign Host", "host", r.Host, "path", r.URL.Path)
			httpx.WriteError(w, r, http.StatusForbidden, &fault.Error{Code: mcp.CodeForbiddenHost,
				What: fmt.Sprintf("Host %q is not allowed", r.Host),
				Why:  "requests must name this server by an allowed host, which protects it from DNS rebinding by web pages",
				How:  "connect to http://127.0.0.1:PORT or http://localhost:PORT, or add the name with --allowed-hosts (a reverse proxy's public name, for instance)"})
			return
		}
		origin := r.Header.Get("Origin")
		if !s.originAllowed(origin) {
			s.log.Warn("refused a request from a foreign Origin", "origin", origin, "path", r.URL.Path)
			httpx.WriteError(w, r, http.StatusForbidden, &fault.Error{Code: mcp.CodeForbiddenOrigin,
				What: fmt.Sprintf("Origin %q is not allowed", origin),
				Why:  "web pages from other sites may not talk to this server",
				How:  "add the page's origin with --allowed-origins if it is meant to"})
			return
		}
		if origin != "" {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			// WWW-Authenticate: a browser client finds the OAuth metadata
			// from a 401's challenge.
			h.Set("Access-Control-Expose-Headers", streamable.HeaderSession+", "+streamable.HeaderProtocolVersion+", WWW-Authenticate")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if s.oauth != nil && needsToken(r) && r.Method != http.MethodOptions {
			var ok bool
			if r, ok = s.admit(w, r); !ok {
				return
			}
		}
		if s.hasToken && needsToken(r) && r.Method != http.MethodOptions {
			token, inURL := credential(r)
			if !s.tokenOK(token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="flowyprompt"`)
				httpx.WriteError(w, r, http.StatusUnauthorized, &fault.Error{Code: mcp.CodeUnauthorized,
					What: "missing or wrong access token",
					Why:  "this server was started with --auth-token (or MCP_AUTH_TOKEN)",
					How:  "send Authorization: Bearer TOKEN, or for the SSE URL append ?token=TOKEN"})
				return
			}
			// Most requests have no query: spare them parsing one.
			if r.URL.RawQuery != "" && r.URL.Query().Has("token") {
				// Keep the token out of everything downstream.
				r = r.Clone(r.Context())
				q := r.URL.Query()
				q.Del("token")
				r.URL.RawQuery = q.Encode()
				if inURL {
					// Save for the SSE endpoint URL: a client that could
					// only give the token in its URL posts to that one.
					r = httpx.WithCaller(r, httpx.Caller{URLToken: token})
				}
			}
		}
		if countsClient(r) {
			r = r.WithContext(clientid.With(r.Context(), s.client(r)))
		}
		if l := r.Header.Get(label.Header); l != "" {
			// The label the client follows: its requests' handlers read it,
			// and a session's notifications go by its opening request's.
			r = r.WithContext(label.WithHeader(r.Context(), l))
		}
		next.ServeHTTP(w, r)
	})
}

// countsClient reports whether r may take what the bounds per client
// count: a session (GET /sse, POST /sse, initialize on /mcp), a
// subscriptions/listen stream (a POST /mcp without a session), an event
// stream of the preview page (GET /ui/api/events), a posted
// message's share of the budget of bytes in flight (any POST), or a
// forwarding slot of another replica (any request naming a session).
// Only those need to know their client.
func countsClient(r *http.Request) bool {
	switch r.URL.Path {
	case "/sse", "/sse/message", "/mcp", uiEvents:
		return true
	}
	return false
}

// ClientKey is the key a request that passed the server's guard is
// counted under by the bounds per client (its access token's digest when
// the server has one, else its address read through the trusted
// proxies); outside the guard, its peer's address. It names a client
// without saying who it is: for counting, never for showing. Replicas
// count the requests they forward to each other by it
// (cluster.RouterOptions.ClientKey), as the transports count sessions.
func ClientKey(r *http.Request) string { return clientid.Of(r) }

// client is the key r's client is counted under: the access token when the
// server has one (every request that got this far presented it), else
// its address, read through the trusted proxies.
func (s *Server) client(r *http.Request) string {
	if m := auth.MemberOf(r.Context()); m != nil {
		return memberKey(m)
	}
	if s.hasToken {
		return s.credential
	}
	return clientid.ForAddr(s.proxies.Addr(r))
}

// holdSession announces a session opening here to the other replicas
// (httpx.Settings.OnSession).
func (s *Server) holdSession(id string) func() {
	release, err := s.opts.Sessions.Hold(id)
	if err != nil {
		if !s.holdFailed.Swap(true) {
			s.log.Warn("a session cannot be reached from other replicas: it is served by this one only, until the cluster link is back",
				"error", err)
		}
	} else {
		s.holdFailed.Store(false)
	}
	if release == nil {
		return func() {}
	}
	return release
}

// forwarding sends a request for a 2025-era session that this replica
// does not hold to the replica that does (Options.Sessions). GET /sse is
// never forwarded: it opens a session here, and its endpoint URL comes
// from the request's Host, the balancer's.
func (s *Server) forwarding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, how := s.remoteSession(r)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !s.opts.Sessions.Connected() {
			f := httpx.SessionNotFound(how)
			f.Why = "this replica does not hold the session, and the replica that may hold it cannot be reached: the link to the cluster is down"
			httpx.WriteError(w, r, http.StatusNotFound, f)
			return
		}
		var body []byte
		if r.Method == http.MethodPost {
			var lease *mcp.Lease
			var ok bool
			if body, lease, ok = s.settings.ReadHeld(w, r, id); !ok {
				return
			}
			// The body is held here until the replica holding the
			// session has answered.
			defer lease.Release()
		}
		if r.Method == http.MethodGet {
			// A stream would otherwise hold the shutdown for its whole
			// grace period: its session lives on, elsewhere.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.stopped, cancel)()
			r = r.WithContext(ctx)
		}
		if !s.opts.Sessions.Forward(w, r, id, body) {
			httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound(how))
		}
	})
}

// forwarded is the HTTP surface as requests forwarded by other replicas
// reach it (SessionRouter.Serve): the member the router carried is the
// request's caller, as admit makes it for a request that came here, so
// that the transports bind the request to its session's owner alike.
func forwarded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := auth.MemberOf(r.Context()); m != nil {
			r = httpx.WithCaller(r, httpx.Caller{Owner: ownerOf(m)})
		}
		next.ServeHTTP(w, r)
	})
}

// remoteSession returns the session r names when it is one the local
// transports do not hold, with the advice an unknown session gets; "" for
// a request served here.
func (s *Server) remoteSession(r *http.Request) (id, how string) {
	switch r.URL.Path {
	case "/mcp":
		if r.Method != http.MethodPost && r.Method != http.MethodGet && r.Method != http.MethodDelete {
			return "", ""
		}
		if id = r.Header.Get(streamable.HeaderSession); id != "" && !s.mcp.Holds(id) {
			return id, "start a new session with initialize"
		}
	case "/sse/message":
		if r.Method != http.MethodPost || r.URL.RawQuery == "" {
			return "", ""
		}
		q := r.URL.Query()
		if id = q.Get("session_id"); id == "" {
			id = q.Get("sessionId")
		}
		if id != "" && !s.sse.Holds(id) {
			return id, "open a new stream with GET /sse and use its endpoint URL"
		}
	}
	return "", ""
}

func notFound(w http.ResponseWriter, r *http.Request) {
	httpx.WriteError(w, r, http.StatusNotFound, &fault.Error{Code: mcp.CodeNotFound,
		What: fmt.Sprintf("no endpoint at %s", r.URL.Path),
		Why:  "this server answers /mcp (Streamable HTTP), /sse and /sse/message (legacy SSE) and /healthz",
		How:  "point MCP Inspector and modern clients at /mcp, Void at /sse"})
}

// health reports the server's state as JSON.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpx.MethodNotAllowed(w, r, http.MethodGet, http.MethodHead)
		return
	}
	report := map[string]any{}
	if s.opts.Status != nil {
		tok, _ := credential(r)
		ctx := r.Context()
		detail := s.hasToken && s.tokenOK(tok)
		if s.oauth != nil {
			if m := s.oauth.member(r, tok); m != nil {
				detail, ctx = true, auth.WithMember(ctx, m)
			}
		}
		if raw, err := json.Marshal(s.opts.Status(ctx, detail)); err == nil {
			var extra map[string]any
			// "null" decodes without error into a nil map, which the
			// writes below would panic on.
			if json.Unmarshal(raw, &extra) == nil && extra != nil {
				report = extra
			}
		}
	}
	if _, ok := report["status"]; !ok {
		report["status"] = "ok"
	}
	status := http.StatusOK
	if s.closing.Load() {
		report["status"] = "shutting_down"
		status = http.StatusServiceUnavailable
	}
	sseN, mcpN := s.Sessions()
	c := s.gate.Counts()
	// total is what --max-sessions caps: sessions and listen streams.
	report["sessions"] = map[string]int{"total": c.Total, "sse": sseN, "mcp": mcpN, "listen": c.Listens, "clients": c.Clients}
	// Legacy SSE clients dropped for letting their stream's buffer fill.
	report["dropped_streams"] = s.sse.Dropped()
	// What clients make the server hold under its shared bounds, in bytes.
	report["held_bytes"] = map[string]int64{"posted": s.settings.Budget.Held(), "sse_buffers": s.sse.Buffered()}
	body, err := json.Marshal(report)
	if err != nil {
		httpx.WriteError(w, r, http.StatusInternalServerError, &fault.Error{Code: fault.Internal,
			What: "could not encode the health report", Why: err.Error(), How: "report it with the server's log"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		w.Write(body)
		w.Write([]byte{'\n'})
	}
}

// statusWriter records the status for the debug access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (sw *statusWriter) WriteHeader(code int) {
	if !sw.wrote {
		sw.status, sw.wrote = code, true
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(p []byte) (int, error) {
	sw.wrote = true
	return sw.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes and
// write deadlines of streams).
func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }
