package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
)

// TestBinarySessionsAcrossReplicas: two `serve --nats` processes behind
// no balancer at all: a session opened on one is served through the
// other, and a session nobody holds is 404 on either.
func TestBinarySessionsAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	a := startHTTP(t, 0, "NATS_URL="+ns.URL())
	b := startHTTP(t, 0, "NATS_URL="+ns.URL())
	res, body := a.post(t, "/mcp", initializeMsg)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		a.fatalf(t, "initialize on a: %s %q", res.Status, body)
	}
	tests := []struct {
		name    string
		session string
		want    int
		in      string
	}{
		{name: "held by a", session: id, want: http.StatusOK, in: `"tools":[`},
		{name: "held by nobody", session: strings.Repeat("0f", 16), want: http.StatusNotFound, in: "SESSION_NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, answer := postMCP(t, b, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", tc.session)
			if res.StatusCode != tc.want || !strings.Contains(answer, tc.in) {
				t.Errorf("POST /mcp on b: %s %q, want %d with %s", res.Status, answer, tc.want, tc.in)
			}
		})
	}
}
