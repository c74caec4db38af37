package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/hostguard"
	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/internal/preview"
)

// cmdPreview serves the preview page (internal/preview) of the library on
// loopback until ctx ends: the author edits files, the page follows.
func cmdPreview(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("preview", "preview [--templates DIR | --source SPEC ...] [--addr 127.0.0.1:PORT] [--open] [flags]", stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`, on loopback only (port 0: a free one)")
	open := fs.Bool("open", false, "open the page in the default browser")
	s, err := load(ctx, fs, args, stderr, lookup, sourceFlags, false)
	if err != nil {
		return err
	}
	if err := loopbackAddr(*addr); err != nil {
		return cmdUsageError("preview", "%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("listen on %s: %w\n  how to fix: %s", *addr, err, listenFix(*addr, err))}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := s.lib.Run(runCtx); err != nil && runCtx.Err() == nil {
			s.log.Warn("watching the template source stopped: the page no longer follows changes", "err", err)
		}
	}()
	if s.labels != nil {
		defer s.labels.Close()
	}
	// The page reads the library through the app, as serve does: a
	// label's templates are those prompts/get serves at that label, and
	// an unknown label is refused with the same words.
	a := app.New(app.Options{Library: s.lib, Labels: appLabels(s.labels), Version: version(), Logger: s.log})
	page := preview.New(preview.Options{Library: s.lib, Labels: previewLabels(s.labels), View: a.PageView,
		Version: version(), Logger: s.log})
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	host, _, _ := net.SplitHostPort(*addr)
	srv := &http.Server{
		Handler:           previewGuard(page, host, port),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	// Event streams end with the server, so that Shutdown does not wait
	// for them.
	srv.RegisterOnShutdown(page.Close)
	url := "http://" + net.JoinHostPort(ln.Addr().(*net.TCPAddr).IP.String(), port) + "/"
	c := s.lib.Catalog()
	fmt.Fprintf(stdout, "flowyprompt preview of %s %s on %s\n", c.Info().Kind, c.Info().Location, url)
	if s.labels != nil {
		names := s.labels.Names()
		fmt.Fprintf(stdout, "Labels: %s. The page shows %s; pick another on it, or open %s?label=NAME\n",
			strings.Join(names, ", "), names[0], url)
	}
	fmt.Fprintln(stdout, "The page follows the files as they change. Ctrl-C stops it.")
	if *open {
		if err := openBrowser(url); err != nil {
			s.log.Warn("cannot open a browser: open the URL yourself", "url", url, "err", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("preview server stopped: %w", err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("preview server stopped: %w", err)
	}
	return nil
}

// previewLabels is set as the page's Labels: nil, not a nil
// *labelset.Set, when there are none.
func previewLabels(set *labelset.Set) preview.Labels {
	if set == nil {
		return nil
	}
	return set
}

// loopbackAddr refuses a listen address beyond this machine: the page
// shows the library to whoever reaches it, with no credential to ask for.
func loopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q is not HOST:PORT: use e.g. 127.0.0.1:8080, or 127.0.0.1:0 for a free port", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--addr %q: the port %q is not a number from 0 to 65535", addr, port)
	}
	if !hostguard.Loopback(host) {
		return fmt.Errorf("--addr %q is not a loopback address: the preview has no access control, so it listens on this machine only; "+
			"use 127.0.0.1:PORT (or [::1]:PORT), and to share the page serve the library with serve --transport http --ui behind its token", addr)
	}
	return nil
}

// previewGuard is the preview's security layer: the Host must name this
// machine (a page elsewhere whose DNS name is rebound to 127.0.0.1 names
// its own), and a request that changes nothing is the only kind a page
// of another origin may send (net/http's CrossOriginProtection).
func previewGuard(next http.Handler, listenHost, port string) http.Handler {
	hosts := hostguard.New(hostguard.Config{ListenHost: listenHost, Port: port})
	cop := http.NewCrossOriginProtection()
	guarded := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not allowed: open http://127.0.0.1:%s/ (requests must name this machine, which protects the page from DNS rebinding)", r.Host, port), http.StatusForbidden)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// openBrowser opens url in the desktop's browser, without waiting for it.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
