package sse

import (
	"net/http"
	"net/url"

	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// lookupFor returns the session id names when r comes from whoever opened
// it, and nil otherwise, as for a session that does not exist: a session
// id alone is no way into someone else's session (httpx.Owner).
func (h *Handler) lookupFor(r *http.Request, id string) *conn {
	c := h.lookup(id)
	if c == nil || !c.owner.Is(httpx.CallerOf(r).Owner) {
		return nil
	}
	return c
}

// endpointQuery is the query of the endpoint URL a GET /sse hands out: its
// session, and the token when the client gave it in its own URL (it
// cannot send headers, so its posts need it there too).
func endpointQuery(r *http.Request, id string) string {
	q := url.Values{"session_id": {id}}
	if tok := httpx.CallerOf(r).URLToken; tok != "" {
		q.Set("token", tok)
	}
	return q.Encode()
}
