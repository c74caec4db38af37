package preview

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// A stream is an open event stream: the label its page shows ("" without
// labels) and whether a change of it is pending.
type stream struct {
	label string
	ch    chan struct{}
}

// changed tells every open event stream showing label that its library
// changed. A stream that has not sent the last change yet sends one for
// both: the page reads the whole library again either way.
func (h *Handler) changed(label string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for s := range h.streams {
		if s.label != label {
			continue
		}
		n++
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
	h.log.Debug("preview page's library changed", "label", label, "pages", n)
}

// serveEvents is the page's event stream (text/event-stream) of the
// label it names (?label=, as api/library): "ready" once it is open,
// "change" each time that label's library changes, a comment now and
// then to keep it open. The page reads the library again on each. A
// label that cannot be shown is refused as api/library refuses it.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	_, label, ok := h.view(w, r)
	if !ok {
		return
	}
	s := &stream{label: label, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, problem{Code: "SHUTTING_DOWN", Message: "the preview is stopping",
			How: "start it again"})
		return
	case len(h.streams) >= h.opts.MaxStreams:
		h.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, problem{Code: "TOO_MANY_STREAMS",
			Message: fmt.Sprintf("%d pages are open already", h.opts.MaxStreams), How: "close other tabs of the preview"})
		return
	}
	h.streams[s] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, s)
		h.mu.Unlock()
	}()

	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// retry: a page whose stream broke (the server restarted) comes back
	// within a second.
	if !send("retry: 1000\nevent: ready\ndata: {}\n\n") {
		return
	}
	change, _ := json.Marshal(map[string]string{"label": label})
	tick := time.NewTicker(h.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-tick.C:
			if !send(": keep-alive\n\n") {
				return
			}
		case <-s.ch:
			if !send("event: change\ndata: " + string(change) + "\n\n") {
				return
			}
		}
	}
}
