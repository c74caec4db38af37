// Package natstest runs a real NATS server with JetStream inside a test
// process, from the server's own Go module: the cluster's tests need no
// installed server.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded NATS server that can be stopped and started again
// on the same port and store, as a restarted production server would be.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
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
	s := &Server{t: t, opts: server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	if set != nil {
		set(&s.opts)
	}
	s.run()
	// The port chosen at the first start is kept, so clients reconnect
	// to a restarted server.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) run() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatalf("nats server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("nats server not ready within 10 s")
	}
	s.srv = srv
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Stop shuts the server down (clients see the link drop); Stop on a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts a stopped server again on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.run()
}
