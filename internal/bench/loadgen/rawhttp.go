package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// The HTTP drivers speak HTTP/1.1 over connections of their own instead of
// using net/http's client. On two cores the load generator shares the
// machine with the server it measures, so every microsecond it spends is
// taken from the server: with net/http's client it spent as much CPU per
// exchange as the servers did (a goroutine pair per connection with
// hand-offs to each, a Request and a Response with header maps per call),
// which pulled every server's figures toward the same number. A session
// here is one goroutine writing a request it built once and reading the
// answer on the same connection. What it understands of HTTP/1.1 is what
// the servers measured send: Content-Length, chunked and close-delimited
// bodies, and event streams read as they come.

// httpConn is one keep-alive HTTP/1.1 connection to a server.
type httpConn struct {
	addr    string // host:port dialled, and sent as Host
	life    context.Context
	conn    net.Conn
	br      *bufio.Reader
	req     []byte // the request being written, reused
	body    []byte // the last response body read whole, reused
	scratch []byte // for draining bodies
	// reused says the connection already carried an exchange, so a
	// failure to read the next answer may be the server closing an idle
	// connection, worth one retry on a fresh one.
	reused   bool
	deadline time.Time // set on conn
}

// newHTTPConn returns a connection to u's host, dialled on first use and
// closed when life ends.
func newHTTPConn(life context.Context, u *url.URL) *httpConn {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &httpConn{addr: addr, life: life}
}

func (c *httpConn) dial(ctx context.Context) error {
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	c.conn = conn
	c.reused = false
	c.deadline = time.Time{}
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 16<<10)
	} else {
		c.br.Reset(conn)
	}
	// One registration per connection, not per request: the run's context
	// is shared by every session, and registering with it takes its lock.
	context.AfterFunc(c.life, func() { conn.Close() })
	return nil
}

// Close drops the connection.
func (c *httpConn) Close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// httpResponse is the head of a response, and its body when read whole.
type httpResponse struct {
	status    int
	eventType bool   // Content-Type text/event-stream
	sessionID string // Mcp-Session-Id
	body      []byte // the whole body (valid until the next exchange), unless streamed
	stream    io.Reader
	head      string // status line and headers, for errors
}

// header is one request header.
type header struct{ name, value string }

// do sends one request and reads the answer's head. A body that is an
// event stream, when stream is set, is left for the caller to read from
// resp.stream, entirely, before the next exchange; any other body is read
// whole into resp.body.
func (c *httpConn) do(ctx context.Context, method, target string, hdrs []header, body []byte, stream bool) (httpResponse, error) {
	for attempt := 0; ; attempt++ {
		resp, retry, err := c.try(ctx, method, target, hdrs, body, stream)
		if err == nil || !retry || attempt > 0 {
			return resp, err
		}
	}
}

func (c *httpConn) try(ctx context.Context, method, target string, hdrs []header, body []byte, stream bool) (resp httpResponse, retry bool, err error) {
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return resp, false, err
		}
	}
	wasReused := c.reused
	// Deadlines are timers; most calls share the run's (none), so set only
	// what changed.
	if dl, _ := ctx.Deadline(); !dl.Equal(c.deadline) {
		c.conn.SetDeadline(dl)
		c.deadline = dl
	}
	b := append(c.req[:0], method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\nUser-Agent: flowyprompt-loadgen\r\n"...)
	for _, h := range hdrs {
		b = append(b, h.name...)
		b = append(b, ": "...)
		b = append(b, h.value...)
		b = append(b, "\r\n"...)
	}
	if body != nil || method == "POST" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.req = b
	if _, err := c.conn.Write(b); err != nil {
		c.Close()
		return resp, wasReused, fmt.Errorf("%s %s: %w", method, target, err)
	}
	resp, closeAfter, length, chunked, err := c.readHead()
	if err != nil {
		c.Close()
		// The server may have closed a kept-alive connection just as we
		// wrote: nothing of an answer came, so the request can go again.
		// The close reads as the end of the stream or, when the request
		// reached the socket after it, as a reset.
		closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
		return resp, wasReused && closed, fmt.Errorf("%s %s: %w", method, target, err)
	}
	c.reused = true
	var r io.Reader
	switch {
	case method == "HEAD" || resp.status == 204 || resp.status == 304:
		r = eofReader{}
	case chunked:
		r = &chunkedBody{r: httputil.NewChunkedReader(c.br), br: c.br}
	case length >= 0:
		r = io.LimitReader(c.br, length)
	default:
		closeAfter = true
		r = c.br
	}
	if closeAfter {
		r = &closingReader{r: r, c: c}
	}
	if stream && resp.eventType {
		resp.stream = r
		return resp, false, nil
	}
	resp.body, err = readAll(c.body[:0], r, maxEvent)
	c.body = resp.body
	if closeAfter {
		c.Close()
	}
	if err != nil {
		c.Close()
		return resp, false, fmt.Errorf("%s %s: reading the body: %w", method, target, err)
	}
	return resp, false, nil
}

// readHead reads the status line and headers.
func (c *httpConn) readHead() (resp httpResponse, closeAfter bool, length int64, chunked bool, err error) {
	length = -1
	var head bytes.Buffer
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return resp, false, 0, false, io.EOF
		}
		return resp, false, 0, false, fmt.Errorf("reading the status line: %w", err)
	}
	head.Write(line)
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return resp, false, 0, false, fmt.Errorf("not an HTTP/1 answer: %q", bytes.TrimSpace(line))
	}
	resp.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return resp, false, 0, false, fmt.Errorf("bad status line %q", bytes.TrimSpace(line))
	}
	closeAfter = line[7] == '0' // HTTP/1.0 closes unless told otherwise
	for {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			return resp, false, 0, false, fmt.Errorf("reading headers: %w", err)
		}
		head.Write(line)
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(value), 10, 64)
			if err != nil || length < 0 {
				return resp, false, 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Content-Type")):
			mt, _, _ := bytes.Cut(value, []byte(";"))
			resp.eventType = bytes.EqualFold(bytes.TrimSpace(mt), []byte("text/event-stream"))
		case bytes.EqualFold(name, []byte("Mcp-Session-Id")):
			resp.sessionID = string(value)
		}
	}
	if resp.status/100 != 2 {
		resp.head = head.String()
	}
	return resp, closeAfter, length, chunked, nil
}

// readAll appends all of r to dst, refusing more than max bytes.
func readAll(dst []byte, r io.Reader, max int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > max {
			return dst, fmt.Errorf("body larger than %d bytes", max)
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// chunkedBody reads a chunked body and, at its end, the trailer section
// after the last chunk, which httputil's reader leaves unread: left there,
// its blank line would be taken for the next answer's status line.
type chunkedBody struct {
	r    io.Reader
	br   *bufio.Reader
	done bool
}

func (cb *chunkedBody) Read(p []byte) (int, error) {
	if cb.done {
		return 0, io.EOF
	}
	n, err := cb.r.Read(p)
	if errors.Is(err, io.EOF) {
		cb.done = true
		for {
			line, terr := cb.br.ReadSlice('\n')
			if terr != nil {
				return n, fmt.Errorf("reading the trailer: %w", terr)
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
	}
	return n, err
}

// drain reads r to its end, so the connection can carry the next exchange.
func (c *httpConn) drain(r io.Reader) error {
	if c.scratch == nil {
		c.scratch = make([]byte, 4096)
	}
	for {
		_, err := r.Read(c.scratch)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// eofReader is an empty body.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// closingReader closes the connection once a body that ends with it (or
// that the server said it would close after) has been read.
type closingReader struct {
	r io.Reader
	c *httpConn
}

func (cr *closingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	if err != nil {
		cr.c.Close()
	}
	return n, err
}

// statusError describes an unexpected answer with the start of its body.
func statusError(what string, resp httpResponse) error {
	status := bytes.TrimSpace([]byte(resp.head))
	if i := bytes.IndexByte(status, '\n'); i >= 0 {
		status = bytes.TrimSpace(status[:i])
	}
	return fmt.Errorf("%s: %s: %.200s", what, status, bytes.TrimSpace(resp.body))
}
