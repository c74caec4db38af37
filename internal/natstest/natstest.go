// Package natstest runs a real NATS server with JetStream inside a process,
// from the server's own Go module: the cluster's tests and cmd/testcluster
// need no installed server.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyBound is how long a starting server may take to take connections.
const readyBound = 30 * time.Second

// Server is an embedded NATS server that can be stopped and started again
// on the same port and store, as a restarted production server would be.
// It is safe for concurrent use.
type Server struct {
	t    testing.TB // of Start and StartWith, for Restart
	opts server.Options

	mu  sync.Mutex
	srv *server.Server
}

// Start runs a server on a free loopback port with JetStream in a
// temporary directory; the test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, nil)
}

// StartWith is Start with the server's options adjusted by set first
// (credentials, limits).
func StartWith(t testing.TB, set func(*server.Options)) *Server {
	t.Helper()
	s, err := Run(t.TempDir(), set)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Stop)
	return s
}

// Run is Start outside a test: JetStream stores in storeDir, and the
// caller stops the server.
func Run(storeDir string, set func(*server.Options)) (*Server, error) {
	s := &Server{opts: server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  storeDir,
		NoLog:     true,
		NoSigs:    true,
	}}
	if set != nil {
		set(&s.opts)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	// The port chosen at the first start is kept, so clients reconnect
	// to a restarted server.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	return s, nil
}

// Start starts a stopped server again on the same port and store; a
// running one is left as it is.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	go srv.Start()
	// A guard against a server that never listens, not a pace: on a
	// loaded machine a race-built server with JetStream may take seconds.
	if !srv.ReadyForConnections(readyBound) {
		srv.Shutdown()
		return fmt.Errorf("nats server not ready within %s", readyBound)
	}
	s.srv = srv
	return nil
}

// URL is the server's client URL, the same while it is stopped.
func (s *Server) URL() string {
	scheme := "nats"
	if s.opts.TLSConfig != nil {
		scheme = "tls"
	}
	return scheme + "://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}

// Running reports whether the server runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// Stop shuts the server down (clients see the link drop); Stop on a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart stops a server of Start or StartWith and starts it again on the
// same port and store, failing the test if it cannot.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.Start(); err != nil {
		s.t.Fatal(err)
	}
}
