package streamable

import (
	"net/http"
	"strconv"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// exchange is one POST waiting for its answer, of either era.
type exchange struct {
	ss *session // nil for a request of the 2026-07-28 era, which has none
	rt *route
	// fresh: the POST of initialize, which opened ss; its answer names
	// the session.
	fresh bool
	// modern: a request of the 2026-07-28 era with no session, whose
	// error has an HTTP status of its own.
	modern bool
	// preferJSON: the response is written as JSON when it comes first;
	// acceptsJSON: the client takes JSON at all.
	preferJSON, acceptsJSON bool
}

var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// answer waits for x's first message and writes the answer: the response
// as JSON when it comes first and the client prefers JSON, or, for the
// 2026-07-28 era, when it is an error the client takes as JSON (the
// revision gives errors an HTTP status of their own, which a stream,
// already 200, could not carry); otherwise an event stream, until the
// response, the client's leaving or the session's end.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, x *exchange) {
	var sessionDone <-chan struct{} // nil without a session: never ready
	if x.ss != nil {
		defer x.ss.release(x.rt)
		sessionDone = x.ss.s.Done()
	} else {
		defer x.rt.abandon()
	}
	for {
		ended := false
		select {
		case <-x.rt.wake:
		case <-r.Context().Done():
			return
		case <-sessionDone:
			ended = true // the answer may have been routed just before the end
		}
		msgs := x.rt.take()
		if len(msgs) == 0 {
			if ended {
				httpx.WriteError(w, r, http.StatusNotFound, &fault.Error{Code: mcp.CodeSessionNotFound,
					What: "the session ended before the request was answered",
					Why:  "it was deleted, expired, or the server is shutting down",
					How:  "start a new session with initialize and retry"})
				return
			}
			continue
		}
		m := msgs[0]
		if m.Kind == mcp.KindUnanswered {
			// Cancelled by the client: over, with nothing to say.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.Kind == mcp.KindResponse && (x.preferJSON || x.modern && m.Err != nil && x.acceptsJSON) {
			if x.fresh {
				x.ss.handOut(w.Header())
			}
			status := http.StatusOK
			if x.modern {
				status = errorStatus(m.Err)
			}
			h.writeJSON(w, status, m.Data)
			return
		}
		x.rt.putBack(msgs)
		break
	}
	// Anything said before the response, or a client that takes only
	// streams: the answer becomes an event stream.
	if x.fresh {
		x.ss.handOut(w.Header())
	}
	ew := httpx.NewEventWriter(w, h.opts.WriteTimeout)
	var err error
	if x.rt.resumable {
		err = ew.StartPrimed(x.ss.register(x.rt), h.opts.Retry)
	} else {
		err = ew.Start()
	}
	switch {
	case err != nil:
	case x.ss != nil:
		h.pump(r, x.ss, x.rt, ew, nil)
	default:
		h.relay(r, x.rt, ew, nil)
	}
}

// writeJSON writes data, one JSON-RPC message, as the POST's body.
func (h *Handler) writeJSON(w http.ResponseWriter, status int, data []byte) {
	hdr := w.Header()
	// Shared value slices: net/http only reads them, and this is every
	// JSON answer.
	hdr["Content-Type"] = jsonContentType
	hdr["Cache-Control"] = noStore
	// A length spares net/http chunking answers over its 2 KB buffer.
	hdr["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.WriteHeader(status)
	w.Write(data)
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
