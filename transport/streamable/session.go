package streamable

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// session is one /mcp session; it is the engine session's mcp.Sink,
// which carries what belongs to no POST: broadcasts, and the notifications
// of POSTs answered with JSON, for the GET stream.
type session struct {
	s     *mcp.Session
	id    string
	owner httpx.Owner // who opened it; only they reach it (Handler.session)

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
			// The id stays out: the error is logged, beside the session's digest.
			return fmt.Errorf("%d messages wait for a GET stream that is not being read", streamBacklog)
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

// newSession opens a session, or answers the refusal and returns nil at a
// cap (httpx.Gate).
func (h *Handler) newSession(w http.ResponseWriter, r *http.Request) *session {
	ss := &session{wake: make(chan struct{}, 1), owner: httpx.CallerOf(r).Owner}
	if ss.s = h.opts.Gate.OpenSession(w, r, h.e, ss); ss.s == nil {
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
	// that stopped reading, a failed initialize), its id stops resolving
	// as it ends; then its kept streams give their memory back.
	ss.s.OnClose(func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	})
	context.AfterFunc(ss.s.Context(), func() {
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

// handOut names the session on the answer to its initialize, when that
// succeeded, and notes whether its streams are resumable. The revision is
// settled by initialize and never changes after; noting it before the
// answer is written means before the client can send any other POST.
// When initialize failed, no session is handed out: it ends here, before
// the answer is written, so that whoever reads the answer finds it gone
// (the caps, /healthz).
func (ss *session) handOut(hdr http.Header) {
	if !ss.s.Initialized() {
		ss.s.Close()
		return
	}
	ss.resumable.Store(ss.s.ProtocolVersion() >= resumableSince)
	hdr.Set(HeaderSession, ss.id)
}
