package h1

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/google/go-cmp/cmp"
)

// echo answers with what it saw, so the light path and net/http can be
// compared on the handler's side as well as on the wire.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Query().Has("stream") {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
		return
	}
	if r.URL.Query().Has("accepted") {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	hdr := r.Header.Clone()
	hdr.Del("Connection") // net/http's own bookkeeping differs here, not what handlers use
	seen := map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "host": r.Host,
		"uri": r.RequestURI, "header": hdr, "body": string(body), "length": r.ContentLength,
		"remote": r.RemoteAddr != "", "local": r.Context().Value(http.LocalAddrContextKey) != nil}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Echo", "yes")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(seen)
}

type testServer struct {
	addr    string
	handed  atomic.Int64 // connections net/http got
	srv     *Server
	serveCh chan error
	// readAhead receives a value each time a read into a one-byte buffer
	// returns a byte: what a background read does when a pipelined
	// request arrives, on the light path and in net/http alike.
	readAhead chan struct{}
}

func startServer(t *testing.T, fast func(method, path string) bool, tune func(*Server)) *testServer {
	t.Helper()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: nl.Addr().String(), serveCh: make(chan error, 1), readAhead: make(chan struct{}, 16)}
	ln := &watchedListener{Listener: nl, readAhead: ts.readAhead}
	fb := &http.Server{Handler: http.HandlerFunc(echo), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			ts.handed.Add(1)
		}
	}}
	ts.srv = &Server{Handler: http.HandlerFunc(echo), Fallback: fb, Fast: fast, MaxBodyBytes: 1 << 20}
	if tune != nil {
		tune(ts.srv)
	}
	go func() { ts.serveCh <- ts.srv.Serve(ln) }()
	t.Cleanup(func() { ts.srv.Close() })
	return ts
}

func always(string, string) bool { return true }
func never(string, string) bool  { return false }

// exchange sends raw requests on one connection and reads an answer to
// each.
func exchange(t *testing.T, addr string, reqs ...string) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var out []*http.Response
	for _, r := range reqs {
		if _, err := io.WriteString(c, r); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer to %q: %v", r, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("body of the answer to %q: %v", r, err)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
	return out
}

// summary is what a client sees of an answer. How the body is framed is
// left out: net/http chunks an answer over 2 KB that the handler gave no
// length, where the light path, which holds the whole answer, sends its
// length (TestStreamedAnswer checks the chunking of flushed answers).
func summary(t *testing.T, r *http.Response) map[string]any {
	body, _ := io.ReadAll(r.Body)
	hdr := r.Header.Clone()
	hdr.Del("Date")
	hdr.Del("Content-Length")
	return map[string]any{"status": r.StatusCode, "header": hdr, "body": string(body), "close": r.Close}
}

// TestLightPathAnswersAsNetHTTP: for the requests the light path takes,
// handler and client see what they would with net/http alone.
func TestLightPathAnswersAsNetHTTP(t *testing.T) {
	light := startServer(t, always, nil)
	plain := startServer(t, never, nil)
	reqs := []string{
		mcpPost,
		"POST /sse/message?session_id=abc HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello",
		"POST /x?accepted HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
		"POST /x?stream HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: localhost\r\nAccept: a\r\naccept: b\r\nContent-Length: 0\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 1\r\n\r\nz",
		"POST /big HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n" + strings.Repeat("b", 10000),
	}
	for _, r := range reqs {
		t.Run(strings.SplitN(r, "\r\n", 2)[0], func(t *testing.T) {
			got := summary(t, exchange(t, light.addr, r)[0])
			want := summary(t, exchange(t, plain.addr, r)[0])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-net/http +light path):\n%s", diff)
			}
		})
	}
	if n := light.handed.Load(); n != 0 {
		t.Errorf("%d connections went to net/http; the light path should have taken them all", n)
	}
}

// TestHandOver: on one connection, requests the light path declines (and
// everything after them) go to net/http with nothing lost.
func TestHandOver(t *testing.T) {
	ts := startServer(t, func(method, path string) bool { return method == "POST" && path == "/fast" }, nil)
	post := "POST /fast HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
	get := "GET /slow?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"
	chunked := "POST /fast HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
	resps := exchange(t, ts.addr, post, post, get, post)
	for i, r := range resps {
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("answer %d: %s", i, r.Status)
		}
	}
	if n := ts.handed.Load(); n != 1 {
		t.Errorf("%d connections handed over, want 1 (at the GET)", n)
	}
	// A chunked body goes to net/http, which reads it.
	r := exchange(t, ts.addr, chunked)[0]
	var seen map[string]any
	if err := json.NewDecoder(r.Body).Decode(&seen); err != nil || seen["body"] != "xyz" {
		t.Errorf("chunked body: %v %v", seen, err)
	}
	// A body over the cap is net/http's (whose handler answers it) too.
	ts2 := startServer(t, always, func(s *Server) { s.MaxBodyBytes = 4 })
	exchange(t, ts2.addr, post+"", "POST /fast HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
	if n := ts2.handed.Load(); n != 1 {
		t.Errorf("a body over MaxBodyBytes: %d connections handed over, want 1", n)
	}
}

// TestStreamedAnswer: a handler that flushes gets a chunked stream.
func TestStreamedAnswer(t *testing.T) {
	ts := startServer(t, always, nil)
	r := exchange(t, ts.addr, "POST /x?stream HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
	body, _ := io.ReadAll(r[0].Body)
	if string(body) != "data: 0\n\ndata: 1\n\ndata: 2\n\n" || fmt.Sprint(r[0].TransferEncoding) != "[chunked]" {
		t.Errorf("stream %q, transfer encoding %v", body, r[0].TransferEncoding)
	}
	if r[1].StatusCode != http.StatusCreated {
		t.Errorf("after the stream: %s", r[1].Status)
	}
}

// TestIdleConnectionsClosed: a kept-alive connection left unused, and a
// head that never ends, are closed.
func TestIdleConnectionsClosed(t *testing.T) {
	ts := startServer(t, always, func(s *Server) {
		s.IdleTimeout = 200 * time.Millisecond
		s.ReadHeaderTimeout = 200 * time.Millisecond
	})
	for _, sent := range []string{"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", "POST /x HTTP/1.1\r\nHost: h\r\n"} {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, sent)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(c) // the answer, if any, then the close
		if err != nil {
			t.Errorf("%q: %v, want the server to close the connection", sent, err)
		}
		c.Close()
	}
}

// TestShutdown: idle connections close, a request in progress finishes
// and its connection closes after it, and Serve returns.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	ts := startServer(t, always, func(s *Server) {
		s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				close(started)
				<-release
			}
			w.WriteHeader(http.StatusAccepted)
		})
	})
	idle, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	exchangeOn := func(c net.Conn, req string) (*http.Response, error) {
		if _, err := io.WriteString(c, req); err != nil {
			return nil, err
		}
		return http.ReadResponse(bufio.NewReader(c), nil)
	}
	if _, err := exchangeOn(idle, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	answer := make(chan *http.Response, 1)
	go func() {
		r, _ := exchangeOn(busy, "POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
		answer <- r
	}()
	<-started
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: read %v, want EOF", err)
	}
	close(release)
	r := <-answer
	if r == nil || r.StatusCode != http.StatusAccepted || !r.Close {
		t.Fatalf("request in progress: %+v, want 202 with Connection: close", r)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-ts.serveCh; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}

// TestHandlerPanic: a handler that panics ends its connection, as with
// net/http, and the server goes on serving others.
func TestHandlerPanic(t *testing.T) {
	var logged strings.Builder
	lw := &lockedWriter{w: &logged}
	ts := startServer(t, always, func(s *Server) {
		s.Logger = slog.New(slog.NewTextHandler(lw, nil))
		s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/panic" {
				panic("boom")
			}
			w.WriteHeader(http.StatusAccepted)
		})
	})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /panic HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 64)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after a panic: read %d bytes, %v; want the connection closed", n, err)
	}
	if r := exchange(t, ts.addr, "POST /ok HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")[0]; r.StatusCode != http.StatusAccepted {
		t.Fatalf("after a panic, another connection got %s", r.Status)
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if !strings.Contains(logged.String(), "boom") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestCloseLeavesNoGoroutine: after Close, the reaper, the accept loop and
// net/http's side are gone, for Close alone and after Shutdown.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	for _, shutdownFirst := range []bool{false, true} {
		base := runtime.NumGoroutine()
		ts := startServer(t, always, nil)
		exchange(t, ts.addr, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
		if shutdownFirst {
			if err := ts.srv.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		ts.srv.Close()
		<-ts.serveCh
		transporttest.GoroutinesBackTo(t, 10*time.Second, base, 0)
	}
}

// watchedListener reports the one-byte reads of its connections.
type watchedListener struct {
	net.Listener
	readAhead chan struct{}
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, readAhead: l.readAhead}, nil
}

type watchedConn struct {
	net.Conn
	readAhead chan struct{}
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(p) == 1 && n == 1 {
		select {
		case c.readAhead <- struct{}{}:
		default:
		}
	}
	return n, err
}

// CloseWrite keeps the half-close net/http may use.
func (c *watchedConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

// streamer answers /stream with an event, then waits for release (or the
// request's end) to send a second one, and reports the request context's
// error at that point on ctxErr. Other paths get echo.
type streamer struct {
	release chan struct{}
	ctxErr  chan error
}

func newStreamer() *streamer {
	return &streamer{release: make(chan struct{}), ctxErr: make(chan error, 1)}
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/stream" {
		echo(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: 0\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-s.release:
	case <-r.Context().Done():
	case <-time.After(10 * time.Second): // a guard against hangs: the test fails on it
	}
	s.ctxErr <- r.Context().Err()
	io.WriteString(w, "data: 1\n\n")
}

// startStreamers starts a light-path server taking POSTs and a plain
// net/http one, both serving a streamer.
func startStreamers(t *testing.T) map[string]struct {
	ts *testServer
	st *streamer
} {
	out := map[string]struct {
		ts *testServer
		st *streamer
	}{}
	for name, fast := range map[string]func(string, string) bool{
		"light path": func(method, _ string) bool { return method == http.MethodPost },
		"net/http":   never,
	} {
		st := newStreamer()
		ts := startServer(t, fast, func(s *Server) { s.Handler, s.Fallback.Handler = st, st })
		out[name] = struct {
			ts *testServer
			st *streamer
		}{ts, st}
	}
	return out
}

// readFirstEvent reads the head of a stream's answer and its first event.
func readFirstEvent(t *testing.T, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: 0\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: 0\n\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	return resp
}

const streamPost = "POST /stream HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"

// TestHangUpEndsStreamContext: a client that closes its connection while
// an answer streams cancels the request's context, as with net/http, so
// the handler learns it at once rather than at a write that may never
// come.
func TestHangUpEndsStreamContext(t *testing.T) {
	for name, s := range startStreamers(t) {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", s.ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, streamPost)
			readFirstEvent(t, bufio.NewReader(c))
			c.Close()
			if err := transporttest.Receive(t, s.st.ctxErr, 20*time.Second, "the handler's end"); !errors.Is(err, context.Canceled) {
				t.Errorf("request context after the client hung up: %v, want context.Canceled", err)
			}
		})
	}
}

// TestPipelinedDuringStream: a request the client sends while an answer
// streams is what the background read finds. As with net/http, it does
// not cancel the stream's context (even when the client then half-closes
// the connection), and no byte of it is lost, whether the light path
// serves it or hands it to net/http with a request already buffered.
func TestPipelinedDuringStream(t *testing.T) {
	post := "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
	get := "GET /x?q=1 HTTP/1.1\r\nHost: h\r\n\r\n"
	tests := []struct {
		name      string
		first     string   // written first, the stream's request leading
		during    string   // written once the stream has started
		wantAfter []string // what echo saw of each request after the stream
	}{
		{"served on the light path", streamPost, post, []string{"POST /x hello"}},
		{"handed over behind a buffered request", streamPost + get, post, []string{"GET /x ", "POST /x hello"}},
	}
	for _, tt := range tests {
		for name, s := range startStreamers(t) {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				c, err := net.Dial("tcp", s.ts.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				io.WriteString(c, tt.first)
				resp := readFirstEvent(t, br)
				io.WriteString(c, tt.during)
				c.(*net.TCPConn).CloseWrite()
				// The background read has the pipelined request's first
				// byte before the handler goes on.
				transporttest.Receive(t, s.ts.readAhead, 10*time.Second, "a byte read ahead")
				close(s.st.release)
				if err := transporttest.Receive(t, s.st.ctxErr, 10*time.Second, "the handler's end"); err != nil {
					t.Errorf("request context after a pipelined request: %v, want it live", err)
				}
				if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "data: 1\n\n" {
					t.Errorf("rest of the stream: %q, %v", rest, err)
				}
				for i, want := range tt.wantAfter {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("answer %d after the stream: %v", i, err)
					}
					var seen map[string]any
					err = json.NewDecoder(resp.Body).Decode(&seen)
					if got := fmt.Sprint(seen["method"], " ", seen["path"], " ", seen["body"]); err != nil || got != want {
						t.Errorf("answer %d after the stream: %d, echo saw %q (%v), want %q", i, resp.StatusCode, got, err, want)
					}
					io.Copy(io.Discard, resp.Body)
				}
				if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
					t.Errorf("after the last answer: %d bytes, %v; want the connection closed", n, err)
				}
			})
		}
	}
}

// TestStreamWatchStops: once a streamed answer is over, its background
// read is too, and the connection serves its next request.
func TestStreamWatchStops(t *testing.T) {
	ts := startServer(t, always, nil)
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	plain := "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
	roundTrip := func(req string) *http.Response {
		t.Helper()
		io.WriteString(c, req)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		return resp
	}
	roundTrip(plain)
	base := runtime.NumGoroutine() // the connection's own is among them
	for i := range 3 {
		if r := roundTrip("POST /x?stream HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"); r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", i, r.Status)
		}
		if r := roundTrip(plain); r.StatusCode != http.StatusCreated {
			t.Fatalf("after stream %d: %s", i, r.Status)
		}
	}
	transporttest.GoroutinesBackTo(t, 10*time.Second, base, 0)
}
