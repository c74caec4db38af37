package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
)

// TestBinaryMemberAcrossReplicas: two `serve --nats --auth-issuer`
// processes: a member's session opened on one is served through the
// other to that member, whose name the holder's audit line carries, and
// is not found for another member.
func TestBinaryMemberAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	is := newMemberIssuer(t)
	const public = "https://prompts.example.com"
	keys := strings.TrimPrefix(clusterKeysEnv, "FLOWYPROMPT_STATE_KEYS=")
	flags := []string{"--nats", ns.URL(), "--state-keys", keys, "--auth-issuer", is.srv.URL, "--public-url", public, "--log-format", "json"}
	a := startHTTPWith(t, flags...)
	b := startHTTPWith(t, flags...)
	for _, s := range []*httpServer{a, b} {
		if !s.waitOutput("authorization server reached", 15*time.Second) {
			s.fatalf(t, "the issuer was not reached")
		}
	}
	alice, bob := is.bearer(t, "alice", public+"/mcp"), is.bearer(t, "bob", public+"/mcp")
	res, body := postMCP(t, a, initializeMsg, alice...)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		a.fatalf(t, "initialize on a: %s %q", res.Status, body)
	}
	prompt := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"Code_Review","arguments":{"code":"x := 1","language":"Go"}}}`, n)
	}
	alicesLine := a.expect(`"request_id":"3"`)
	res, body = postMCP(t, b, prompt(2), append([]string{"Mcp-Session-Id", id}, bob...)...)
	if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "SESSION_NOT_FOUND") {
		b.fatalf(t, "bob through b: %s %q, want 404 SESSION_NOT_FOUND", res.Status, body)
	}
	res, body = postMCP(t, b, prompt(3), append([]string{"Mcp-Session-Id", id}, alice...)...)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "x := 1") {
		b.fatalf(t, "alice through b: %s %q, want her prompt", res.Status, body)
	}
	select {
	case <-alicesLine:
	case <-time.After(15 * time.Second):
		a.fatalf(t, "no audit line of alice's request on the holder")
	}
	out := a.Output()
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"request_id":"3"`) &&
			(!strings.Contains(line, `"member":"alice"`) || !strings.Contains(line, `"member_email":"alice@example.com"`)) {
			a.fatalf(t, "the holder's audit line %s does not name alice", line)
		}
	}
	// Bob's request was refused before it ran: the holder's only audit
	// line, written after it, is alice's.
	if strings.Contains(out, `"member":"bob"`) || strings.Contains(out, `"request_id":"2"`) {
		a.fatalf(t, "bob's request ran on the holder")
	}
}
