// Command testoidc is a real OpenID Provider for tests: the authorization
// server a team would run (Keycloak, Okta...), embedded in a process so
// that the end-to-end tests can walk the MCP authorization flow against
// flowyprompt without a network. Every protocol step is
// github.com/zitadel/oidc/v3's op package, a certified OpenID Provider
// library: discovery, the keys (JWKS), the authorization endpoint with
// PKCE (S256) and the token endpoint issuing RS256 JWT access tokens.
// What this command adds is what a real provider keeps in a database and
// shows as pages:
//
//   - the test users, from a JSON file (--users): each a sub, an email,
//     groups (the access token's groups claim) and the scopes it may be
//     granted;
//   - one public client (--client-id), whose loopback redirect URI may use
//     any port (RFC 8252);
//   - a login that needs no page: the user named by the authorization
//     request's login_hint (sub or email), else the first user, signs in
//     and consents at once;
//   - the RFC 8707 resource indicator: the resource asked for at the
//     authorization endpoint is the access token's aud, and the token
//     endpoint refuses a resource the code was not authorised for.
//
// It listens on loopback only, prints {"issuer": ..., "client_id": ...} as
// its first line on stdout, and exits when stdin closes or on SIGTERM.
// make test-bins builds it into bin/.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/hostguard"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testoidc:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on (port 0: a free port)")
	usersFile := flag.String("users", "", `JSON file of the test users: {"users":[{"sub":"alice","email":"alice@example.com","groups":["sre"],"scopes":["prompts:read"]}]}`)
	clientID := flag.String("client-id", "flowyprompt-test", "client_id of the one public client")
	redirect := flag.String("redirect-uri", "http://127.0.0.1/callback", "the client's redirect URI; on loopback any port matches (RFC 8252)")
	ttl := flag.Duration("token-ttl", 10*time.Minute, "lifetime of an access token")
	flag.Parse()

	if *usersFile == "" {
		return errors.New("--users FILE is required: the test users who may sign in")
	}
	users, err := loadUsers(*usersFile)
	if err != nil {
		return err
	}
	ln, err := listenLoopback(*addr)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	h, err := newProvider(Config{
		Issuer: issuer, Users: users, ClientID: *clientID, RedirectURIs: []string{*redirect}, TokenTTL: *ttl,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"issuer": issuer, "client_id": *clientID}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }()
	<-ctx.Done()
	return nil
}

// listenLoopback listens on addr, which must be a loopback address: a test
// provider signs in anyone who asks.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if !hostguard.Loopback(host) {
		return nil, fmt.Errorf("--addr %q: not a loopback address; this provider signs in anyone who asks, so it listens on loopback only (e.g. 127.0.0.1:0)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}
