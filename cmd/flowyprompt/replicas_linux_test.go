package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
)

// clusterKeysEnv gives a replica the state keys every replica of the
// tests' clusters shares: --nats needs them.
const clusterKeysEnv = "FLOWYPROMPT_STATE_KEYS=Y2x1c3Rlci1rZXlzLW9mLXRoZS10ZXN0cy1yZXBsaWNhcw"

// TestBinarySessionsAcrossReplicas: two `serve --nats` processes behind
// no balancer at all: a session opened on one is served through the
// other, a session nobody holds is 404 on either, and the replica holding
// a session takes forwarded bodies up to its own --max-message-size.
func TestBinarySessionsAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	a := startHTTP(t, 0, "NATS_URL="+ns.URL(), clusterKeysEnv, "MCP_MAX_MESSAGE_SIZE=4096")
	b := startHTTP(t, 0, "NATS_URL="+ns.URL(), clusterKeysEnv)
	res, body := a.post(t, "/mcp", initializeMsg)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		a.fatalf(t, "initialize on a: %s %q", res.Status, body)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// Within b's cap (the default), over a's.
	large := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", 5000) + `"}}}`
	tests := []struct {
		name    string
		session string
		body    string
		want    int
		in      string
	}{
		{name: "held by a", session: id, body: list, want: http.StatusOK, in: `"tools":[`},
		{name: "held by nobody", session: strings.Repeat("0f", 16), body: list, want: http.StatusNotFound, in: "SESSION_NOT_FOUND"},
		{name: "over the holder's cap", session: id, body: large, want: http.StatusRequestEntityTooLarge,
			in: "takes forwarded bodies of at most 4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, answer := postMCP(t, b, tc.body, "Mcp-Session-Id", tc.session)
			if res.StatusCode != tc.want || !strings.Contains(answer, tc.in) {
				t.Errorf("POST /mcp on b: %s %q, want %d with %s", res.Status, answer, tc.want, tc.in)
			}
		})
	}
}
