// Command conformance-server serves the fixtures that the official MCP
// conformance suite (@modelcontextprotocol/conformance, `conformance
// server --url http://127.0.0.1:PORT/mcp --suite all` for the 2025
// revisions, `--requirements 2026-07-28` for the modern one) expects of a
// server: the test_* tools, prompts and resources, completion and logging,
// and for 2026-07-28 the SEP-2575 diagnostic tools, the input-required
// tools and prompt (SEP-2322, see inputs.go) and a tool that mirrors an
// argument in a header (SEP-2243). It runs them on flowyprompt's own
// protocol core and HTTP transports, so the suite's score is the score of
// the engine and transports that serve templates, not of a fixture-only
// stack. It exists for tests only.
//
// Usage:
//
//	conformance-server [--addr 127.0.0.1:3001] [--answers sse|auto] [--watch-interval 3s] [--verbose]
//
// It serves /mcp (Streamable HTTP) and /sse (legacy HTTP+SSE) behind the
// same security layer as flowyprompt serve (Host and Origin checks, which
// the suite's DNS rebinding scenario probes), logs "listening on
// http://HOST:PORT" to stderr once it accepts connections, and exits 0 on
// SIGINT or SIGTERM after draining in-flight requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance-server: %v\n", err)
		os.Exit(1)
	}
}

// config is what the command line sets.
type config struct {
	addr          string
	answers       string
	watchInterval time.Duration
	drain         time.Duration
	verbose       bool
}

// Answer modes of /mcp (the --answers flag).
const (
	answersSSE  = "sse"
	answersAuto = "auto"
)

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("conformance-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:3001", "listen address HOST:PORT (port 0 picks a free one)")
	fs.StringVar(&c.answers, "answers", answersSSE,
		"how /mcp answers a POST whose client accepts both JSON and an event stream: "+
			"sse (always a stream, the path the suite scores) or auto (the transport's own choice: JSON unless the handler streams)")
	fs.DurationVar(&c.watchInterval, "watch-interval", 3*time.Second,
		"how often test://watched-resource changes and subscribers are told (0 never)")
	fs.DurationVar(&c.drain, "drain-timeout", 5*time.Second, "how long in-flight requests may finish at shutdown")
	fs.BoolVar(&c.verbose, "verbose", false, "log every session and request at debug level")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q: all settings are flags", fs.Args())
	}
	if c.answers != answersSSE && c.answers != answersAuto {
		return c, fmt.Errorf("--answers %q: want %s or %s", c.answers, answersSSE, answersAuto)
	}
	return c, nil
}

// run serves until ctx ends. When ready is not nil it receives the base
// URL once the listener is bound (tests use it instead of the log line).
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	// We bind the listener ourselves, before building the HTTP surface, so
	// that its Host allow list names the port actually bound (--addr may
	// say port 0) and so that --answers can sit in front of it.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	bound := ln.Addr().(*net.TCPAddr)
	base := "http://" + net.JoinHostPort(urlHost(cfg.addr), strconv.Itoa(bound.Port))

	fx := newFixtures()
	e := newEngine(fx, mcp.EngineOptions{Logger: log, IdleTimeout: 30 * time.Minute})
	// The suite scores only streamed answers in server-sse-multiple-streams
	// (JSON ones are INFO), so --answers sse asks the transport for them.
	hs, err := httpserver.New(e, httpserver.Options{Addr: bound.String(), Logger: log, PreferStreams: cfg.answers == answersSSE})
	if err != nil {
		ln.Close()
		_ = e.Shutdown(context.Background())
		return fmt.Errorf("configure http server: %w", err)
	}
	srv := &http.Server{
		Handler:           hs.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening on "+base, "mcp", base+"/mcp", "sse", base+"/sse", "answers", cfg.answers)
	if ready != nil {
		ready <- base
	}

	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		watch(wctx, cfg.watchInterval, func() { e.ResourceUpdated(fx.touchWatched()) })
	}()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		serveErr = fmt.Errorf("serve: %w", serveErr)
	}
	stopWatch()
	<-watchDone
	sctx, cancel := context.WithTimeout(context.Background(), cfg.drain)
	defer cancel()
	// Streams end when their sessions do, so the listener's shutdown and
	// the engine's run together.
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(sctx) }()
	err = e.Shutdown(sctx)
	if herr := <-httpDone; herr != nil {
		srv.Close()
		err = errors.Join(err, fmt.Errorf("http shutdown: %w", herr))
	}
	if serveErr == nil {
		if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve: %w", serr)
		}
	}
	log.Info("stopped")
	return errors.Join(serveErr, err)
}

// urlHost is the host clients on this machine use for listen address
// addr: its host, or 127.0.0.1 when it listens on every interface.
func urlHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return host
}

// watch calls change every interval until ctx ends; a zero interval never
// calls it.
func watch(ctx context.Context, interval time.Duration, change func()) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			change()
		}
	}
}
