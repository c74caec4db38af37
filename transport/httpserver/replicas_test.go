package httpserver_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/cluster"
	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/nats-io/nats.go"
)

// clusterKeys are the state keys the replicas of the tests share: the
// cluster signs its messages with keys derived from them.
var clusterKeys = [][]byte{bytes.Repeat([]byte{0x5a}, 32)}

// replica is one flowyprompt process of a cluster: its own engine, NATS
// node, session router and HTTP server.
type replica struct {
	e    *mcp.Engine
	node *cluster.Node
	srv  *httpserver.Server
	c    *client
}

func newReplica(t testing.TB, natsURL, id string) *replica {
	t.Helper()
	return newReplicaWith(t, natsURL, id, mcp.EngineOptions{}, httpserver.Options{})
}

// newReplicaWith is newReplica with the engine's and the server's options
// (Sessions is the replica's own router).
func newReplicaWith(t testing.TB, natsURL, id string, eopts mcp.EngineOptions, opts httpserver.Options) *replica {
	t.Helper()
	e, _, _ := newEngine(t, nil, eopts)
	node, err := cluster.Join(cluster.Options{URL: natsURL, Replica: id, Logger: quiet, Keys: clusterKeys})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the server shuts down, then the router,
	// then the node.
	t.Cleanup(node.Close)
	router, err := cluster.NewRouter(node, cluster.RouterOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(router.Close)
	opts.Sessions = router
	srv, c := start(t, e, opts)
	return &replica{e: e, node: node, srv: srv, c: c}
}

// TestSessionsAcrossReplicas: behind a round-robin balancer, a session's
// requests reach whichever replica, and are answered as the one holding
// it would.
func TestSessionsAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	a := newReplica(t, ns.URL(), "a")
	b := newReplica(t, ns.URL(), "b")

	id := a.c.openMCP(t)
	session := []string{"Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-11-25"}

	t.Run("POST on the other replica", func(t *testing.T) {
		tests := []struct {
			name, body string
			want       []string
		}{
			{name: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: []string{`"id":1`, `"tools":[`}},
			{name: "prompts/get", body: benchPrompt(2), want: []string{`"id":2`, `"messages":[`, "func add"}},
			{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
			{name: "unknown method", body: `{"jsonrpc":"2.0","id":3,"method":"no/such"}`, want: []string{`"id":3`, `"error"`}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := b.c.do(t, http.MethodPost, "/mcp", tc.body, session...)
				wantStatus := http.StatusOK
				if tc.want == nil {
					wantStatus = http.StatusAccepted
				}
				if r.status != wantStatus {
					t.Fatalf("status %d, want %d: %s", r.status, wantStatus, r.body)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.body, w) {
						t.Errorf("answer %s lacks %s", r.body, w)
					}
				}
				if tc.want != nil && r.header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type %q, want application/json", r.header.Get("Content-Type"))
				}
			})
		}
		if n := b.e.SessionCount(); n != 0 {
			t.Errorf("b holds %d sessions, want none: its requests went to a", n)
		}
	})

	t.Run("GET stream through the other replica", func(t *testing.T) {
		ev := b.c.stream(t, "/mcp", session...)
		defer ev.close()
		a.e.Notify(mcp.NotificationPromptsListChanged, nil)
		if m := ev.message(t); m["method"] != mcp.NotificationPromptsListChanged {
			t.Fatalf("got %v, want %s", m, mcp.NotificationPromptsListChanged)
		}
		a.e.Notify(mcp.NotificationToolsListChanged, nil)
		if m := ev.message(t); m["method"] != mcp.NotificationToolsListChanged {
			t.Fatalf("got %v, want %s", m, mcp.NotificationToolsListChanged)
		}
	})

	t.Run("legacy SSE: posted to the other replica, answered on the stream", func(t *testing.T) {
		ev, endpoint := a.c.openSSE(t, "")
		defer ev.close()
		viaB := strings.Replace(endpoint, a.c.base, b.c.base, 1)
		if viaB == endpoint {
			t.Fatalf("endpoint %s does not name a at %s", endpoint, a.c.base)
		}
		if got := b.c.post(t, viaB, `{"jsonrpc":"2.0","id":"list","method":"prompts/list"}`); got != http.StatusAccepted {
			t.Fatalf("POST through b: %d, want 202", got)
		}
		if m := ev.message(t); m["id"] != "list" || m["result"] == nil {
			t.Fatalf("answer on a's stream: %v", m)
		}
		if got := b.c.post(t, strings.Replace(viaB, "session_id=", "session_id=0", 1), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); got != http.StatusNotFound {
			t.Errorf("POST for an unknown session through b: %d, want 404", got)
		}
	})

	t.Run("DELETE through the other replica", func(t *testing.T) {
		other := a.c.openMCP(t)
		if r := b.c.do(t, http.MethodDelete, "/mcp", "", "Mcp-Session-Id", other); r.status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", r.status, r.body)
		}
		for _, c := range []*client{a.c, b.c} {
			r := c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", other)
			if r.status != http.StatusNotFound || errData(t, r.body).Code != mcp.CodeSessionNotFound {
				t.Errorf("after DELETE, %s answered %d %s, want 404", c.base, r.status, r.body)
			}
		}
	})

	t.Run("the holder's replica gone", func(t *testing.T) {
		ev, endpoint := a.c.openSSE(t, "")
		defer ev.close()
		viaB := strings.Replace(endpoint, a.c.base, b.c.base, 1)
		a.node.Close()
		// Each 404 is timed on its own: one that waited for a holder to
		// take the message would take the forwarder's accept timeout (5 s)
		// by itself, which a loaded machine must not reach for two.
		promptly := func(what string, began time.Time) {
			if d := time.Since(began); d >= 5*time.Second {
				t.Errorf("%s: the 404 took %s, want it without waiting for a holder", what, d)
			}
		}
		began := time.Now()
		r := b.c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, session...)
		if r.status != http.StatusNotFound || errData(t, r.body).Code != mcp.CodeSessionNotFound {
			t.Errorf("/mcp: %d %s, want 404", r.status, r.body)
		}
		promptly("/mcp", began)
		began = time.Now()
		if got := b.c.post(t, viaB, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); got != http.StatusNotFound {
			t.Errorf("/sse/message: %d, want 404", got)
		}
		promptly("/sse/message", began)
	})
}

// TestForwardingWhileDisconnected: a replica cut from NATS answers 404 at
// once for sessions it does not hold, saying why, and still serves its own.
func TestForwardingWhileDisconnected(t *testing.T) {
	ns := natstest.Start(t)
	a := newReplica(t, ns.URL(), "a")
	// The link going down is the event to wait for: the NATS client tells
	// it under the lock its IsConnected, which the router asks, takes.
	nc := a.node.Conn()
	down := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	defer nc.RemoveStatusListener(down)
	ns.Stop()
	select {
	case <-down:
	case <-time.After(wait):
		t.Fatal("the NATS link did not go down")
	}
	id := a.c.openMCP(t)
	if r := a.c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", id); r.status != http.StatusOK {
		t.Errorf("its own session: %d %s, want 200", r.status, r.body)
	}
	r := a.c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", strings.Repeat("ab", 16))
	if d := errData(t, r.body); r.status != http.StatusNotFound || d.Code != mcp.CodeSessionNotFound || !strings.Contains(d.Why, "cannot be reached") {
		t.Errorf("another session: %d %s, want 404 saying its replica cannot be reached", r.status, r.body)
	}
}

// benchReplicas opens a session on a and returns it with the client to
// send its requests through.
func benchReplicas(b *testing.B) (a, other *replica, id string) {
	ns := natstest.Start(b)
	a = newReplica(b, ns.URL(), "a")
	other = newReplica(b, ns.URL(), "b")
	return a, other, a.c.openMCP(b)
}

func benchSession(b *testing.B, via *client, id string) {
	b.Helper()
	session := []string{"Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-11-25"}
	b.ResetTimer()
	start := time.Now()
	var n int64
	for b.Loop() {
		n++
		if r := via.do(b, http.MethodPost, "/mcp", benchPrompt(n), session...); r.status != http.StatusOK {
			b.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "µs/req")
}

// BenchmarkLocal: prompts/get sent to the replica holding the session.
func BenchmarkLocal(b *testing.B) {
	a, _, id := benchReplicas(b)
	benchSession(b, a.c, id)
}

// BenchmarkForwarded: the same request sent to another replica, which
// forwards it through NATS.
func BenchmarkForwarded(b *testing.B) {
	_, other, id := benchReplicas(b)
	benchSession(b, other.c, id)
}

// TestShutdownEndsForwardedStreams: a replica shutting down does not wait
// out its grace period for the GET streams it relays from another replica,
// whose sessions live on.
func TestShutdownEndsForwardedStreams(t *testing.T) {
	ns := natstest.Start(t)
	a := newReplica(t, ns.URL(), "a")
	b := newReplica(t, ns.URL(), "b")
	id := a.c.openMCP(t)
	ev := b.c.stream(t, "/mcp", "Mcp-Session-Id", id)
	defer ev.close()
	// Bounded by wait, a guard: a relayed stream left open would hold the
	// shutdown until the context ends, however long it is.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		t.Fatalf("b's shutdown: %v; want its relayed stream ended promptly", err)
	}
	if err := closedWithin(ev.done); err != nil {
		t.Fatalf("the relayed stream: %v", err)
	}
	if r := a.c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", id); r.status != http.StatusOK {
		t.Errorf("the session on a after b's shutdown: %d %s, want 200", r.status, r.body)
	}
}
