package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync/atomic"
	"time"
)

// conn is one connection on the light path.
type conn struct {
	s      *Server
	nc     net.Conn
	rd     connReader // what br reads from
	br     *bufio.Reader
	remote string
	ctx    context.Context
	cancel context.CancelFunc
	state  atomic.Int32
	since  atomic.Int64 // Server.now at the last state change

	base      *http.Request // empty but for the connection's context
	reqHeader http.Header   // reused: handlers do not keep the header
	fields    []field
	lines     lineCache
	w         response
	body      bodyReader
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String()}
	c.rd.nc = nc
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ctx = context.WithValue(c.ctx, http.LocalAddrContextKey, nc.LocalAddr())
	c.setState(stateIdle)
	return c
}

func (c *conn) setState(st int32) {
	c.state.Store(st)
	c.since.Store(c.s.now.Load())
}

func (c *conn) serve() {
	handed := false
	defer func() {
		c.cancel()
		c.s.forget(c)
		if !handed {
			c.nc.Close()
			if c.br != nil {
				c.br.Reset(nil)
				readerPool.Put(c.br)
			}
		}
	}()
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(&c.rd)
	for {
		if c.s.closing.Load() {
			return
		}
		// The first byte of the next request, or the client leaving.
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		c.setState(stateHead)
		h, ok := c.readHead()
		if !ok || !c.s.Fast(h.method, h.path) || h.contentLength > c.s.MaxBodyBytes {
			handed = c.handOver()
			return
		}
		c.setState(stateActive)
		c.s.active.Add(1)
		keep := c.serveRequest(&h)
		c.s.active.Add(-1)
		c.setState(stateIdle)
		if !keep {
			return
		}
	}
}

// readHead peeks at the buffered bytes, reading more as needed, until a
// whole head is there (or the buffer is full), and parses it. Nothing is
// consumed: the bytes stay for net/http when the light path declines.
func (c *conn) readHead() (head, bool) {
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if end := bytes.Index(buf, []byte("\r\n\r\n")); end >= 0 {
			h, ok := parseHead(buf[:end+4], c.fields, &c.lines)
			c.fields = h.fields[:0]
			return h, ok
		}
		if len(buf) >= readBufferSize {
			return head{}, false // a head this large is net/http's to judge
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			return head{}, false // let net/http answer whatever is there
		}
	}
}

// handOver gives the connection, unread bytes and all, to net/http.
func (c *conn) handOver() bool {
	hc := &handedConn{Conn: c.nc, br: c.br}
	if c.rd.ahead {
		// A byte a background read took while the buffer already held
		// what is handed over: it comes after the buffer.
		hc.ahead = []byte{c.rd.b[0]}
		c.rd.ahead = false
	}
	select {
	case c.s.handoff.conns <- hc:
		c.br = nil
		return true
	case <-c.s.handoff.done:
		return false
	}
}

// serveRequest runs the handler on one request; it reports whether the
// connection stays open for another.
func (c *conn) serveRequest(h *head) bool {
	if _, err := c.br.Discard(h.size); err != nil {
		return false
	}
	if c.reqHeader == nil {
		c.reqHeader = make(http.Header, len(h.fields))
	}
	hdr := c.reqHeader
	clear(hdr)
	for _, f := range h.fields {
		hdr[f.name] = append(hdr[f.name], f.value)
	}
	// The body is read whole before the handler runs: it was announced
	// with its length, and handlers read it whole anyway.
	n := int(h.contentLength)
	var body []byte
	if n <= c.br.Size() {
		b, err := c.br.Peek(n)
		if err != nil {
			return false
		}
		body = b
	} else {
		body = make([]byte, n)
		if _, err := io.ReadFull(c.br, body); err != nil {
			return false
		}
	}
	c.body.reset(body)
	if c.base == nil {
		c.base = (&http.Request{}).WithContext(c.ctx)
	}
	// A copy of a request that carries the connection's context: one
	// allocation, where WithContext on each request would take two.
	r := new(http.Request)
	*r = *c.base
	r.Method = h.method
	r.URL = &url.URL{Path: h.path, RawQuery: h.query}
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Header = hdr
	r.Body = &c.body
	r.ContentLength = h.contentLength
	r.Host = h.host
	r.RemoteAddr = c.remote
	r.RequestURI = h.target
	r.Close = h.close
	w := &c.w
	w.reset(c, h.close || c.s.closing.Load())
	ok := c.runHandler(w, r)
	var err error
	if ok {
		err = w.finish()
	}
	// A streamed answer started a background read: it must be over before
	// anything reads the connection again.
	if left := c.rd.stopWatch(); left || !ok {
		return false
	}
	if n <= c.br.Size() {
		c.br.Discard(n) // the body was read in place
	}
	return err == nil && !w.closeAfter
}

// runHandler runs the handler as net/http does: a panic is logged with its
// stack and ends the connection (the client sees it close), never the
// server. It reports whether the handler returned normally.
func (c *conn) runHandler(w *response, r *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.Logger.Error("http: panic serving a request", "remote", c.remote, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(buf))
			}
			ok = false
		}
	}()
	c.s.Handler.ServeHTTP(w, r)
	return true
}

// connReader is the connection as the light path reads it. While an
// answer streams, a background read watches the connection (watch), as
// net/http does for every request: the handler learns from the request's
// context that its client hung up, instead of at its next write, which for
// a quiet stream may be minutes away or never. A byte that read takes is
// the start of a pipelined request; it is kept and read first.
//
// The watch reads the connection, not the bufio.Reader: that holds the
// request's body, which the handler may still be reading in place.
type connReader struct {
	nc      net.Conn
	b       [1]byte
	ahead   bool          // b was read ahead and not yet returned
	done    chan struct{} // closed when the watch ends; nil when none runs
	aborted atomic.Bool   // stopWatch interrupted the read
	left    bool          // the watch's read failed: the client is gone
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.ahead && len(p) > 0 {
		p[0] = r.b[0]
		r.ahead = false
		return 1, nil
	}
	return r.nc.Read(p)
}

// startWatch starts the background read, which calls cancel if the
// client hangs up. A byte already read ahead means the client sent its next
// request, and a watch would read past it: net/http does not watch then
// either.
func (r *connReader) startWatch(cancel context.CancelFunc) {
	if r.done != nil || r.ahead {
		return
	}
	r.done = make(chan struct{})
	r.aborted.Store(false)
	go r.watch(r.done, cancel)
}

func (r *connReader) watch(done chan struct{}, cancel context.CancelFunc) {
	defer close(done)
	n, err := r.nc.Read(r.b[:])
	if n == 1 {
		// A pipelined request, not a hang-up: net/http (since Go 1.11)
		// does not cancel then either, and neither does the watch go on,
		// as it would have to hold everything the client sends.
		r.ahead = true
	}
	var ne net.Error
	if err != nil && !(r.aborted.Load() && errors.As(err, &ne) && ne.Timeout()) {
		r.left = true
		cancel()
	}
}

// stopWatch ends the background read, if one runs, and reports whether it
// found the client gone. The read is interrupted with a deadline in the
// past, which the light path, timing connections out by its reaper,
// otherwise never sets.
func (r *connReader) stopWatch() (left bool) {
	if r.done == nil {
		return false
	}
	r.aborted.Store(true)
	r.nc.SetReadDeadline(aLongTimeAgo)
	<-r.done
	r.nc.SetReadDeadline(time.Time{})
	r.done = nil
	left, r.left = r.left, false
	return left
}

// aLongTimeAgo is a deadline that has passed: it wakes a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// bodyReader is a request body already in memory.
type bodyReader struct {
	b   []byte
	off int
}

func (r *bodyReader) reset(b []byte) { r.b, r.off = b, 0 }

func (r *bodyReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

func (r *bodyReader) Close() error { return nil }

// InPlace returns the whole body without copying it (httpx.ReadBody takes
// it so); it is valid until the handler returns.
func (r *bodyReader) InPlace() []byte { return r.b }

// WriteTo lets io.Copy and bytes.Buffer.ReadFrom take the body in one go.
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r.b[r.off:])
	r.off += n
	return int64(n), err
}
