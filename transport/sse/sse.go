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
// The stream itself is github.com/r3labs/sse/v2, configured around its
// traps (see LIBRARIES.md): no replay, the endpoint event published from
// OnSubscribe, the stream named through a cloned request, and torn down
// only after its ServeHTTP has returned. A write deadline on every write
// drops a client that stops reading, so one stuck client cannot hold its
// session's writer, and the stream, forever.
package sse

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	r3sse "github.com/r3labs/sse/v2"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// PublicURL is the server's base URL as clients reach it (behind a
	// reverse proxy); the endpoint event then names
	// PublicURL/sse/message?session_id=…. Empty: built from the request's
	// Host.
	PublicURL string
	// KeepAlive is the interval of `: ping` comments on an open stream
	// (default 15 s; negative turns them off).
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

const (
	// DefaultKeepAlive is the interval of keep-alive comments.
	DefaultKeepAlive = httpx.DefaultKeepAlive
	// DefaultWriteTimeout bounds one write to a client.
	DefaultWriteTimeout = httpx.DefaultWriteTimeout
	// streamBuffer is r3labs' per-stream event queue. The session's outbox
	// is the real buffer; this only has to keep the writer busy.
	streamBuffer = 64
)

var (
	eventEndpoint = []byte("endpoint")
	eventMessage  = []byte("message")
	pingComment   = []byte("ping")
)

// Handler serves GET /sse, POST /sse and POST /sse/message for one engine.
type Handler struct {
	e    *mcp.Engine
	opts Options
	log  *slog.Logger
	srv  *r3sse.Server

	mu    sync.Mutex
	conns map[string]*conn
}

// New returns the legacy SSE handler feeding e.
func New(e *mcp.Engine, opts Options) *Handler {
	httpx.FillDefaults(e, &opts.KeepAlive, &opts.MaxBodyBytes, &opts.WriteTimeout, &opts.Logger)
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	h := &Handler{e: e, opts: opts, log: opts.Logger, conns: make(map[string]*conn)}
	srv := r3sse.New()
	srv.AutoReplay = false // on, every event would be kept and replayed forever
	srv.AutoStream = false
	srv.BufferSize = streamBuffer
	srv.Headers["X-Accel-Buffering"] = "no"
	srv.OnSubscribe = h.onSubscribe
	h.srv = srv
	return h
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
	h        *Handler
	s        *mcp.Session
	id       string
	endpoint string
	cancel   context.CancelFunc // ends the stream's request, hence ServeHTTP

	mu      sync.Mutex
	keep    *time.Timer
	stopped bool
}

// Send publishes each message as an `event: message`. Only the session's
// outbox calls it, so r3labs' Publish, which blocks on a full stream, only
// ever holds up this one session; the write deadline bounds that wait.
func (c *conn) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if rt, ok := m.Route.(*directRoute); ok && m.Response {
			rt.deliver(m)
			continue
		}
		if m.Data == nil {
			continue
		}
		c.h.srv.Publish(c.id, &r3sse.Event{Event: eventMessage, Data: httpx.OneLine(m.Data)})
	}
	return nil
}

// Close ends the stream when the session ends first (idle expiry,
// shutdown, a failed write).
func (c *conn) Close() { c.cancel() }

func (c *conn) startKeepAlive() {
	ka := c.h.opts.KeepAlive
	if ka <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped && c.keep == nil {
		// A timer rather than a ticker goroutine: an idle stream then costs
		// no goroutine between pings.
		c.keep = time.AfterFunc(ka, c.ping)
	}
}

func (c *conn) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	// An open stream is a live client: the engine's idle expiry is for
	// sessions nobody is connected to.
	c.s.Touch()
	// TryPublish: a stream too busy to take a comment needs no keep-alive.
	c.h.srv.TryPublish(c.id, &r3sse.Event{Comment: pingComment})
	c.keep.Reset(c.h.opts.KeepAlive)
}

func (c *conn) stopKeepAlive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.keep != nil {
		c.keep.Stop()
	}
}

func (h *Handler) lookup(id string) *conn {
	if id == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[id]
}

// stream serves GET /sse: a new session for the life of the response.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	if !httpx.Admit(w, h.e, h.opts.MaxSessions) {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c := &conn{h: h, cancel: cancel}
	s := h.e.NewSession(c)
	c.s, c.id = s, s.ID()
	c.endpoint = h.endpointURL(r, c.id)
	h.srv.CreateStream(c.id)
	h.mu.Lock()
	h.conns[c.id] = c
	h.mu.Unlock()
	h.log.Debug("sse session opened", "session", c.id)

	// The session may end on its own (idle expiry, shutdown): that ends
	// the request's context, which is what makes r3labs' ServeHTTP return.
	stop := context.AfterFunc(s.Context(), cancel)

	// r3labs takes the stream id only from the query: serve it a clone
	// whose query names our stream and nothing else (no token, no replay
	// header it would choke on).
	r2 := r.Clone(ctx)
	r2.URL.RawQuery = url.Values{"stream": {c.id}}.Encode()
	r2.Header.Del("Last-Event-ID")
	sw := &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout,
		fail: func() { cancel(); s.Close() }}
	h.srv.ServeHTTP(sw, r2)

	// Teardown order matters (LIBRARIES.md): ServeHTTP has returned, so
	// its subscriber is gone and removing the stream leaks nothing.
	stop()
	cancel()
	c.stopKeepAlive()
	s.Close()
	h.srv.RemoveStream(c.id)
	h.mu.Lock()
	delete(h.conns, c.id)
	h.mu.Unlock()
	h.log.Debug("sse session closed", "session", c.id)
}

// onSubscribe runs once r3labs has registered the stream's subscriber, so
// an event published now reaches it: the endpoint event must be first.
func (h *Handler) onSubscribe(streamID string, _ *r3sse.Subscriber) {
	c := h.lookup(streamID)
	if c == nil {
		return
	}
	h.srv.Publish(streamID, &r3sse.Event{Event: eventEndpoint, Data: []byte(c.endpoint)})
	c.startKeepAlive()
}

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
	q := r.URL.Query()
	id := q.Get("session_id")
	if id == "" {
		id = q.Get("sessionId") // what the TypeScript SDK's own server names it
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
	if !json.Valid(body) {
		httpx.WriteError(w, http.StatusBadRequest, httpx.ParseError())
		return
	}
	c.s.Deliver(body, nil)
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
	if !httpx.Admit(w, h.e, h.opts.MaxSessions) {
		return
	}
	s := h.e.NewSession(oneShot{})
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

// streamWriter is the ResponseWriter r3labs writes the stream to. It arms
// a write deadline before writing, and turns the first failed write into
// the end of the session.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	armed   bool
	failed  bool
	fail    func()
}

func (sw *streamWriter) arm() {
	if !sw.armed {
		_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
		sw.armed = true
	}
}

func (sw *streamWriter) Write(p []byte) (int, error) {
	sw.arm()
	n, err := sw.ResponseWriter.Write(p)
	if err != nil {
		sw.failure()
	}
	return n, err
}

func (sw *streamWriter) Flush() {
	sw.arm()
	if err := sw.rc.Flush(); err != nil {
		sw.failure()
	}
	sw.armed = false
}

func (sw *streamWriter) failure() {
	if !sw.failed {
		sw.failed = true
		sw.fail()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (sw *streamWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }
