package streamable_test

import (
	"crypto/sha256"
	"net/http"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
)

// asMember stands for the security layer of a server whose credentials
// name members: the member is the X-Test-Member header.
func asMember(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := httpx.Owner(sha256.Sum256([]byte(r.Header.Get("X-Test-Member"))))
		next.ServeHTTP(w, httpx.WithCaller(r, httpx.Caller{Owner: owner}))
	})
}

// TestSessionOwner: a session answers only whoever opened it; anyone else
// naming it (another member, or a request with no member) gets the very
// answer an unknown session gets, whatever the method, and the session
// lives on for its owner.
func TestSessionOwner(t *testing.T) {
	f := newWrappedFixture(t, mcp.EngineOptions{}, streamable.Options{}, asMember)
	// A stream wrongly opened for another member would never end.
	f.c.Timeout = wait
	alice := []string{"X-Test-Member", "alice"}
	r := f.do(t, http.MethodPost, "", acceptBoth, initBody, alice...)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, alice...); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	unknown := f.do(t, http.MethodPost, "0123456789abcdef0123456789abcdef", acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, alice...)
	if unknown.status != http.StatusNotFound {
		t.Fatalf("an unknown session: %d %s", unknown.status, unknown.body)
	}
	tests := []struct {
		name, method, accept, body string
		member                     []string
	}{
		{"POST as another member", http.MethodPost, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"X-Test-Member", "mallory"}},
		{"POST as nobody", http.MethodPost, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		{"GET stream as another member", http.MethodGet, "text/event-stream", "", []string{"X-Test-Member", "mallory"}},
		{"resume as another member", http.MethodGet, "text/event-stream", "", []string{"X-Test-Member", "mallory", "Last-Event-ID", "1-0"}},
		{"DELETE as another member", http.MethodDelete, "", "", []string{"X-Test-Member", "mallory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.method, id, tt.accept, tt.body, tt.member...)
			if r.status != http.StatusNotFound || r.body != unknown.body {
				t.Errorf("%d %s; want what an unknown session gets: %d %s", r.status, r.body, unknown.status, unknown.body)
			}
		})
	}
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, alice...); r.status != http.StatusOK {
		t.Fatalf("the owner's ping after the others' tries: %d %s", r.status, r.body)
	}
}
