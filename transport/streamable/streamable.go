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
//   - A POST's event stream is resumable when the session speaks
//     2025-11-25 or later (SEP-1699): it opens with an event id and a retry
//     field, every event carries an id, and a GET with Last-Event-ID picks
//     the stream up where the client lost it, replaying what it missed. A
//     handler may end the stream early (mcp.Request.EndStream) so a long
//     request holds no connection; the client resumes to get the rest.
//   - DELETE ends the session.
//
// Each POST is its own route through the engine, so any number of them
// may be in flight on one session and each gets its own answer.
package streamable

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// Settings are the stream and body settings both HTTP transports
	// share.
	httpx.Settings
	// PreferStreams answers with an event stream whenever the client
	// accepts one, rather than JSON unless the handler sends something
	// before its result. JSON is cheaper; streams let clients see every
	// answer the same way (the conformance suite counts them).
	PreferStreams bool
	// Retry is the reconnection delay resumable streams announce in their
	// SSE retry field (default 1 s).
	Retry time.Duration
}

const (
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

	// DefaultRetry is the reconnection delay resumable streams announce.
	DefaultRetry = time.Second
	// HeaderLastEventID names the last event a resuming client received.
	HeaderLastEventID = "Last-Event-ID"
	// A stream no connection carries (lost, ended early, or finished: a
	// response written may still not have arrived) can be resumed for this
	// long; a session keeps at most maxKeptStreams of them, those still
	// waiting for their response first, then the newest.
	resumeWindow   = 2 * time.Minute
	maxKeptStreams = 16
	// resumableSince is the first revision whose clients expect a priming
	// event with empty data; older ones would try to parse it as a message.
	resumableSince = "2025-11-25"
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
	opts.Fill(e)
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	return &Handler{e: e, opts: opts, log: opts.Logger, sessions: make(map[string]*session)}
}

// Sessions returns the number of live /mcp sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Holds reports whether id names a session of this handler, live or just
// ended: a request for it is answered here.
func (h *Handler) Holds(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id] != nil
}

// ServeHTTP dispatches on the method.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet, http.MethodDelete:
		if r.Header.Get(HeaderSession) == "" {
			// Without a session (the modern era has none) there is no
			// stream to open and nothing to end.
			httpx.MethodNotAllowed(w, r, http.MethodPost)
			return
		}
		if r.Method == http.MethodGet {
			h.get(w, r)
		} else {
			h.delete(w, r)
		}
	default:
		httpx.MethodNotAllowed(w, r, http.MethodGet, http.MethodPost, http.MethodDelete)
	}
}

// session resolves the request's Mcp-Session-Id and checks its
// MCP-Protocol-Version; on failure it has answered.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(HeaderSession)
	if id == "" {
		httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
			What: "missing " + HeaderSession + " header",
			Why:  "every request after initialize names its session",
			How:  "send initialize first and echo the " + HeaderSession + " header of its response"})
		return nil
	}
	h.mu.Lock()
	ss := h.sessions[id]
	h.mu.Unlock()
	// A session someone else opened is answered as one that does not
	// exist (httpx.Owner).
	if ss == nil || ended(ss.s) || !ss.owner.Is(httpx.CallerOf(r).Owner) {
		httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("start a new session with initialize"))
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
	httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeUnsupportedVersion,
		What:    fmt.Sprintf("unsupported %s %q", HeaderProtocolVersion, v),
		Why:     "the server speaks only the revisions it lists",
		How:     "send the protocolVersion that initialize returned",
		Details: map[string]any{"supported": mcp.SupportedVersions}})
	return false
}

// get serves the session's server→client stream.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	if _, events := httpx.Accepts(r); !events {
		httpx.WriteError(w, r, http.StatusNotAcceptable, &fault.Error{Code: mcp.CodeNotAcceptable,
			What: "GET /mcp answers only text/event-stream", Why: "it opens the server→client event stream",
			How: "send Accept: text/event-stream"})
		return
	}
	ss := h.session(w, r)
	if ss == nil {
		return
	}
	if last := r.Header.Get(HeaderLastEventID); last != "" {
		h.resume(w, r, ss, last)
		return
	}
	ss.mu.Lock()
	if ss.getOpen {
		ss.mu.Unlock()
		httpx.WriteError(w, r, http.StatusConflict, &fault.Error{Code: mcp.CodeStreamConflict,
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
	// A client connected to its stream is not idle, however quiet, and
	// whatever the keep-alive setting.
	defer ss.s.Hold()()

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

// resume carries on, on this GET, the POST stream the client lost at
// event lastID: the events after it first, then the rest as it comes.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, ss *session, lastID string) {
	rt, replay, status, f := ss.resume(lastID)
	if rt == nil {
		httpx.WriteError(w, r, status, f)
		return
	}
	defer ss.release(rt)
	ew := httpx.NewEventWriter(w, h.opts.WriteTimeout)
	if ew.StartRetry(h.opts.Retry) != nil {
		return
	}
	h.log.Debug("mcp stream resumed", logid.Session(ss.id), "last_event_id", lastID, "replayed", len(replay))
	h.pump(r, ss, rt, ew, replay)
}

// delete ends the session.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	ss := h.session(w, r)
	if ss == nil {
		return
	}
	ss.s.Close()
	h.log.Debug("mcp session deleted", logid.Session(ss.id))
	w.WriteHeader(http.StatusOK)
}
