package preview

import (
	"fmt"
	"net/http"
	"time"
)

// changed tells every open event stream that the library changed. A
// stream that has not sent the last change yet sends one for both: the
// page reads the whole library again either way.
func (h *Handler) changed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.streams {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// serveEvents is the page's event stream (text/event-stream): "ready"
// once it is open, "change" each time the library changes, a comment now
// and then to keep it open. The page reads the library again on each.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	ch := make(chan struct{}, 1)
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
	h.streams[ch] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, ch)
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
		case <-ch:
			if !send("event: change\ndata: {}\n\n") {
				return
			}
		}
	}
}
