package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/hostguard"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// shutdownGrace bounds how long in-flight requests may finish after
// SIGTERM before their connections are cut.
const shutdownGrace = 10 * time.Second

// httpIdleTimeout is the engine's idle expiry: HTTP sessions end when
// nobody uses them, while a stdio session lives as long as its client.
func httpIdleTimeout(cfg *config.Config) time.Duration {
	if cfg.Transport == "http" {
		return cfg.IdleTimeout
	}
	return 0
}

// serveHTTP serves e over HTTP until ctx ends (SIGTERM, SIGINT), then
// stops accepting, lets in-flight requests finish and closes the streams.
func serveHTTP(ctx context.Context, s *setup, a *app.App, e *mcp.Engine, stderr io.Writer) error {
	cfg := &s.cfg
	if cfg.KeepAlive < 0 || cfg.IdleTimeout < 0 || cfg.MaxSessions < 0 || cfg.MaxSessionsPerClient < 0 || cfg.MaxInflightBytes < 0 {
		return usageError("--keepalive, --idle-timeout, --max-sessions, --max-sessions-per-client and --max-inflight-bytes cannot be negative (0 turns keep-alives, expiry or the cap off)")
	}
	if cfg.MaxInflightBytes > 0 && cfg.MaxInflightBytes < int64(cfg.MaxMessageSize) {
		return usageError("--max-inflight-bytes %d is less than --max-message-size %d: the largest message would never fit; raise it, or set 0 for no bound", cfg.MaxInflightBytes, cfg.MaxMessageSize)
	}
	keepAlive := cfg.KeepAlive
	if keepAlive == 0 {
		keepAlive = -1 // httpserver reads 0 as "the default"
	}
	// httpserver reads 0 as "the default", and -1 as no cap.
	maxSessions, perClient := cfg.MaxSessions, cfg.MaxSessionsPerClient
	if maxSessions == 0 {
		maxSessions = -1
	}
	if perClient == 0 {
		perClient = -1
	}
	inflight := cfg.MaxInflightBytes
	if inflight == 0 {
		inflight = -1
	}
	opts := httpserver.Options{
		Addr:                 cfg.Addr,
		PublicURL:            cfg.PublicURL,
		AllowedHosts:         cfg.AllowedHosts,
		AllowedOrigins:       cfg.AllowedOrigins,
		AuthToken:            cfg.AuthToken,
		KeepAlive:            keepAlive,
		MaxSessions:          maxSessions,
		MaxSessionsPerClient: perClient,
		TrustedProxies:       cfg.TrustedProxies,
		MaxBodyBytes:         int64(cfg.MaxMessageSize),
		MaxInflightBytes:     inflight,
		Status:               catalogStatus(s.lib, a.CatalogFor, s.replicas, s.src, s.audit),
		Logger:               s.log,
	}
	if cfg.AuthIssuer != "" {
		audience := cfg.AuthAudience
		if audience == "" {
			audience = strings.TrimRight(cfg.PublicURL, "/") + "/mcp"
		}
		ao := auth.Options{Issuer: cfg.AuthIssuer, Audience: audience, Logger: s.log}
		if cfg.AuthIntrospection != "" {
			ao.Introspection = &auth.Introspection{URL: cfg.AuthIntrospection,
				ClientID: cfg.AuthClientID, ClientSecret: string(cfg.AuthClientSecret)}
		}
		if pf := s.policy; pf != nil {
			// The claim is the policy's in force, which a reload may change.
			ao.Claim = func() string { return pf.Policy().Claim }
		}
		v, err := auth.New(ao)
		if err != nil {
			return usageError("--auth-issuer: %v", err)
		}
		// An issuer down at start is retried in the background; tokens
		// get 503 until it answered.
		v.Start(ctx)
		opts.Auth = v
		// A call of the save tool by a token without prompts:write gets
		// the step-up challenge before it runs.
		opts.RequiredScope = a.RequiredScope
	}
	if s.ui != nil {
		opts.UI = s.ui
	}
	if s.replicas != nil {
		// 2025-era sessions live on the replica that opened them; the
		// others forward their requests to it, with the body cap the
		// forwarding replica read them with.
		router, stop, err := s.replicas.router(s.log, cfg.MaxMessageSize)
		if err != nil {
			return fmt.Errorf("forwarding sessions between replicas: %w", err)
		}
		defer stop()
		opts.Sessions = router
	}
	srv, err := httpserver.New(e, opts)
	if err != nil {
		return usageError("%v", err)
	}
	if err := srv.Listen(); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%w\n  how to fix: %s", err, listenFix(cfg.Addr, err))}
	}
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && !hostguard.Loopback(host) {
		s.log.Warn("listening beyond loopback: other machines can reach this server",
			"addr", cfg.Addr, "auth_token", cfg.AuthToken != "", "auth_issuer", cfg.AuthIssuer,
			"how", "see docs/http.md: set --auth-token (MCP_AUTH_TOKEN), --allowed-hosts and --allowed-origins, or bind 127.0.0.1")
	}
	logServing(s)
	printURLs(stderr, srv.URL(), cfg)

	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	select {
	case err := <-served:
		return fmt.Errorf("http server stopped: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight requests", "grace", shutdownGrace)
	if s.ui != nil {
		// The page's event streams would hold the shutdown for its grace.
		s.ui.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := shutdownHTTP(sctx, srv, e); err != nil {
		// A request still running after the grace period was cut off; the
		// shutdown itself was asked for and is not a failure.
		s.log.Warn("some requests did not finish before shutdown", "err", err)
	}
	s.closeAudit()
	if err := <-served; err != nil {
		return fmt.Errorf("http server stopped: %w", err)
	}
	s.log.Info("http server stopped")
	return nil
}

// listenFix says how to serve when addr cannot be listened on: another
// address, given as the flag and as make run's ADDR=, since `make run`
// starts serve with --addr $(ADDR) and its user cannot pass the flag.
func listenFix(addr string, err error) string {
	host, port, splitErr := net.SplitHostPort(addr)
	n, atoiErr := strconv.Atoi(port)
	if splitErr != nil || atoiErr != nil {
		host, n = "127.0.0.1", 3000
	}
	other := n + 1
	if n >= 65535 {
		other = n - 1
	}
	var why, next string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		why, next = "another program (another flowyprompt, say) listens on that port", net.JoinHostPort(host, strconv.Itoa(other))
	case errors.Is(err, syscall.EACCES):
		why, next = "ports below 1024 need privileges", net.JoinHostPort(host, "3000")
	default:
		// A host that is none of this machine's addresses, or a port
		// taken where the error is not EADDRINUSE (Windows): loopback
		// is always one, and the next port is likely free.
		why, next = "that address cannot be listened on here", net.JoinHostPort("127.0.0.1", strconv.Itoa(other))
	}
	return fmt.Sprintf("%s: pick another address, --addr %s (with make: make run ADDR=%s)", why, next, next)
}

// shutdownHTTP stops the listener and the engine together. They wait on
// each other: the listener waits for its handlers, and a handler serving a
// stream returns only once the engine, having let the requests in flight
// finish, closes the stream's session.
func shutdownHTTP(ctx context.Context, srv *httpserver.Server, e *mcp.Engine) error {
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(ctx) }()
	eerr := e.Shutdown(ctx)
	if eerr != nil {
		eerr = fmt.Errorf("engine shutdown: %w", eerr)
	}
	return errors.Join(eerr, <-httpDone)
}

// printURLs tells the person who ran `serve` where to point each client.
// The token itself is never printed.
func printURLs(w io.Writer, local string, cfg *config.Config) {
	base := local
	if cfg.PublicURL != "" {
		base = strings.TrimRight(cfg.PublicURL, "/")
	}
	fmt.Fprintf(w, "flowyprompt is serving over HTTP on %s\n", local)
	fmt.Fprintf(w, "  Void IDE (legacy SSE):           %s/sse\n", base)
	fmt.Fprintf(w, "  MCP Inspector (Streamable HTTP): %s/mcp\n", base)
	fmt.Fprintf(w, "  health:                          %s/healthz\n", base)
	if cfg.AuthIssuer != "" {
		fmt.Fprintf(w, "  members sign in with %s; resource metadata: %s/.well-known/oauth-protected-resource/mcp\n", cfg.AuthIssuer, base)
	}
	if cfg.UI {
		fmt.Fprintf(w, "  preview page (read-only):        %s/ui/\n", base)
	}
	if cfg.AuthToken != "" {
		fmt.Fprintf(w, "  an access token is required: send Authorization: Bearer TOKEN, or append ?token=TOKEN to the SSE URL\n")
		if cfg.UI {
			fmt.Fprintf(w, "  open the preview page as %s/ui/?token=TOKEN\n", base)
		}
	}
}

// invalidFile is one file /healthz reports as left out of the library.
type invalidFile struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Kept: the file's last valid version is still served.
	Kept bool `json:"kept,omitempty"`
}

// auditStatus is /healthz's "audit": the audit lines lost because stderr
// was read more slowly than requests ended.
type auditStatus struct {
	Dropped uint64 `json:"dropped_lines"`
}

// catalogStatus feeds /healthz from the template library. For a request
// with the access token (detail), besides the counts, each invalid file
// with its error code and message, so that an operator sees what to fix
// without reading the log; for any other, publicStatus. With the audit log
// on, it also says how many audit lines were dropped (al nil: the log is
// off). Its details are of the catalog see gives the caller (nil: the
// library's whole catalog).
func catalogStatus(lib *templates.Library, see func(context.Context) *templates.Catalog, link replicas, src templates.Source, al *audit.Log) func(ctx context.Context, detail bool) any {
	if see == nil {
		see = func(context.Context) *templates.Catalog { return lib.Catalog() }
	}
	return func(ctx context.Context, detail bool) any {
		// The status is the library's; what it details, the part the
		// caller may see (under an access policy, an anonymous caller's
		// is empty, a member's their sources).
		full := lib.Catalog()
		c := see(ctx)
		inv := c.Invalid()
		var cluster any
		connected := true
		if link != nil {
			cluster, connected = link.health(src, detail)
		}
		status := "ok"
		switch {
		case full.Stale() != nil:
			status = "stale"
		case !connected:
			// Serving alone: every answer is still right, but changes
			// seen elsewhere do not arrive and sessions held elsewhere
			// cannot be reached.
			status = "degraded"
		}
		if !detail {
			return publicStatus(c, inv, status, cluster, al)
		}
		files := make([]invalidFile, 0, len(inv))
		for _, i := range inv {
			files = append(files, invalidFile{Path: i.Path, Code: fault.CodeOf(i.Err), Message: i.Err.Error(), Kept: i.Kept})
		}
		st := map[string]any{
			"status":        status,
			"templates":     c.Len(),
			"invalid":       len(inv),
			"invalid_files": files,
			"source":        c.Info(),
			"loaded_at":     c.LoadedAt(),
			"stale":         c.Stale(),
			// The same name in two --source libraries: each is served
			// under its namespace, the bare name by the first.
			"conflicts": c.Conflicts(),
		}
		if al != nil {
			st["audit"] = auditStatus{Dropped: al.Dropped()}
		}
		if cluster != nil {
			st["cluster"] = cluster
		}
		return st
	}
}

// sourceKind is a source as publicStatus shows it: its kind, and its
// members' namespaces and kinds, without a folder, repository or error.
type sourceKind struct {
	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace,omitempty"`
	Members   []sourceKind `json:"members,omitempty"`
}

func publicSource(info templates.SourceInfo) sourceKind {
	out := sourceKind{Kind: info.Kind, Namespace: info.Namespace}
	for _, m := range info.Members {
		out.Members = append(out.Members, publicSource(m))
	}
	return out
}

// publicStatus is /healthz for a request without the access token, which
// anyone who reaches the listener may send: counts and codes, never a
// path (a folder's names its owner's home) or a message (which may quote
// one). The source says its kind (and its members'), the invalid files their codes, a
// stale catalog since when and its code, the cluster (replicas.health)
// its link and replicas.
func publicStatus(c *templates.Catalog, inv []templates.Invalid, status string, cluster any, al *audit.Log) map[string]any {
	codes := map[string]int{}
	for _, i := range inv {
		codes[fault.CodeOf(i.Err)]++
	}
	st := map[string]any{
		"status":        status,
		"templates":     c.Len(),
		"invalid":       len(inv),
		"invalid_codes": codes,
		"source":        publicSource(c.Info()),
		"loaded_at":     c.LoadedAt(),
		"stale":         nil,
		// Names and namespaces, which every client's lists show anyway.
		"conflicts": c.Conflicts(),
	}
	if s := c.Stale(); s != nil {
		// Its reason is a message, which may name the folder.
		stale := map[string]any{"since": s.Since, "code": s.Code}
		if s.RetryAfter > 0 {
			stale["retry_after"] = s.RetryAfter
		}
		st["stale"] = stale
	}
	if al != nil {
		st["audit"] = auditStatus{Dropped: al.Dropped()}
	}
	if cluster != nil {
		st["cluster"] = cluster
	}
	return st
}
