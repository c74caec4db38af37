// Package h1 is the front of flowyprompt's HTTP listener: it reads every
// HTTP/1.1 request itself, serves the few that make up the traffic of a
// busy server (posted messages: POST /mcp and POST /sse/message) on a light
// path, and hands each other connection, with what it has read, to
// net/http.
//
// It exists because net/http's server costs more CPU per small request
// than the whole MCP exchange it carries: a background read goroutine and
// two deadline changes per request, a canonicalised header map, a context,
// a chunking writer. Profiles under load put about a quarter of the
// server's time there. The light path keeps what a posted message needs:
// the same http.Handler (so every check, error and answer is the one
// net/http would serve), with a request built from a strictly parsed head
// and an answer written in one system call. Only an answer that streams
// gets net/http's background read, so that its request's context ends when
// the client hangs up.
//
// Anything the light path does not take on exactly (other methods and
// paths, chunked or unsized bodies, Expect, Upgrade, obsolete line
// folding, heads over 4 KB, HTTP/1.0, TLS) goes to net/http untouched, so
// its validation and features apply there. FuzzParseHeadAgreesWithNetHTTP
// holds the parser to accepting nothing net/http would read differently.
package h1

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 connections from a listener.
type Server struct {
	// Handler serves the requests Fast accepts.
	Handler http.Handler
	// Fallback serves every connection the light path hands over; its
	// Handler should be the same handler. Its timeouts apply to those
	// connections.
	Fallback *http.Server
	// Fast reports whether a request for method and path (the target
	// without its query) takes the light path.
	Fast func(method, path string) bool
	// ReadHeaderTimeout bounds reading a request's head (default 10 s);
	// IdleTimeout closes a kept-alive connection left unused (default 2 min).
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxBodyBytes caps a light-path body; a larger Content-Length goes to
	// net/http, whose handler answers it (413).
	MaxBodyBytes int64
	Logger       *slog.Logger

	mu      sync.Mutex
	conns   map[*conn]struct{}
	ln      net.Listener
	handoff *handoffListener
	closing atomic.Bool
	// now is the time (UnixNano) as of the reaper's last sweep: connection
	// state changes, three per request, read it instead of the clock.
	now atomic.Int64
	// active counts light-path requests in progress. A counter polled by
	// Shutdown rather than a WaitGroup: a connection may start a request
	// while Shutdown waits, which a WaitGroup does not allow.
	active   atomic.Int64
	stop     chan struct{} // ends the reaper
	stopOnce sync.Once
}

// Serve accepts connections until Shutdown or Close; it returns
// http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.ln = ln
	s.handoff = &handoffListener{conns: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}
	s.stop = make(chan struct{})
	s.mu.Unlock()
	if s.ReadHeaderTimeout <= 0 {
		s.ReadHeaderTimeout = 10 * time.Second
	}
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = 2 * time.Minute
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	s.now.Store(time.Now().UnixNano())
	// It returns once Shutdown or Close closes the hand-off listener.
	go s.Fallback.Serve(s.handoff)
	go s.reap()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		cs := newConn(s, c)
		s.mu.Lock()
		s.conns[cs] = struct{}{}
		s.mu.Unlock()
		go cs.serve()
	}
}

// Shutdown stops accepting, closes idle connections, lets light-path
// requests in progress finish (their connections close after), and shuts
// net/http's side down, all within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.closing.CompareAndSwap(false, true) {
		return nil
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.stopReaper()
	fb := make(chan error, 1)
	go func() { fb <- s.Fallback.Shutdown(ctx) }()
	s.closeIdle()
	var err error
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.active.Load() > 0 && err == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if ferr := <-fb; err == nil {
		err = ferr
	}
	return err
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.stopReaper()
	return s.Fallback.Close()
}

func (s *Server) stopReaper() {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		s.stopOnce.Do(func() { close(stop) })
	}
}

func (s *Server) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.Load() == stateIdle {
			c.nc.Close()
		}
	}
}

// reap closes light-path connections idle past IdleTimeout and heads read
// for longer than ReadHeaderTimeout: one sweep a second (more often for
// shorter timeouts) instead of a deadline timer armed and disarmed on
// every request.
func (s *Server) reap() {
	every := min(time.Second, min(s.IdleTimeout, s.ReadHeaderTimeout)/2)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		s.now.Store(now)
		s.mu.Lock()
		for c := range s.conns {
			since := time.Duration(now - c.since.Load())
			switch c.state.Load() {
			case stateIdle:
				if since > s.IdleTimeout {
					c.nc.Close()
				}
			case stateHead:
				if since > s.ReadHeaderTimeout {
					c.nc.Close()
				}
			}
		}
		s.mu.Unlock()
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Connection states, for the reaper and Shutdown.
const (
	stateIdle   int32 = iota // waiting for a request's first byte
	stateHead                // reading a head
	stateActive              // reading a body or running the handler
)

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// readBufferSize bounds a light-path head (and a body that arrives with it
// is read without a copy).
const readBufferSize = 4 << 10

// handoffListener feeds handed-over connections to net/http.
type handoffListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// handedConn is a connection given to net/http after the light path read
// some of it: reads take what is buffered first. Once the buffer is empty
// it goes back to the pool, so a stream that lives for hours (GET /sse)
// does not hold it.
type handedConn struct {
	net.Conn
	mu    sync.Mutex
	br    *bufio.Reader
	ahead []byte // read ahead of the connection, after br's bytes (see connReader)
}

func (c *handedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	br := c.br
	if br != nil && br.Buffered() == 0 {
		c.br = nil
		br.Reset(nil)
		readerPool.Put(br)
		br = nil
	}
	var n int
	if br == nil && len(c.ahead) > 0 {
		n = copy(p, c.ahead)
		c.ahead = c.ahead[n:]
	}
	c.mu.Unlock()
	if br != nil {
		return br.Read(p)
	}
	if n > 0 {
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http half-close the connection as it does a plain
// TCP one.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
