// Package sse serves MCP's legacy HTTP+SSE transport (revision 2024-11-05),
// the one Void IDE speaks, exactly as the seed's Void Lab did it:
//
//   - GET /sse opens a session; its first event is `event: endpoint` naming
//     the absolute URL to post to, then every server message is an
//     `event: message` carrying one compact JSON-RPC message.
//   - POST /sse/message?session_id=… hands one message to that session and
//     answers 202 at once; the response arrives on the stream.
//   - POST /sse is the seed's fallback: one request answered in the body.
//
// The stream takes its connection over from net/http and writes events to
// it directly, so an idle stream costs one parked goroutine and its
// session (see Handler.stream). A write deadline on every write drops a
// client that stops reading, so one stuck client cannot hold its session's
// writer forever.
package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// PublicURL is the server's base URL as clients reach it (behind a
	// reverse proxy); the endpoint event then names
	// PublicURL/sse/message?session_id=…. Empty: built from the request's
	// Host.
	PublicURL string
	// KeepAlive is the interval of `: ping` comments on an open stream
	// (default 15 s; negative turns them off). They are for proxies that
	// cut quiet connections: the engine's idle expiry never ends a session
	// whose stream is open, with keep-alives or without.
	KeepAlive time.Duration
	// MaxBodyBytes caps a posted message (default: the engine's
	// MaxMessageSize).
	MaxBodyBytes int64
	// MaxSessions refuses new streams with 503 while the engine holds this
	// many live sessions (0: no cap).
	MaxSessions int
	// WriteTimeout drops a client that has not taken a write for this long
	// (default 30 s).
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

// Handler serves GET /sse, POST /sse and POST /sse/message for one engine.
type Handler struct {
	e    *mcp.Engine
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	conns map[string]*conn
}

// New returns the legacy SSE handler feeding e.
func New(e *mcp.Engine, opts Options) *Handler {
	httpx.FillDefaults(e, &opts.KeepAlive, &opts.MaxBodyBytes, &opts.WriteTimeout, &opts.Logger)
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	return &Handler{e: e, opts: opts, log: opts.Logger, conns: make(map[string]*conn)}
}

// ServeHTTP routes /…/message to the message endpoint and everything else
// to the stream (GET) or the direct fallback (POST).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/message") {
		if r.Method != http.MethodPost {
			httpx.MethodNotAllowed(w, r, http.MethodPost)
			return
		}
		h.message(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.stream(w, r)
	case http.MethodPost:
		h.direct(w, r)
	default:
		httpx.MethodNotAllowed(w, r, http.MethodGet, http.MethodPost)
	}
}

// Sessions returns the number of open SSE streams.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// conn is one GET /sse stream and the session behind it; it is the
// session's mcp.Sink.
type conn struct {
	h  *Handler
	s  *mcp.Session
	id string
	// release lets the engine's idle expiry have the session again: a
	// session is held from GET /sse to the stream's end, because a client
	// connected to its stream is not idle, keep-alives or none.
	release func()

	// mu serialises writes (the outbox, keep-alives) and guards the rest.
	mu     sync.Mutex
	out    output
	keep   *time.Timer
	closed bool
}

// output is where a stream's events go: the taken-over connection, or the
// response when the connection cannot be taken (HTTP/2).
type output interface {
	// write sends whole events and flushes them.
	write(p []byte) error
	// close ends the stream.
	close()
}

// Send writes each message as an `event: message`, in one write per batch.
func (c *conn) Send(msgs []mcp.Outgoing) error {
	bp := bufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, m := range msgs {
		if rt, ok := m.Route.(*directRoute); ok && m.Response {
			// The POST /sse handler writes it later: it needs its own copy.
			m.Data = bytes.Clone(m.Data)
			rt.deliver(m)
			continue
		}
		if m.Data == nil {
			continue
		}
		buf = appendEvent(buf, "message", httpx.OneLine(m.Data))
	}
	var err error
	if len(buf) > 0 {
		err = c.write(buf)
	}
	if cap(buf) <= maxPooledBuffer {
		*bp = buf
		bufPool.Put(bp)
	}
	return err
}

// CopiesData: Send copies every message into an event buffer (or, for
// POST /sse, into a copy of its own), so the session may recycle them.
func (c *conn) CopiesData() {}

// RunsInline tells the engine that requests come from POST /sse/message
// handlers, a goroutine each: quick requests run right there, before the
// 202, instead of on a worker.
func (c *conn) RunsInline() {}

// Close ends the stream when the session ends first (idle expiry,
// shutdown, a failed write).
func (c *conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.keep != nil {
		c.keep.Stop()
	}
	c.out.close()
}

func (c *conn) write(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errStreamClosed
	}
	return c.out.write(p)
}

var errStreamClosed = errors.New("the event stream is closed")

// bufPool holds the buffers events are framed in, so an idle stream keeps
// none.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledBuffer = 64 << 10

// appendEvent frames one event; data must be one line.
func appendEvent(buf []byte, event string, data []byte) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

var pingComment = []byte(": ping\n\n")

func (c *conn) startKeepAlive() {
	ka := c.h.opts.KeepAlive
	if ka <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.keep == nil {
		// A timer rather than a ticker goroutine: an idle stream then costs
		// no goroutine between pings.
		c.keep = time.AfterFunc(ka, c.ping)
	}
}

func (c *conn) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err := c.out.write(pingComment); err != nil {
		// The client is gone: end the session (outside the lock, since
		// closing the session closes this conn).
		go c.s.Close()
		return
	}
	c.keep.Reset(c.h.opts.KeepAlive)
}

func (h *Handler) lookup(id string) *conn {
	if id == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[id]
}

// stream serves GET /sse: a new session for the life of the stream.
//
// The stream takes the connection over from net/http (Hijack) and writes
// the events to it directly. What an idle stream costs is then one
// goroutine waiting for the client to hang up and the session itself:
// served as a response, it would also hold net/http's connection goroutine,
// its background reader and about 10 KB of its buffers for as long as the
// client stays connected. Where the connection cannot be taken over
// (HTTP/2), the stream is served as an ordinary response.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	c := &conn{h: h}
	// Held until the endpoint event is out: the engine may broadcast to
	// the session as soon as it exists, and nothing may precede the
	// response's head and the endpoint event.
	c.mu.Lock()
	s := httpx.OpenSession(w, h.e, c, h.opts.MaxSessions)
	if s == nil {
		c.mu.Unlock()
		return
	}
	c.s, c.id, c.release = s, s.ID(), s.Hold()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	rc := http.NewResponseController(w)
	first := appendEvent(make([]byte, 0, 256), "endpoint", []byte(h.endpointURL(r, c.id)))
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	nc, _, err := rc.Hijack()
	if err == nil {
		c.out = &connOutput{nc: nc, timeout: h.opts.WriteTimeout}
		first = append(responseHead(hdr), first...)
	} else {
		c.out = &responseOutput{w: w, rc: rc, timeout: h.opts.WriteTimeout, cancel: cancel}
		w.WriteHeader(http.StatusOK)
	}
	// Registered before the client can learn the session's id.
	h.register(c)
	err = c.out.write(first)
	c.mu.Unlock()
	if err != nil {
		h.teardown(c)
		return
	}
	c.startKeepAlive()
	if nc != nil {
		go h.watch(c, nc)
		return
	}
	// Hold the response open until the client leaves or the session ends
	// (which cancels ctx through Close).
	stop := context.AfterFunc(s.Context(), cancel)
	<-ctx.Done()
	stop()
	h.teardown(c)
}

func (h *Handler) register(c *conn) {
	h.mu.Lock()
	h.conns[c.id] = c
	h.mu.Unlock()
	h.log.Debug("sse session opened", "session", c.id)
}

// teardown ends the session behind a stream whose client has gone; its
// pending work is cancelled with the session's context.
func (h *Handler) teardown(c *conn) {
	c.release()
	c.s.Close()
	c.Close()
	h.mu.Lock()
	delete(h.conns, c.id)
	h.mu.Unlock()
	h.log.Debug("sse session closed", "session", c.id)
}

// watch waits for the client to hang up: an SSE client sends nothing after
// its request, so the first read that returns is the end of the stream
// (or of the server's side, when Close closed the connection).
func (h *Handler) watch(c *conn, nc net.Conn) {
	var b [64]byte
	for {
		if _, err := nc.Read(b[:]); err != nil {
			break
		}
	}
	h.teardown(c)
}

// responseHead is the response's status line and headers for a taken-over
// connection. The body runs until the connection closes, so it needs no
// chunked framing, and the connection is never reused.
func responseHead(hdr http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	hdr.Set("Connection", "close")
	hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	_ = hdr.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// connOutput writes to a taken-over connection. A write deadline drops a
// client that stops reading, so one stuck client cannot hold its
// session's writer forever.
type connOutput struct {
	nc      net.Conn
	timeout time.Duration
}

func (o *connOutput) write(p []byte) error {
	_ = o.nc.SetWriteDeadline(time.Now().Add(o.timeout))
	_, err := o.nc.Write(p)
	return err
}

func (o *connOutput) close() { o.nc.Close() }

// responseOutput writes to the response of a stream whose connection
// could not be taken over.
type responseOutput struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	cancel  context.CancelFunc // ends the handler, hence the response
}

func (o *responseOutput) write(p []byte) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	if _, err := o.w.Write(p); err != nil {
		return err
	}
	return o.rc.Flush()
}

func (o *responseOutput) close() { o.cancel() }

// endpointURL is where the client posts its messages: absolute, from the
// public URL when one is configured, else from the request's own Host
// (which the server's middleware has already checked).
func (h *Handler) endpointURL(r *http.Request, id string) string {
	base := h.opts.PublicURL
	var path string
	if base != "" {
		path = "/sse/message"
	} else {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
		path = strings.TrimRight(r.URL.Path, "/") + "/message"
	}
	return base + path + "?session_id=" + id
}

// message serves POST /sse/message: validate, enqueue, 202.
func (h *Handler) message(w http.ResponseWriter, r *http.Request) {
	id := queryValue(r.URL.RawQuery, "session_id")
	if id == "" {
		id = queryValue(r.URL.RawQuery, "sessionId") // what the TypeScript SDK's own server names it
	}
	if id == "" {
		httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeSessionRequired,
			What: "no session_id", Why: "messages are posted to the URL of the endpoint event, which names the session",
			How: "open GET /sse and post to the URL its endpoint event gives"})
		return
	}
	c := h.lookup(id)
	if c == nil {
		httpx.WriteError(w, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse and use its endpoint URL"))
		return
	}
	// The Content-Type is not checked: the body is, and curl's default
	// form type should not stand between a person and a working request.
	body, ok := httpx.ReadBody(w, r, h.opts.MaxBodyBytes)
	if !ok {
		return
	}
	if _, err := c.s.DeliverJSON(body, nil); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, httpx.ParseError())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// directRoute carries one POST /sse request's response back to its
// handler instead of the stream.
type directRoute struct{ ch chan mcp.Outgoing }

func newDirectRoute() *directRoute { return &directRoute{ch: make(chan mcp.Outgoing, 1)} }

func (rt *directRoute) deliver(m mcp.Outgoing) {
	select {
	case rt.ch <- m:
	default: // cannot happen: one response per route
	}
}

// oneShot is the sink of a session that lives for one POST /sse: only the
// routed response matters; anything unsolicited has nobody to go to.
type oneShot struct{}

func (oneShot) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if rt, ok := m.Route.(*directRoute); ok && m.Response {
			rt.deliver(m)
		}
	}
	return nil
}

func (oneShot) Close() {}

// direct serves POST /sse, the seed's fallback: one request answered in
// the body. With a session (session_id or Mcp-Session-Id) it runs on that
// SSE session; without one it runs on a session made for it alone. A
// body that is not a request, and initialize, fail with 400: that is how
// a client probing for Streamable HTTP on this URL (Void does) learns to
// fall back to GET /sse.
func (h *Handler) direct(w http.ResponseWriter, r *http.Request) {
	body, ok := httpx.ReadBody(w, r, h.opts.MaxBodyBytes)
	if !ok {
		return
	}
	if !json.Valid(body) {
		httpx.WriteError(w, http.StatusBadRequest, httpx.ParseError())
		return
	}
	var peek struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &peek) != nil || peek.Method == "" {
		httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeBadRequest,
			What: "POST /sse takes one JSON-RPC request", Why: "the body is not a JSON-RPC request object",
			How: `post one object such as {"jsonrpc":"2.0","id":1,"method":"tools/list"}`})
		return
	}
	id := r.URL.Query().Get("session_id")
	if id == "" {
		id = r.Header.Get("Mcp-Session-Id")
	}
	if id != "" {
		c := h.lookup(id)
		if c == nil {
			httpx.WriteError(w, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse"))
			return
		}
		h.answer(w, r, c.s, body)
		return
	}
	if peek.Method == mcp.MethodInitialize {
		httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeBadRequest,
			What: "initialize is not accepted on POST /sse",
			Why:  "this URL serves the legacy HTTP+SSE transport, whose sessions start with GET /sse",
			How:  "open GET /sse and post to its endpoint URL, or use Streamable HTTP at /mcp"})
		return
	}
	if peek.ID == nil {
		httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeSessionRequired,
			What: "a notification on POST /sse needs a session", Why: "without a session there is nothing for it to act on",
			How: "post it to the endpoint URL of a GET /sse stream"})
		return
	}
	s := httpx.OpenSession(w, h.e, oneShot{}, h.opts.MaxSessions)
	if s == nil {
		return
	}
	defer s.Close()
	// Initialize is answered synchronously in Deliver's bookkeeping, so
	// the request that follows finds the session ready.
	s.Deliver(oneShotInit, nil)
	h.answer(w, r, s, body)
}

var oneShotInit = []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` +
	mcp.LatestVersion + `","capabilities":{},"clientInfo":{"name":"flowyprompt POST /sse","version":"0"}}}`)

// answer delivers body on s and writes its response as the HTTP body.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, s *mcp.Session, body []byte) {
	rt := newDirectRoute()
	if s.Deliver(body, rt) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case m := <-rt.ch:
		if m.Data == nil {
			// Cancelled by the client: the request is over, with no answer.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		w.Write(m.Data)
	case <-r.Context().Done():
	case <-s.Done():
		httpx.WriteError(w, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse"))
	}
}

// queryValue is url.Values.Get on a raw query, without building the map
// for the plain `session_id=…` every posted message carries.
func queryValue(raw, key string) string {
	if strings.ContainsAny(raw, "%+;") {
		return parseQuery(raw).Get(key)
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if k, v, _ := strings.Cut(pair, "="); k == key {
			return v
		}
	}
	return ""
}

func parseQuery(raw string) url.Values {
	q, _ := url.ParseQuery(raw)
	return q
}
