// Package sse serves MCP's legacy HTTP+SSE transport (revision 2024-11-05),
// the one Void IDE and other older clients speak, as the seed's Void Lab
// did:
//
//   - GET /sse opens a session; its first event is `event: endpoint` naming
//     the absolute URL to post to, then every server message is an
//     `event: message` carrying one compact JSON-RPC message.
//   - POST /sse/message?session_id=… hands one message to that session and
//     answers 202; the response arrives on the stream.
//   - POST /sse is the seed's fallback: one request answered in the body.
//
// The stream is served by r3labs/sse's server, one stream per session,
// with its replay log off. What a stream holds for its client, published
// and not yet written, is bounded in bytes (BufferBytes) as well as in
// events: a client that lets it fill is dropped at once, its session
// ended and its connection cut, rather than stalling the session or
// holding the buffer for the write timeout. Every write to the client
// also carries a deadline, so a client that stops reading while its
// buffer has room is dropped too.
package sse

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	r3sse "github.com/r3labs/sse/v2"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// Settings are the stream and body settings both HTTP transports
	// share. The engine's idle expiry never ends a session whose stream
	// is open, with keep-alives or without.
	httpx.Settings
	// PublicURL is the server's base URL as clients reach it (behind a
	// reverse proxy); the endpoint event then names
	// PublicURL/sse/message?session_id=…. Empty: built from the request's
	// Host.
	PublicURL string
	// TotalBufferBytes bounds what all streams hold together, as
	// BufferBytes bounds one (0: the default, TotalBufferBytes).
	TotalBufferBytes int64
}

// Handler serves GET /sse, POST /sse and POST /sse/message for one engine.
type Handler struct {
	e      *mcp.Engine
	opts   Options
	log    *slog.Logger
	events *r3sse.Server

	mu    sync.Mutex
	conns map[string]*conn

	dropped  atomic.Uint64 // streams dropped for not reading (Dropped)
	buffered atomic.Int64  // bytes all streams hold (Buffered)
}

// BufferBytes bounds what one stream holds for its client: the events
// published and not yet written to its connection, counted as their data
// plus eventCost each. A stream that would hold more belongs to a client
// that does not read fast enough, which is dropped. One event always fits
// an empty buffer, so an answer larger than the bound still reaches a
// client that reads; BufferBytes is well above the largest answer the
// result budgets allow anyway.
const BufferBytes = 1 << 20

// TotalBufferBytes bounds what all streams hold together, by default
// (Options.TotalBufferBytes): without it, every session's stream could
// hold BufferBytes at once, 10,000 MiB at the default --max-sessions.
// When the total is reached, the stream whose event would go over it is
// dropped as one whose own buffer is full: streams of clients that read
// hold next to nothing, so the total is reached only when clients stop
// reading, and the stream dropped is one of theirs or one that adds to
// them. One event always fits when no stream holds anything.
const TotalBufferBytes = 64 << 20

// eventCost is what one event costs besides its data: the *r3sse.Event
// and its place in the stream's channels.
const eventCost = 192

// New returns the legacy SSE handler feeding e.
func New(e *mcp.Engine, opts Options) *Handler {
	opts.Fill(e)
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	if opts.TotalBufferBytes <= 0 {
		opts.TotalBufferBytes = TotalBufferBytes
	}
	h := &Handler{e: e, opts: opts, log: opts.Logger, conns: make(map[string]*conn)}
	h.events = r3sse.New()
	// A session's outbox hands over at most its in-flight responses and
	// its allowance of other messages at once (see mcp's outboxLimit); a
	// buffer of that size takes any burst a client that reads can cause,
	// so a full one means a client that does not.
	// BufferBytes bounds the bytes; this bounds the events, whose slots
	// each stream allocates up front.
	h.events.BufferSize = e.Options().MaxInflightPerSession + 64
	// The replay log would keep every event of a session for good.
	h.events.AutoReplay = false
	// Streams exist only for sessions GET /sse opened.
	h.events.AutoStream = false
	// Runs once the subscriber is registered, so the event cannot be lost,
	// and before anything else reaches the stream (the session sends
	// nothing before initialize, which needs this event).
	h.events.OnSubscribe = h.subscribed
	h.events.Headers = map[string]string{
		"Cache-Control":     "no-cache, no-transform",
		"X-Accel-Buffering": "no", // nginx would otherwise hold events back
	}
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

// Dropped returns how many streams were dropped because their client let
// the buffer fill (BufferBytes), since the handler was made.
func (h *Handler) Dropped() uint64 { return h.dropped.Load() }

// Buffered returns the bytes all streams hold for their clients now,
// bounded by Options.TotalBufferBytes.
func (h *Handler) Buffered() int64 { return h.buffered.Load() }

// hold counts size more bytes held by a stream, unless that would take
// the total over its bound while some stream holds anything.
func (h *Handler) hold(size int) bool {
	for {
		n := h.buffered.Load()
		if n > 0 && n+int64(size) > h.opts.TotalBufferBytes {
			return false
		}
		if h.buffered.CompareAndSwap(n, n+int64(size)) {
			return true
		}
	}
}

// conn is one GET /sse stream and the session behind it; it is the
// session's mcp.Sink.
type conn struct {
	h        *Handler
	s        *mcp.Session
	id       string
	endpoint string
	owner    httpx.Owner // who opened it (see lookupFor)
	// cancel ends the stream's request, which makes the events server
	// let go of the subscriber and return.
	cancel context.CancelFunc

	mu   sync.Mutex
	keep *time.Timer // the next keep-alive comment; nil when stopped

	// bmu orders publishing an event with accounting for it, so that
	// sizes is in the order the events reach the writer.
	bmu sync.Mutex
	// held is the bytes of the events published and not yet written;
	// sizes the cost of each of them, oldest first.
	held  int
	sizes []int
	// w is the stream's writer while its handler runs (nil before and
	// after): drop cuts the connection through it.
	w *deadlineWriter
	// dropped is set once the client is dropped: nothing more is
	// published or written.
	dropped bool
}

var (
	_ mcp.Sink  = (*conn)(nil)
	_ mcp.Route = (*conn)(nil)
)

// errNotReading ends a session whose client has let its stream's buffer
// fill up.
var errNotReading = errors.New("the client is not reading its event stream")

// Send publishes each message as an `event: message`. It never blocks: a
// stream whose buffer is full belongs to a client that stopped reading,
// and the error ends its session.
func (c *conn) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if !c.publish(m.Data) {
			return errNotReading
		}
	}
	return nil
}

// Push publishes a message of a request posted to the endpoint: the
// conn is the Route of each, so a response goes to the events server from
// the goroutine that made it rather than through the session's outbox,
// whose writer would only pass it on (publishing never blocks). A stream
// that cannot take it ends the session, as in Send.
func (c *conn) Push(m mcp.Outgoing) bool {
	if m.Kind == mcp.KindMessage || m.Kind == mcp.KindResponse {
		c.publish(m.Data) // a stream that cannot take it is dropped
	}
	return true
}

// Resumable: the legacy transport has no resumable streams.
func (c *conn) Resumable() bool { return false }

func (c *conn) publish(data []byte) bool {
	return c.send(&r3sse.Event{Event: eventMessage, Data: httpx.OneLine(data)})
}

// send publishes ev unless the stream's buffer cannot take it. A stream
// whose buffer is full, in bytes or in events, belongs to a client that
// does not read: send drops it, which ends the session, cuts the
// connection, and lets go of everything the stream held, and returns
// false.
func (c *conn) send(ev *r3sse.Event) bool {
	size := cap(ev.Data) + len(ev.Comment) + eventCost
	c.bmu.Lock()
	fits := !c.dropped && (c.held == 0 || c.held+size <= BufferBytes)
	total := fits && !c.h.hold(size)
	ok := fits && !total && c.h.events.TryPublish(c.id, ev)
	if ok {
		c.held += size
		c.sizes = append(c.sizes, size)
	} else if fits && !total {
		c.h.buffered.Add(-int64(size))
	}
	held := c.held
	c.bmu.Unlock()
	if total {
		c.h.log.Info("the legacy SSE streams hold their total: dropping the stream that would go over it",
			"session", c.id, "held_bytes", held, "total_bytes", c.h.opts.TotalBufferBytes)
	}
	if !ok {
		c.drop()
	}
	return ok
}

// written accounts for the oldest event published: the events server has
// written it to the connection.
func (c *conn) written() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if len(c.sizes) > 0 {
		c.held -= c.sizes[0]
		c.h.buffered.Add(-int64(c.sizes[0]))
		c.sizes = c.sizes[1:]
	}
}

// forget lets go of what the stream held once it is gone: its events are
// never written, and nothing more is published to it.
func (c *conn) forget() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	c.dropped = true
	c.h.buffered.Add(-int64(c.held))
	c.held, c.sizes = 0, nil
}

// drop ends a stream whose client lets its buffer fill. A write to the
// client may be blocked, for up to the write timeout, on a client that
// does not read: the connection's write deadline is moved to now, so the
// write fails at once and the events server returns, and the stream with
// what it held is gone. The session ends (in a goroutine of its own: the
// caller may be the session's writer, which closing waits for).
func (c *conn) drop() {
	c.bmu.Lock()
	first := !c.dropped
	c.dropped = true
	if first && c.w != nil {
		c.w.cut()
	}
	held := c.held
	c.bmu.Unlock()
	if !first {
		return
	}
	// Logged before it is counted (Dropped, /healthz): whoever sees the
	// count finds the line.
	c.h.log.Info("dropped a legacy SSE client that does not read its stream", "session", c.id,
		"held_bytes", held, "buffer_bytes", BufferBytes)
	c.h.dropped.Add(1)
	c.s.Close()
}

// Close ends the stream when the session ends first (idle expiry,
// shutdown, a client that stopped reading).
func (c *conn) Close() {
	c.stopKeepAlive()
	c.cancel()
}

var (
	eventMessage  = []byte("message")
	eventEndpoint = []byte("endpoint")
	commentPing   = []byte("ping")
)

// startKeepAlive sends `: ping` every KeepAlive, for proxies that cut
// quiet connections. A timer rather than a ticker goroutine: an idle
// stream then costs no goroutine between pings.
func (c *conn) startKeepAlive() {
	if c.h.opts.KeepAlive <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep = time.AfterFunc(c.h.opts.KeepAlive, c.ping)
}

func (c *conn) ping() {
	c.mu.Lock()
	stopped := c.keep == nil
	c.mu.Unlock()
	// Not under the lock: a stream that cannot take the ping is dropped,
	// and ending its session stops this timer.
	if stopped || !c.send(&r3sse.Event{Comment: commentPing}) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keep != nil {
		c.keep.Reset(c.h.opts.KeepAlive)
	}
}

func (c *conn) stopKeepAlive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keep != nil {
		c.keep.Stop()
		c.keep = nil
	}
}

// Holds reports whether id names a session whose stream this handler
// serves: a message posted for it is handled here.
func (h *Handler) Holds(id string) bool { return h.lookup(id) != nil }

func (h *Handler) lookup(id string) *conn {
	if id == "" {
		return nil
	}
	h.mu.Lock()
	c := h.conns[id]
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.s.Done():
		// A dropped client's stream may still be winding down: its
		// session is over all the same.
		return nil
	default:
		return c
	}
}

// subscribed sends the endpoint event once the stream's client is
// subscribed (the events server's OnSubscribe).
func (h *Handler) subscribed(id string, _ *r3sse.Subscriber) {
	c := h.lookup(id)
	if c == nil {
		return
	}
	if !c.send(&r3sse.Event{Event: eventEndpoint, Data: []byte(c.endpoint)}) {
		return
	}
	// Only now: nothing may come before the endpoint event.
	c.startKeepAlive()
}

// stream serves GET /sse: a new session for the life of the stream.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c := &conn{h: h, cancel: cancel, owner: httpx.CallerOf(r).Owner}
	s := h.opts.Gate.OpenSession(w, r, h.e, c)
	if s == nil {
		return
	}
	c.s, c.id = s, s.ID()
	c.endpoint = h.endpointURL(r, c.id)
	// A client connected to its stream is not idle, however quiet.
	defer s.Hold()()
	h.events.CreateStream(c.id)
	h.mu.Lock()
	h.conns[c.id] = c
	h.mu.Unlock()
	h.log.Debug("sse session opened", logid.Session(c.id))
	if h.opts.OnSession != nil {
		// Before the endpoint event names the session: its messages may
		// be posted to another replica. Released once the stream is gone.
		defer h.opts.OnSession(c.id)()
	}

	// The events server finds the stream by the query's "stream"
	// parameter; MCP clients send none, so it gets a copy of the request
	// naming the session's, and the context that Close cancels. A shallow
	// copy: it only reads the request, and the stream holds it for as long
	// as the client stays.
	u := *r.URL
	u.RawQuery = "stream=" + c.id
	sr := r.WithContext(ctx)
	sr.URL = &u
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout, c: c}
	c.bmu.Lock()
	c.w = dw
	cut := c.dropped // dropped before the stream was served
	c.bmu.Unlock()
	if !cut {
		h.events.ServeHTTP(dw, sr)
	}
	// The writer is the handler's: nothing may use it once it returns.
	c.bmu.Lock()
	c.w = nil
	c.bmu.Unlock()

	// Over: the client left (or a write failed, which cancels the
	// request), or the session ended and cancelled it. Only now, with the
	// subscriber gone, may the stream be removed: removing it first would
	// leave the events server's watcher of the request waiting for good.
	c.stopKeepAlive()
	s.Close()
	h.events.RemoveStream(c.id)
	c.forget()
	h.mu.Lock()
	delete(h.conns, c.id)
	h.mu.Unlock()
	h.log.Debug("sse session closed", logid.Session(c.id))
}

// deadlineWriter arms a write deadline before the first write of each
// event, so a client that stops reading is dropped instead of holding the
// stream's writer forever: the failed write cancels the request, and the
// stream ends. It also tells its conn when an event has been written, for
// the accounting of the stream's buffer.
//
// The events server writes each event with one or more writes and then
// flushes; its first flush, of the response head alone, follows no write.
// So a flush after writes is the end of one event, in the order published.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	c       *conn
	armed   bool // written since the last flush
	// gone is set by cut: every write fails from then on, without
	// touching the connection's deadline again.
	gone atomic.Bool
}

// errDropped is what writes to a dropped client's stream return.
var errDropped = errors.New("the client was dropped: it let its stream's buffer fill")

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if d.gone.Load() {
		return 0, errDropped
	}
	if !d.armed {
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
		d.armed = true
	}
	return d.ResponseWriter.Write(p)
}

// Flush sends the event written so far (the events server flushes after
// each event).
func (d *deadlineWriter) Flush() {
	if d.gone.Load() {
		return
	}
	event := d.armed
	if !d.armed {
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	}
	_ = d.rc.Flush()
	d.armed = false
	if event {
		d.c.written()
	}
}

// cut makes the write in progress, if any, fail now and every later one
// at once. It may be called from any goroutine while the handler runs: a
// connection's deadline may be set concurrently with a write.
func (d *deadlineWriter) cut() {
	d.gone.Store(true)
	_ = d.rc.SetWriteDeadline(time.Now())
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

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
	return base + path + "?" + endpointQuery(r, id)
}

// message serves POST /sse/message: find the session, read the message,
// deliver it, 202. Quick requests are answered before the 202, on this
// goroutine, their answers published to the stream straight away.
func (h *Handler) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("session_id")
	if id == "" {
		id = q.Get("sessionId") // what the TypeScript SDK's own server names it
	}
	if id == "" {
		httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
			What: "no session_id", Why: "messages are posted to the URL of the endpoint event, which names the session",
			How: "open GET /sse and post to the URL its endpoint event gives"})
		return
	}
	c := h.lookupFor(r, id)
	if c == nil {
		httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse and use its endpoint URL"))
		return
	}
	// The Content-Type is not checked: the body is, and curl's default
	// form type should not stand between a person and a working request.
	body, lease, ok := h.opts.ReadHeld(w, r, id)
	if !ok {
		return
	}
	// The request the message becomes keeps the lease until it has run
	// (after the 202, for most); anything else lets go of it here.
	defer lease.Release()
	if _, ok := h.deliver(w, r, c.s, body, lease, c); ok {
		w.WriteHeader(http.StatusAccepted)
	}
}

// deliver reads body and hands it to s, its answer routed to rt, and
// reports how many answers rt gets (0 or 1). What the session is not to
// see is answered here: bytes that are not JSON with status 400 (ok is
// then false: the POST is answered), a JSON value that is no message, or
// a request of revision 2026-07-28 or later, which that revision defines
// for stdio and Streamable HTTP only, with its JSON-RPC error on rt, so a
// dual-era client's probe fails and it falls back to initialize.
func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, s *mcp.Session, body []byte, lease *mcp.Lease, rt mcp.Route) (answers int, ok bool) {
	in, err := mcp.ParseInbound(body)
	if err == nil {
		in.Keep(lease)
	}
	var id json.RawMessage
	fe, _ := err.(*mcp.FrameError) // ParseInbound's one kind of error
	switch {
	case fe != nil && fe.NotJSON():
		httpx.WriteError(w, r, http.StatusBadRequest, httpx.ParseError())
		return 0, false
	case fe != nil:
		id = fe.ID
	case in.IsRequest() && in.Modern():
		id, err = in.ID(), &fault.Error{Code: mcp.CodeInvalidRequest,
			What: in.Method() + " of revision " + in.ProtocolVersion() + " on a legacy transport",
			Why:  "the HTTP+SSE transport speaks revisions up to " + mcp.LatestVersion + "; revision " + mcp.Version20260728 + " and later are served on stdio and Streamable HTTP (/mcp)",
			How:  "send initialize to speak " + mcp.LatestVersion + " here, or use /mcp"}
	case h.opts.Admit != nil && !h.opts.Admit(w, r, in):
		return 0, false
	default:
		return s.DeliverInbound(r.Context(), in, rt), true
	}
	rt.Push(mcp.Outgoing{Kind: mcp.KindResponse, Data: h.e.ErrorResponse(id, err, false), Err: err})
	return 1, true
}

// directRoute carries one POST /sse request's response back to its
// handler instead of the stream.
type directRoute struct{ ch chan mcp.Outgoing }

var _ mcp.Route = (*directRoute)(nil)

func newDirectRoute() *directRoute { return &directRoute{ch: make(chan mcp.Outgoing, 1)} }

// Push takes the request's last message; its notifications go to the
// session's stream (a body holds one answer).
func (rt *directRoute) Push(m mcp.Outgoing) bool {
	if m.Kind == mcp.KindMessage || m.Kind == mcp.KindEndStream {
		return false
	}
	select {
	case rt.ch <- m:
	default: // cannot happen: one last message per request
	}
	return true
}

// Resumable: a body cannot be resumed.
func (rt *directRoute) Resumable() bool { return false }

// oneShot is the sink of a session that lives for one POST /sse: only
// the routed response matters; anything unsolicited has nobody to go to.
type oneShot struct{}

var _ mcp.Sink = oneShot{}

func (oneShot) Send([]mcp.Outgoing) error { return nil }
func (oneShot) Close()                    {}

// direct serves POST /sse, the seed's fallback: one request answered in
// the body. With a session (session_id or Mcp-Session-Id) it runs on that
// SSE session; without one it runs on a session made for it alone.
//
// Clients probe a URL for Streamable HTTP by posting initialize to it and
// fall back to legacy SSE when that fails; the widely used stdio-to-HTTP
// bridge does so only on 404 or 405. So initialize answers 405 with
// Allow: GET, the specification's own example; other bodies that are not a
// request fail with 400.
func (h *Handler) direct(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("session_id")
	if id == "" {
		id = r.Header.Get("Mcp-Session-Id")
	}
	var c *conn
	if id != "" {
		if c = h.lookupFor(r, id); c == nil {
			httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse"))
			return
		}
	}
	body, lease, ok := h.opts.ReadHeld(w, r, id)
	if !ok {
		return
	}
	defer lease.Release()
	if !json.Valid(body) {
		httpx.WriteError(w, r, http.StatusBadRequest, httpx.ParseError())
		return
	}
	var peek struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &peek) != nil || peek.Method == "" {
		httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeBadRequest,
			What: "POST /sse takes one JSON-RPC request", Why: "the body is not a JSON-RPC request object",
			How: `post one object such as {"jsonrpc":"2.0","id":1,"method":"tools/list"}`})
		return
	}
	if c != nil {
		h.answer(w, r, c.s, body, lease)
		return
	}
	if peek.Method == mcp.MethodInitialize {
		w.Header().Set("Allow", http.MethodGet)
		httpx.WriteError(w, r, http.StatusMethodNotAllowed, &fault.Error{Code: mcp.CodeMethodNotAllowed,
			What: "initialize is not accepted on POST /sse",
			Why:  "this URL serves the legacy HTTP+SSE transport, whose sessions start with GET /sse",
			How:  "open GET /sse and post to its endpoint URL, or use Streamable HTTP at /mcp"})
		return
	}
	if peek.ID == nil {
		httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
			What: "a notification on POST /sse needs a session", Why: "without a session there is nothing for it to act on",
			How: "post it to the endpoint URL of a GET /sse stream"})
		return
	}
	s := h.opts.Gate.OpenSession(w, r, h.e, oneShot{})
	if s == nil {
		return
	}
	defer s.Close()
	// Initialize is answered within Deliver, so the request that follows
	// finds the session ready.
	s.Deliver(oneShotInit(), nil)
	h.answer(w, r, s, body, lease)
}

// oneShotInit is the initialize a POST /sse session without a client
// handshake runs on: a fresh frame each time, since a frame becomes its
// session's.
func oneShotInit() []byte {
	return []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` +
		mcp.LatestVersion + `","capabilities":{},"clientInfo":{"name":"flowyprompt POST /sse","version":"0"}}}`)
}

// answer delivers body on s and writes its response as the HTTP body.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, s *mcp.Session, body []byte, lease *mcp.Lease) {
	rt := newDirectRoute()
	n, ok := h.deliver(w, r, s, body, lease, rt)
	if !ok {
		return
	}
	if n == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	select {
	case m := <-rt.ch:
		if m.Kind == mcp.KindUnanswered {
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
		httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("open a new stream with GET /sse"))
	}
}
