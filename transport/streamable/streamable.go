// Package streamable serves MCP's Streamable HTTP transport (revision
// 2025-03-26 and later) at one endpoint, /mcp: what MCP Inspector, the
// conformance suite and modern clients speak.
//
//   - POST carries one message. initialize without a session creates one
//     and answers with its Mcp-Session-Id; every other POST names its
//     session (missing: 400, unknown or ended: 404). A POST holding only a
//     notification or a response is answered 202.
//   - A request's answer is JSON, or an SSE stream when the client accepts
//     one and the handler has something to say before the answer
//     (progress, logs, a question for the client): the choice is made on
//     the first message, so plain requests cost one JSON body.
//   - GET opens the session's server→client stream: list_changed
//     broadcasts, and notifications of requests whose POST takes JSON only.
//   - DELETE ends the session.
//
// Each POST is its own route through the engine, so any number of them
// may be in flight on one session and each gets its own answer.
package streamable

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// KeepAlive is the interval of `: ping` comments on open streams
	// (default 15 s; negative turns them off).
	KeepAlive time.Duration
	// MaxBodyBytes caps a posted message (default: the engine's
	// MaxMessageSize).
	MaxBodyBytes int64
	// MaxSessions refuses initialize with 503 while the engine holds this
	// many live sessions (0: no cap).
	MaxSessions int
	// WriteTimeout drops a stream whose client has not taken a write for
	// this long (default 30 s).
	WriteTimeout time.Duration
	// PreferStreams answers with an event stream whenever the client
	// accepts one, rather than JSON unless the handler sends something
	// before its result. JSON is cheaper; streams let clients see every
	// answer the same way (the conformance suite counts them).
	PreferStreams bool
	Logger        *slog.Logger
}

const (
	// DefaultKeepAlive is the interval of keep-alive comments.
	DefaultKeepAlive = httpx.DefaultKeepAlive
	// DefaultWriteTimeout bounds one write to a client.
	DefaultWriteTimeout = httpx.DefaultWriteTimeout

	// HeaderSession and HeaderProtocolVersion are the transport's headers.
	HeaderSession         = "Mcp-Session-Id"
	HeaderProtocolVersion = "MCP-Protocol-Version"

	// Unsolicited messages kept for a session with no GET stream open:
	// enough to not lose a list_changed sent just before the client opens
	// its stream, without holding memory for clients that never will.
	idleBacklog = 16
	// Messages queued for an open stream whose client is not reading;
	// beyond this the session is closed, as the engine does with a full
	// outbox.
	streamBacklog = 4096
)

// Handler serves /mcp for one engine.
type Handler struct {
	e    *mcp.Engine
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
}

// New returns the Streamable HTTP handler feeding e.
func New(e *mcp.Engine, opts Options) *Handler {
	httpx.FillDefaults(e, &opts.KeepAlive, &opts.MaxBodyBytes, &opts.WriteTimeout, &opts.Logger)
	return &Handler{e: e, opts: opts, log: opts.Logger, sessions: make(map[string]*session)}
}

// Sessions returns the number of live /mcp sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// ServeHTTP dispatches on the method.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		httpx.MethodNotAllowed(w, r, http.MethodGet, http.MethodPost, http.MethodDelete)
	}
}

// session is one /mcp session; it is the engine session's mcp.Sink.
type session struct {
	s  *mcp.Session
	id string

	mu      sync.Mutex
	queue   [][]byte      // unsolicited messages for the GET stream
	wake    chan struct{} // signals the GET stream (capacity 1)
	getOpen bool
}

// Send routes each message: to the POST that asked, or to the GET stream.
// It never blocks, so one slow POST cannot hold up the session's others.
func (ss *session) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if rt, ok := m.Route.(*route); ok && rt.push(m) {
			continue
		}
		if m.Response || m.Data == nil {
			continue // its POST is gone: nobody is waiting for it
		}
		if err := ss.unsolicited(m.Data); err != nil {
			return err
		}
	}
	return nil
}

// Close needs nothing: streams watch the session's Done.
func (ss *session) Close() {}

// NonBlocking tells the engine that Send only routes messages to waiting
// requests and streams, so it needs no writer goroutine per session.
func (ss *session) NonBlocking() {}

// RunsInline tells the engine that each request arrives on its own POST's
// goroutine, which waits for the answer: quick requests run right there.
func (ss *session) RunsInline() {}

// ReleasesResponses tells the engine that a response is handed back
// (Outgoing.Release) once its POST has written it, so responses are
// encoded into recycled buffers rather than copied out of one.
func (ss *session) ReleasesResponses() {}

func (ss *session) unsolicited(data []byte) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.getOpen {
		if len(ss.queue) >= streamBacklog {
			return fmt.Errorf("session %s: %d messages wait for a GET stream that is not being read", ss.id, streamBacklog)
		}
	} else if len(ss.queue) >= idleBacklog {
		// Keep the newest. The queue may be far longer than the idle
		// backlog: what a GET stream that stopped being read left behind.
		n := copy(ss.queue, ss.queue[len(ss.queue)-idleBacklog+1:])
		clear(ss.queue[n:])
		ss.queue = ss.queue[:n]
	}
	ss.queue = append(ss.queue, data)
	select {
	case ss.wake <- struct{}{}:
	default:
	}
	return nil
}

func (ss *session) take() [][]byte {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	q := ss.queue
	ss.queue = nil
	return q
}

// route is one POST waiting for its answer.
type route struct {
	events bool // the client accepts an SSE answer

	mu   sync.Mutex
	msgs []mcp.Outgoing
	gone bool
	wake chan struct{}
}

// maxRouteBacklog bounds the notifications kept for one POST whose client
// reads slowly; the response itself is never dropped.
const maxRouteBacklog = 1024

// push hands m to the POST; false means it should go to the GET stream
// instead (a notification for a client that takes JSON only).
func (rt *route) push(m mcp.Outgoing) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.gone {
		return true
	}
	if !m.Response {
		if !rt.events {
			return false
		}
		if len(rt.msgs) >= maxRouteBacklog {
			return true
		}
	}
	rt.msgs = append(rt.msgs, m)
	select {
	case rt.wake <- struct{}{}:
	default:
	}
	return true
}

func (rt *route) take() []mcp.Outgoing {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	m := rt.msgs
	rt.msgs = nil
	return m
}

func (rt *route) abandon() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.gone = true
	rt.msgs = nil
}

// newSession opens a session, or answers 503 and returns nil at the cap.
func (h *Handler) newSession(w http.ResponseWriter) *session {
	ss := &session{wake: make(chan struct{}, 1)}
	if ss.s = httpx.OpenSession(w, h.e, ss, h.opts.MaxSessions); ss.s == nil {
		return nil
	}
	ss.id = ss.s.ID()
	h.mu.Lock()
	h.sessions[ss.id] = ss
	h.mu.Unlock()
	id := ss.id
	// However the session ends (DELETE, idle expiry, shutdown, a client
	// that stopped reading), its id stops resolving.
	context.AfterFunc(ss.s.Context(), func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	})
	return ss
}

func ended(s *mcp.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// session resolves the request's Mcp-Session-Id and checks its
// MCP-Protocol-Version; on failure it has answered.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(HeaderSession)
	if id == "" {
		httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeSessionRequired,
			What: "missing " + HeaderSession + " header",
			Why:  "every request after initialize names its session",
			How:  "send initialize first and echo the " + HeaderSession + " header of its response"})
		return nil
	}
	h.mu.Lock()
	ss := h.sessions[id]
	h.mu.Unlock()
	if ss == nil || ended(ss.s) {
		httpx.WriteError(w, http.StatusNotFound, httpx.SessionNotFound("start a new session with initialize"))
		return nil
	}
	if !versionOK(w, r) {
		return nil
	}
	return ss
}

// versionOK checks MCP-Protocol-Version. Absent means 2025-03-26, which
// predates the header; any supported revision is accepted even if it
// differs from the negotiated one, as clients probe with older values.
func versionOK(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(HeaderProtocolVersion)
	if v == "" || mcp.IsSupportedVersion(v) {
		return true
	}
	httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeUnsupportedVersion,
		What:    fmt.Sprintf("unsupported %s %q", HeaderProtocolVersion, v),
		Why:     "the server speaks only the revisions it lists",
		How:     "send the protocolVersion that initialize returned",
		Details: map[string]any{"supported": mcp.SupportedVersions}})
	return false
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	if !httpx.JSONContentType(r) {
		httpx.UnsupportedMediaType(w, r)
		return
	}
	acceptJSON, acceptEvents := httpx.Accepts(r)
	if !acceptJSON && !acceptEvents {
		httpx.WriteError(w, http.StatusNotAcceptable, &fault.Error{Code: httpx.CodeNotAcceptable,
			What: "the Accept header allows neither JSON nor an event stream",
			Why:  "answers are application/json or text/event-stream",
			How:  "send Accept: application/json, text/event-stream"})
		return
	}
	var ss *session
	fresh := r.Header.Get(HeaderSession) == ""
	if !fresh {
		if ss = h.session(w, r); ss == nil {
			return
		}
	}
	body, ok := httpx.ReadBody(w, r, h.opts.MaxBodyBytes)
	if !ok {
		return
	}
	if fresh {
		if !json.Valid(body) {
			httpx.WriteError(w, http.StatusBadRequest, httpx.ParseError())
			return
		}
		var peek struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &peek) != nil || peek.Method != mcp.MethodInitialize {
			httpx.WriteError(w, http.StatusBadRequest, &fault.Error{Code: httpx.CodeSessionRequired,
				What: "missing " + HeaderSession + " header",
				Why:  "only initialize may be sent without a session",
				How:  "send initialize first and echo the " + HeaderSession + " header of its response"})
			return
		}
		if ss = h.newSession(w); ss == nil {
			return
		}
		h.log.Debug("mcp session opened", "session", ss.id)
	}
	rt := &route{events: acceptEvents, wake: make(chan struct{}, 1)}
	n, err := ss.s.DeliverJSON(body, rt)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, httpx.ParseError())
		return
	}
	if n == 0 {
		if ended(ss.s) {
			httpx.WriteError(w, http.StatusNotFound, httpx.SessionNotFound("start a new session with initialize"))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.respond(w, r, ss, rt, fresh, acceptJSON && !(h.opts.PreferStreams && acceptEvents))
	if fresh && !ss.s.Initialized() {
		ss.s.Close() // initialize failed: no session was handed out
	}
}

var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// respond waits for rt's answer and writes it, as JSON or as a stream.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, ss *session, rt *route, fresh, acceptJSON bool) {
	defer rt.abandon()
	var ew *httpx.EventWriter
	var ticker *time.Ticker
	var tick <-chan time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	// start turns the answer into an event stream.
	start := func() bool {
		if fresh && ss.s.Initialized() {
			w.Header().Set(HeaderSession, ss.id)
		}
		ew = httpx.NewEventWriter(w, h.opts.WriteTimeout)
		if ew.Start() != nil {
			return false
		}
		if h.opts.KeepAlive > 0 {
			ticker = time.NewTicker(h.opts.KeepAlive)
			tick = ticker.C
		}
		return true
	}
	// finish writes the response, the last thing this POST carries, and
	// releases its buffer.
	finish := func(m mcp.Outgoing) {
		defer m.Release()
		switch {
		case m.Data == nil && ew == nil:
			// Cancelled by the client: over, with nothing to say.
			w.WriteHeader(http.StatusAccepted)
		case m.Data == nil:
		case ew != nil:
			if ew.Message(m.Data) == nil {
				ew.Flush()
			}
		case !acceptJSON:
			if start() && ew.Message(m.Data) == nil {
				ew.Flush()
			}
		default:
			if fresh && ss.s.Initialized() {
				w.Header().Set(HeaderSession, ss.id)
			}
			hdr := w.Header()
			// Shared value slices: net/http only reads them, and this is
			// every JSON answer.
			hdr["Content-Type"] = jsonContentType
			hdr["Cache-Control"] = noStore
			// A length spares net/http chunking answers over its 2 KB buffer.
			hdr["Content-Length"] = []string{strconv.Itoa(len(m.Data))}
			w.WriteHeader(http.StatusOK)
			w.Write(m.Data)
		}
	}
	// drain writes what rt holds; true means the response was among it.
	drain := func() (done bool, ok bool) {
		for _, m := range rt.take() {
			if m.Response {
				finish(m)
				return true, true
			}
			if ew == nil && !start() {
				return false, false
			}
			if ew.Message(m.Data) != nil {
				return false, false
			}
		}
		if ew != nil && ew.Flush() != nil {
			return false, false
		}
		return false, true
	}
	for {
		select {
		case <-rt.wake:
			if done, ok := drain(); done || !ok {
				return
			}
		case <-tick:
			ss.s.Touch()
			if ew.KeepAlive() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-ss.s.Done():
			// The answer may have been routed just before the end.
			if done, _ := drain(); done {
				return
			}
			if ew == nil {
				httpx.WriteError(w, http.StatusNotFound, &fault.Error{Code: httpx.CodeSessionNotFound,
					What: "the session ended before the request was answered",
					Why:  "it was deleted, expired, or the server is shutting down",
					How:  "start a new session with initialize and retry"})
			}
			return
		}
	}
}

// get serves the session's server→client stream.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	if _, events := httpx.Accepts(r); !events {
		httpx.WriteError(w, http.StatusNotAcceptable, &fault.Error{Code: httpx.CodeNotAcceptable,
			What: "GET /mcp answers only text/event-stream", Why: "it opens the server→client event stream",
			How: "send Accept: text/event-stream"})
		return
	}
	ss := h.session(w, r)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	if ss.getOpen {
		ss.mu.Unlock()
		httpx.WriteError(w, http.StatusConflict, &fault.Error{Code: httpx.CodeConflict,
			What: "this session already has a GET stream open", Why: "a session has one server→client stream",
			How: "close the other stream first, or keep using it"})
		return
	}
	ss.getOpen = true
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.getOpen = false
		ss.mu.Unlock()
	}()

	ew := httpx.NewEventWriter(w, h.opts.WriteTimeout)
	if ew.Start() != nil {
		return
	}
	var tick <-chan time.Time
	if h.opts.KeepAlive > 0 {
		t := time.NewTicker(h.opts.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	send := func() bool {
		q := ss.take()
		for _, data := range q {
			if ew.Message(data) != nil {
				return false
			}
		}
		return len(q) == 0 || ew.Flush() == nil
	}
	if !send() {
		return
	}
	for {
		select {
		case <-ss.wake:
			if !send() {
				return
			}
		case <-tick:
			ss.s.Touch()
			if ew.KeepAlive() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-ss.s.Done():
			return
		}
	}
}

// delete ends the session.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	ss := h.session(w, r)
	if ss == nil {
		return
	}
	ss.s.Close()
	h.mu.Lock()
	delete(h.sessions, ss.id)
	h.mu.Unlock()
	h.log.Debug("mcp session deleted", "session", ss.id)
	w.WriteHeader(http.StatusOK)
}
