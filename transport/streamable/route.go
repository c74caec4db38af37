package streamable

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
)

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
