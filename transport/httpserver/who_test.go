package httpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// auditLines is an audit log whose lines a test receives as they are
// written, decoded.
type auditLines chan map[string]any

func (l auditLines) Write(p []byte) (int, error) {
	var line map[string]any
	if err := json.Unmarshal(p, &line); err != nil {
		return 0, err
	}
	l <- line
	return len(p), nil
}

// newAudit returns an audit log writing to a channel of its lines.
func newAudit(t testing.TB) (*audit.Log, auditLines) {
	lines := make(auditLines, 16)
	l := audit.New(slog.New(slog.NewJSONHandler(lines, nil)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = l.Close(ctx)
	})
	return l, lines
}

// next is the next line written.
func (l auditLines) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case line := <-l:
		return line
	case <-time.After(wait):
		t.Fatal("no audit line written")
		return nil
	}
}

// wantMember checks that line names alice, the member of the default
// token, in the era.
func wantMember(t testing.TB, line map[string]any, era string) {
	t.Helper()
	for k, v := range map[string]string{"member": "alice", "member_email": "alice@example.com", "era": era, "outcome": "ok"} {
		if line[k] != v {
			t.Errorf("audit line %v: %s = %v, want %s", line, k, line[k], v)
		}
	}
}

// postSSE posts body to a legacy SSE endpoint URL with header, on c's
// server.
func (c *client) postSSE(t testing.TB, endpoint, body string, header ...string) reply {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("endpoint %q: %v", endpoint, err)
	}
	// The endpoint names the public URL; the path and query are this
	// server's.
	return c.do(t, http.MethodPost, u.RequestURI(), body, header...)
}

// openSSEWith opens GET /sse with header, initializes the session with
// the same header, and returns the stream and its endpoint URL.
func (c *client) openSSEWith(t testing.TB, header ...string) (*events, string) {
	t.Helper()
	ev := c.stream(t, "/sse", header...)
	e := ev.next(t)
	if e.name != "endpoint" || !sessionRE.MatchString(e.data) {
		t.Fatalf("first event %q %q, want the endpoint", e.name, e.data)
	}
	init := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	if r := c.postSSE(t, e.data, init, header...); r.status != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if m := ev.message(t); m["id"] != "init" {
		t.Fatalf("initialize answer: %v", m)
	}
	if r := c.postSSE(t, e.data, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header...); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return ev, e.data
}

// TestAuditNamesTheMember2025: a 2025-era session a member opened, over
// /mcp and over /sse, writes audit lines that name the member who asked.
func TestAuditNamesTheMember2025(t *testing.T) {
	is := newIssuer(t)
	log, lines := newAudit(t)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{Observer: log})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	alice := bearerOf(is.valid(t, tokenClaims{}))

	t.Run("/mcp", func(t *testing.T) {
		id := c.openMCP(t, alice...)
		r := c.do(t, http.MethodPost, "/mcp", benchPrompt(2), append([]string{"Mcp-Session-Id", id}, alice...)...)
		if r.status != http.StatusOK {
			t.Fatalf("prompts/get: %d %s", r.status, r.body)
		}
		line := lines.next(t)
		wantMember(t, line, "2025")
		if line["protocol_version"] != "2025-11-25" || line["prompt"] != "Code_Review" {
			t.Errorf("audit line %v: not the prompts/get of the session", line)
		}
	})
	t.Run("/sse", func(t *testing.T) {
		ev, endpoint := c.openSSEWith(t, alice...)
		defer ev.close()
		if r := c.postSSE(t, endpoint, benchPrompt(3), alice...); r.status != http.StatusAccepted {
			t.Fatalf("prompts/get: %d %s", r.status, r.body)
		}
		if m := ev.message(t); m["result"] == nil {
			t.Fatalf("prompts/get answer: %v", m)
		}
		line := lines.next(t)
		wantMember(t, line, "2025")
		if line["protocol_version"] != "2024-11-05" {
			t.Errorf("audit line %v: not the SSE session's", line)
		}
	})
}

// TestForwardedMember: with an authorization server and replicas, a
// request for a member's session that reaches another replica is
// forwarded with the member: the holder serves it to that member, whose
// name its audit line carries, and answers another member's as a session
// that does not exist.
func TestForwardedMember(t *testing.T) {
	is := newIssuer(t)
	ns := natstest.Start(t)
	logA, linesA := newAudit(t)
	logB, linesB := newAudit(t)
	a := newReplicaWith(t, ns.URL(), "a", mcp.EngineOptions{Observer: logA},
		httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	b := newReplicaWith(t, ns.URL(), "b", mcp.EngineOptions{Observer: logB},
		httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil)})
	alice := bearerOf(is.valid(t, tokenClaims{}))
	bob := bearerOf(is.valid(t, tokenClaims{Sub: "bob"}))

	t.Run("/mcp", func(t *testing.T) {
		id := a.c.openMCP(t, alice...)
		tests := []struct {
			name   string
			header []string
			id     int64
			status int
		}{
			{name: "bob", header: bob, id: 4, status: http.StatusNotFound},
			{name: "alice", header: alice, id: 5, status: http.StatusOK},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := b.c.do(t, http.MethodPost, "/mcp", benchPrompt(tc.id), append([]string{"Mcp-Session-Id", id}, tc.header...)...)
				if r.status != tc.status {
					t.Fatalf("prompts/get through b: %d %s, want %d", r.status, r.body, tc.status)
				}
				if tc.status == http.StatusNotFound && errData(t, r.body).Code != mcp.CodeSessionNotFound {
					t.Errorf("bob's answer %s, want SESSION_NOT_FOUND", r.body)
				}
			})
		}
		// Bob's request was never run: the first line is alice's, written
		// by the holder.
		line := linesA.next(t)
		wantMember(t, line, "2025")
		if line["request_id"] != "5" {
			t.Errorf("the holder's first line is request %v's, want alice's (5)", line["request_id"])
		}
		if n := b.e.SessionCount(); n != 0 {
			t.Errorf("b holds %d sessions, want none: its requests went to a", n)
		}
	})
	t.Run("/sse", func(t *testing.T) {
		ev, endpoint := a.c.openSSEWith(t, alice...)
		defer ev.close()
		if r := b.c.postSSE(t, endpoint, benchPrompt(5), bob...); r.status != http.StatusNotFound || errData(t, r.body).Code != mcp.CodeSessionNotFound {
			t.Fatalf("bob's POST through b: %d %s, want 404 SESSION_NOT_FOUND", r.status, r.body)
		}
		if r := b.c.postSSE(t, endpoint, benchPrompt(6), alice...); r.status != http.StatusAccepted {
			t.Fatalf("alice's POST through b: %d %s, want 202", r.status, r.body)
		}
		if m := ev.message(t); m["id"] != float64(6) || m["result"] == nil {
			t.Fatalf("answer on a's stream: %v, want alice's prompts/get (id 6): bob's never ran", m)
		}
		line := linesA.next(t)
		wantMember(t, line, "2025")
		if line["request_id"] != "6" {
			t.Errorf("the holder's line is request %v's, want alice's (6)", line["request_id"])
		}
	})
	// b ran none of the requests it forwarded: the first line it writes is
	// that of a request it serves itself.
	id := b.c.openMCP(t, bob...)
	if r := b.c.do(t, http.MethodPost, "/mcp", benchPrompt(7), append([]string{"Mcp-Session-Id", id}, bob...)...); r.status != http.StatusOK {
		t.Fatalf("bob's own session on b: %d %s", r.status, r.body)
	}
	if line := linesB.next(t); line["member"] != "bob" || line["request_id"] != "7" {
		t.Errorf("b's first audit line %v, want bob's request 7", line)
	}
}
