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
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// Options tune the handler; zero values take the defaults.
type Options struct {
	// Settings are the stream and body settings both HTTP transports
	// share.
	httpx.Settings
	// MaxSessions refuses initialize with 503 while the engine holds this
	// many live sessions (0: no cap).
	MaxSessions int
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

// session is one /mcp session; it is the engine session's mcp.Sink,
// which carries what belongs to no POST: broadcasts, and the notifications
// of POSTs answered with JSON, for the GET stream.
type session struct {
	s  *mcp.Session
	id string

	// resumable reports whether the session's POST streams can be resumed
	// (it speaks resumableSince or later): set once, as initialize is
	// answered (handOut), and read by every POST that accepts events
	// without taking the engine session's lock for its version.
	resumable atomic.Bool

	mu      sync.Mutex
	queue   [][]byte      // unsolicited messages for the GET stream
	wake    chan struct{} // signals the GET stream (capacity 1)
	getOpen bool
	// streams are the resumable POST streams, by number: those a
	// connection carries and those kept for a client to resume, finished
	// or not, until sweep or the session's end lets go of them.
	streams map[int64]*route
	last    int64 // the last stream number given out
	closed  bool  // the session ended: streams are let go as their connections are
}

var (
	_ mcp.Sink  = (*session)(nil)
	_ mcp.Route = (*route)(nil)
)

// Send queues each message for the GET stream. It never blocks: the
// stream's own goroutine writes them.
func (ss *session) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		// Every request on /mcp has a route, so a response here has no
		// POST waiting for it: nobody to give it to.
		if m.Kind != mcp.KindMessage {
			continue
		}
		if err := ss.unsolicited(m.Data); err != nil {
			return err
		}
	}
	return nil
}

// Close needs nothing: streams watch the session's Done.
func (ss *session) Close() {}

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

// route is one POST waiting for its answer. When it is resumable and its
// answer became an event stream, the route outlives the connection that
// carried it: it keeps what it wrote, numbered, and what arrives while no
// connection carries it, for a GET with Last-Event-ID to take up.
type route struct {
	events    bool // the client accepts an SSE answer
	resumable bool // events, and the session speaks resumableSince or later

	mu   sync.Mutex
	msgs []mcp.Outgoing // not yet written
	gone bool           // nobody will write what is pushed any more
	wake chan struct{}
	// st is set once the answer is a resumable stream (see
	// session.register), by the connection that carries the route then;
	// the rest of a JSON answer's route is all it needs.
	st *streamState
}

// streamState is what a resumable stream keeps; its route's mu guards it,
// but for n, which never changes.
type streamState struct {
	n   int64 // the stream's number in its session
	seq int64 // id of the last event written (0: the priming event)
	// sent holds the events written, for replay to a client that lost
	// them: the last maxRouteBacklog/2 to maxRouteBacklog of them, in
	// order and without gaps, so sent[0].seq is the oldest still kept.
	sent     []sentEvent
	attached bool      // a connection is writing the stream
	finished bool      // the response was recorded (or the request cancelled)
	leftAt   time.Time // when the last connection stopped carrying it
}

type sentEvent struct {
	seq int64
	m   mcp.Outgoing
}

// Resumable reports whether EndStream is honoured (see mcp.Route).
func (rt *route) Resumable() bool { return rt.resumable }

// maxRouteBacklog bounds the notifications kept for one POST whose client
// reads slowly, and those kept for replay; the response itself is never
// dropped.
const maxRouteBacklog = 1024

// Push hands m to the POST (see mcp.Route); false, for a notification,
// means this POST cannot carry it: its client takes JSON only, or has
// maxRouteBacklog of them unread.
func (rt *route) Push(m mcp.Outgoing) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.gone {
		return true // nobody will write it
	}
	if m.Kind == mcp.KindMessage && (!rt.events || len(rt.msgs) >= maxRouteBacklog) {
		return false
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

// putBack returns messages taken but not written to the front of the
// queue, for the next connection.
func (rt *route) putBack(msgs []mcp.Outgoing) {
	if len(msgs) == 0 {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !rt.gone {
		rt.msgs = append(slices.Clip(msgs), rt.msgs...)
	}
}

// record numbers m as the stream's next event and keeps it for replay; it
// returns the event's id, or "" when the route is not a resumable stream.
// A recorded response finishes the stream whether or not its write
// succeeds: a client that lost it gets it by resuming.
func (rt *route) record(m mcp.Outgoing) string {
	st := rt.st
	if st == nil {
		return ""
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(st.sent) >= maxRouteBacklog {
		// The older half goes at once: one copy every maxRouteBacklog/2
		// events rather than one per event. It never holds the response,
		// which is a stream's last event.
		n := copy(st.sent, st.sent[len(st.sent)/2:])
		clear(st.sent[n:])
		st.sent = st.sent[:n]
	}
	st.seq++
	st.sent = append(st.sent, sentEvent{seq: st.seq, m: m})
	st.finished = st.finished || m.Kind == mcp.KindResponse
	return eventID(st.n, st.seq)
}

// cancelled marks a resumable stream whose request was cancelled as
// finished: it will record no response.
func (rt *route) cancelled() {
	if rt.st == nil {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.st.finished = true
}

func (rt *route) abandon() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.gone = true
	rt.msgs = nil
}

// dropLocked lets go of a resumable stream for good, with what it kept
// for replay; rt.mu is held, and no connection carries the stream.
func (rt *route) dropLocked() {
	rt.gone = true
	rt.msgs = nil
	rt.st.sent = nil
}

// release settles rt once a connection stops carrying it: a route that
// never became a resumable stream is done with; a resumable stream is
// kept for its client to resume, finished or not, since a client may have
// lost what the server wrote last, unless its session is over.
func (ss *session) release(rt *route) {
	if rt.st == nil {
		rt.abandon()
		return
	}
	ss.mu.Lock()
	rt.mu.Lock()
	rt.st.attached, rt.st.leftAt = false, time.Now()
	closed := ss.closed
	if closed {
		delete(ss.streams, rt.st.n)
		rt.dropLocked()
	}
	rt.mu.Unlock()
	ss.mu.Unlock()
	if !closed {
		ss.sweep()
	}
}

// register makes rt a resumable stream of ss, carried by the calling
// connection, and returns the priming event's id.
func (ss *session) register(rt *route) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.streams == nil {
		ss.streams = make(map[int64]*route)
	}
	ss.last++
	n := ss.last
	rt.mu.Lock()
	rt.st = &streamState{n: n, attached: true}
	rt.mu.Unlock()
	ss.streams[n] = rt
	return eventID(n, 0)
}

// keptStream is a kept stream as sweep saw it.
type keptStream struct {
	rt       *route
	leftAt   time.Time
	finished bool
}

// sweep lets go of kept streams nobody resumed within resumeWindow, and
// of those beyond maxKeptStreams: finished ones first, then the oldest. A
// stream still waiting for its response is the only way its client will
// get that response, where a finished one only serves a client that lost
// the end of what it was sent.
func (ss *session) sweep() {
	now := time.Now()
	ss.mu.Lock()
	kept := make([]keptStream, 0, len(ss.streams))
	for _, rt := range ss.streams {
		rt.mu.Lock()
		if !rt.st.attached {
			kept = append(kept, keptStream{rt: rt, leftAt: rt.st.leftAt, finished: rt.st.finished})
		}
		rt.mu.Unlock()
	}
	ss.mu.Unlock()
	slices.SortFunc(kept, func(a, b keptStream) int {
		if a.finished != b.finished {
			if a.finished {
				return -1
			}
			return 1
		}
		return a.leftAt.Compare(b.leftAt)
	})
	for i, k := range kept {
		if len(kept)-i > maxKeptStreams || now.Sub(k.leftAt) > resumeWindow {
			ss.evict(k.rt, k.leftAt)
		}
	}
}

// evict lets go of rt, which sweep saw kept since seen, unless a resume
// took it up since then: sweep decided on a snapshot, and dropping a
// stream a connection now carries would give back buffers it is writing.
func (ss *session) evict(rt *route, seen time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.st.attached || !rt.st.leftAt.Equal(seen) {
		return
	}
	delete(ss.streams, rt.st.n)
	rt.dropLocked()
}

// end lets go of the streams of a session that is over: at once those no
// connection carries, the others as their connections stop (release).
// Nothing else would free what they keep: sweep runs only when the
// session's streams are used.
func (ss *session) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	for n, rt := range ss.streams {
		rt.mu.Lock()
		if !rt.st.attached {
			delete(ss.streams, n)
			rt.dropLocked()
		}
		rt.mu.Unlock()
	}
}

// resume attaches the calling connection to the stream lastID belongs to
// and returns it with the events after lastID, for writing again. On
// failure it returns the status and the error to answer with.
func (ss *session) resume(lastID string) (*route, []sentEvent, int, *fault.Error) {
	ss.sweep()
	n, seq, ok := parseEventID(lastID)
	if !ok {
		return nil, nil, http.StatusBadRequest, &fault.Error{Code: mcp.CodeStreamNotResumable,
			What: fmt.Sprintf("%s %q is not an event id this server gives out", HeaderLastEventID, lastID),
			Why:  "ids of resumable streams have the form STREAM-EVENT, two decimal numbers",
			How:  "send back the id of the last event received, or open the session's stream without " + HeaderLastEventID}
	}
	ss.mu.Lock()
	rt := ss.streams[n]
	ss.mu.Unlock()
	notFound := &fault.Error{Code: mcp.CodeStreamNotResumable,
		What: fmt.Sprintf("no stream of this session to resume at %s %q", HeaderLastEventID, lastID),
		Why: fmt.Sprintf("a stream can be resumed for %s after its connection closed, and a session keeps at most %d, "+
			"letting go of those already answered first, then the oldest", resumeWindow, maxKeptStreams),
		How: "send the request again, or open the session's stream without " + HeaderLastEventID}
	if rt == nil {
		return nil, nil, http.StatusBadRequest, notFound
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	st := rt.st
	first := st.seq + 1 // the oldest event kept for replay
	if len(st.sent) > 0 {
		first = st.sent[0].seq
	}
	switch {
	case rt.gone:
		return nil, nil, http.StatusBadRequest, notFound
	case seq > st.seq:
		return nil, nil, http.StatusBadRequest, &fault.Error{Code: mcp.CodeStreamNotResumable,
			What: fmt.Sprintf("%s %q is past the last event of its stream (%s)", HeaderLastEventID, lastID, eventID(n, st.seq)),
			Why:  "the server has not sent that event",
			How:  "send back the id of the last event received"}
	case st.attached:
		return nil, nil, http.StatusConflict, &fault.Error{Code: mcp.CodeStreamConflict,
			What: fmt.Sprintf("stream %d is still being written on another connection", n),
			Why:  "a stream is carried by one connection at a time",
			How:  "close the other connection first, then resume"}
	case seq+1 < first:
		return nil, nil, http.StatusBadRequest, &fault.Error{Code: mcp.CodeStreamNotResumable,
			What: fmt.Sprintf("the events after %s %q are no longer kept: the oldest of its stream still kept is %s",
				HeaderLastEventID, lastID, eventID(n, first)),
			Why: fmt.Sprintf("a stream keeps its last %d to %d events for replay, and %d were written since that one",
				maxRouteBacklog/2, maxRouteBacklog, st.seq-seq),
			How: "send the request again, or open the session's stream without " + HeaderLastEventID}
	}
	st.attached = true
	// sent has no gaps, so the events after seq start at this index.
	replay := slices.Clone(st.sent[seq+1-first:])
	// A request to end the stream was meant for the connection that is
	// gone; this one carries the rest.
	rt.msgs = slices.DeleteFunc(rt.msgs, func(m mcp.Outgoing) bool { return m.Kind == mcp.KindEndStream })
	return rt, replay, 0, nil
}

// eventID is the id of event seq of stream n: unique in its session, and
// naming the stream it belongs to, as the specification asks.
func eventID(n, seq int64) string {
	return strconv.FormatInt(n, 10) + "-" + strconv.FormatInt(seq, 10)
}

// parseEventID reads what eventID wrote, and nothing else: the same
// numbers written another way (a sign, leading zeros) are no id the server
// gave out.
func parseEventID(id string) (n, seq int64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || seq < 0 || eventID(n, seq) != id {
		return 0, 0, false
	}
	return n, seq, true
}

// newSession opens a session, or answers 503 and returns nil at the cap.
func (h *Handler) newSession(w http.ResponseWriter, r *http.Request) *session {
	ss := &session{wake: make(chan struct{}, 1)}
	if ss.s = httpx.OpenSession(w, r, h.e, ss, h.opts.MaxSessions); ss.s == nil {
		return nil
	}
	ss.id = ss.s.ID()
	h.mu.Lock()
	h.sessions[ss.id] = ss
	h.mu.Unlock()
	id := ss.id
	// Before the initialize answer names the session: the client's next
	// request may land on another replica.
	release := func() {}
	if h.opts.OnSession != nil {
		release = h.opts.OnSession(id)
	}
	// However the session ends (DELETE, idle expiry, shutdown, a client
	// that stopped reading), its id stops resolving, and its kept streams
	// give their memory back.
	context.AfterFunc(ss.s.Context(), func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
		release()
		ss.end()
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
		httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
			What: "missing " + HeaderSession + " header",
			Why:  "every request after initialize names its session",
			How:  "send initialize first and echo the " + HeaderSession + " header of its response"})
		return nil
	}
	h.mu.Lock()
	ss := h.sessions[id]
	h.mu.Unlock()
	if ss == nil || ended(ss.s) {
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

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	if !httpx.JSONContentType(r) {
		httpx.UnsupportedMediaType(w, r)
		return
	}
	acceptJSON, acceptEvents := httpx.Accepts(r)
	if !acceptJSON && !acceptEvents {
		httpx.WriteError(w, r, http.StatusNotAcceptable, &fault.Error{Code: mcp.CodeNotAcceptable,
			What: "the Accept header allows neither JSON nor an event stream",
			Why:  "answers are application/json or text/event-stream",
			How:  "send Accept: application/json, text/event-stream"})
		return
	}
	if modernVersionHeader(r) && r.Header.Get(HeaderSession) == "" {
		body, ok := httpx.ReadBody(w, r, h.opts.MaxBodyBytes, h.opts.BodyTimeout)
		if ok {
			h.modern(w, r, body, nil, acceptJSON, acceptEvents)
		}
		return
	}
	var ss *session
	fresh := r.Header.Get(HeaderSession) == ""
	if !fresh {
		if ss = h.session(w, r); ss == nil {
			return
		}
	}
	body, ok := httpx.ReadBody(w, r, h.opts.MaxBodyBytes, h.opts.BodyTimeout)
	if !ok {
		return
	}
	if fresh {
		in, err := mcp.ParseInbound(body)
		if err != nil {
			httpx.WriteError(w, r, http.StatusBadRequest, err)
			return
		}
		if in.Modern() && r.Header.Get(HeaderProtocolVersion) == "" {
			// A modern message without its header: refused as that era says.
			h.modern(w, r, body, in, acceptJSON, acceptEvents)
			return
		}
		if in.Method() != mcp.MethodInitialize {
			httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
				What: "missing " + HeaderSession + " header",
				Why:  "without a session, only initialize (revisions up to " + mcp.LatestVersion + ") or a request naming its revision in params._meta (" + mcp.Version20260728 + " and later) may be sent",
				How:  "send initialize first and echo the " + HeaderSession + " header of its response, or send " + mcp.MethodServerDiscover + " with params._meta naming " + mcp.Version20260728})
			return
		}
		if ss = h.newSession(w, r); ss == nil {
			return
		}
		h.log.Debug("mcp session opened", "session", ss.id)
	}
	// A session is not resumable until its initialize is answered, so
	// neither is the initialize's own stream.
	rt := &route{events: acceptEvents, resumable: acceptEvents && ss.resumable.Load(), wake: make(chan struct{}, 1)}
	n, err := ss.s.Deliver(body, mcp.Delivery{Route: rt, Inline: true, ReturnParseErrors: true})
	if err != nil {
		httpx.WriteError(w, r, http.StatusBadRequest, httpx.ParseError())
		return
	}
	if n == 0 {
		if ended(ss.s) {
			httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("start a new session with initialize"))
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

// respond waits for rt's answer and writes it: as JSON when the first
// thing to say is the response and the client takes JSON, otherwise as an
// event stream.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, ss *session, rt *route, fresh, acceptJSON bool) {
	defer ss.release(rt)
	for {
		sessionDone := false
		select {
		case <-rt.wake:
		case <-r.Context().Done():
			return
		case <-ss.s.Done():
			sessionDone = true // the answer may have been routed just before the end
		}
		msgs := rt.take()
		if len(msgs) == 0 {
			if sessionDone {
				httpx.WriteError(w, r, http.StatusNotFound, &fault.Error{Code: mcp.CodeSessionNotFound,
					What: "the session ended before the request was answered",
					Why:  "it was deleted, expired, or the server is shutting down",
					How:  "start a new session with initialize and retry"})
				return
			}
			continue
		}
		if msgs[0].Kind == mcp.KindUnanswered {
			// Cancelled by the client: over, with nothing to say.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if msgs[0].Kind == mcp.KindResponse && acceptJSON {
			h.writeJSON(w, ss, msgs[0], fresh)
			return
		}
		rt.putBack(msgs)
		break
	}
	// Anything said before the response, or a client that takes only
	// streams: the answer becomes an event stream.
	if fresh {
		ss.handOut(w.Header())
	}
	ew := httpx.NewEventWriter(w, h.opts.WriteTimeout)
	var err error
	if rt.resumable {
		err = ew.StartPrimed(ss.register(rt), h.opts.Retry)
	} else {
		err = ew.Start()
	}
	if err == nil {
		h.pump(r, ss, rt, ew, nil)
	}
}

// handOut names the session on the answer to its initialize, when that
// succeeded, and notes whether its streams are resumable. The revision is
// settled by initialize and never changes after; noting it before the
// answer is written means before the client can send any other POST.
func (ss *session) handOut(hdr http.Header) {
	if !ss.s.Initialized() {
		return
	}
	ss.resumable.Store(ss.s.ProtocolVersion() >= resumableSince)
	hdr.Set(HeaderSession, ss.id)
}

// writeJSON writes the response m as the POST's JSON body.
func (h *Handler) writeJSON(w http.ResponseWriter, ss *session, m mcp.Outgoing, fresh bool) {
	hdr := w.Header()
	if fresh {
		ss.handOut(hdr)
	}
	// Shared value slices: net/http only reads them, and this is every
	// JSON answer.
	hdr["Content-Type"] = jsonContentType
	hdr["Cache-Control"] = noStore
	// A length spares net/http chunking answers over its 2 KB buffer.
	hdr["Content-Length"] = []string{strconv.Itoa(len(m.Data))}
	w.WriteHeader(http.StatusOK)
	w.Write(m.Data)
}

// pump writes rt's messages as events on ew, after replay (events a
// resuming client missed, written again under their ids), until the
// response is written, the handler ends the stream, the client goes away
// or the session ends.
func (h *Handler) pump(r *http.Request, ss *session, rt *route, ew *httpx.EventWriter, replay []sentEvent) {
	defer ss.s.Hold()()
	for _, e := range replay {
		if ew.Event(eventID(rt.st.n, e.seq), e.m.Data) != nil {
			return
		}
	}
	if len(replay) > 0 && ew.Flush() != nil {
		return
	}
	if rt.finished() {
		return // the replay was all there was
	}
	h.relay(r, rt, ew, ss.s.Done())
}

// relay writes rt's messages on ew as they come, with keep-alives, until
// the stream is over on this connection (see writeBatch), the client goes
// away, or end closes (nil: never), when what rt holds is written first.
func (h *Handler) relay(r *http.Request, rt *route, ew *httpx.EventWriter, end <-chan struct{}) {
	var tick <-chan time.Time
	if h.opts.KeepAlive > 0 {
		t := time.NewTicker(h.opts.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		if h.writeBatch(rt, ew) {
			return
		}
		select {
		case <-rt.wake:
		case <-tick:
			if ew.KeepAlive() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-end:
			h.writeBatch(rt, ew) // what was routed just before the end
			return
		}
	}
}

// finished reports whether rt is a resumable stream whose request is
// over.
func (rt *route) finished() bool {
	if rt.st == nil {
		return false
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.st.finished
}

// writeBatch writes what rt holds; it reports whether the stream is over
// on this connection: the response written, the stream ended early, or a
// write failed. A resumable stream is left to release either way: what it
// recorded is there for the client to resume.
func (h *Handler) writeBatch(rt *route, ew *httpx.EventWriter) (done bool) {
	msgs := rt.take()
	for i, m := range msgs {
		switch m.Kind {
		case mcp.KindEndStream:
			rt.putBack(msgs[i+1:])
			ew.Flush()
			return true
		case mcp.KindUnanswered:
			rt.cancelled()
			return true // cancelled: nothing more to say
		}
		id := rt.record(m)
		err := ew.Event(id, m.Data)
		if m.Kind == mcp.KindResponse {
			ew.Flush()
			return true
		}
		if err != nil {
			if id != "" {
				rt.putBack(msgs[i+1:])
			}
			return true
		}
	}
	return len(msgs) > 0 && ew.Flush() != nil
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
	h.log.Debug("mcp stream resumed", "session", ss.id, "last_event_id", lastID, "replayed", len(replay))
	h.pump(r, ss, rt, ew, replay)
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
