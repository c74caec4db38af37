package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

type ctxKey struct{}

// obsRecorder is an Observer that keeps what it is told.
type obsRecorder struct {
	name     string
	order    *[]string
	mu       sync.Mutex
	seen     []observed
	sessions []mcp.SessionInfo
}

type observed struct {
	info    mcp.RequestInfo
	outcome mcp.Outcome
}

func (r *obsRecorder) StartRequest(ctx context.Context, info *mcp.RequestInfo) (context.Context, func(mcp.Outcome)) {
	r.mu.Lock()
	*r.order = append(*r.order, "start "+r.name)
	r.mu.Unlock()
	ctx = context.WithValue(ctx, ctxKey{}, r.name)
	return ctx, func(o mcp.Outcome) {
		r.mu.Lock()
		defer r.mu.Unlock()
		*r.order = append(*r.order, "end "+r.name)
		r.seen = append(r.seen, observed{info: *info, outcome: o})
	}
}

func (r *obsRecorder) SessionEnded(si mcp.SessionInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions = append(r.sessions, si)
}

func (r *obsRecorder) get() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observed(nil), r.seen...)
}

// TestObserver: the engine's hook sees every request of both eras with
// its target, id, revision, client and trace context, and how it ended;
// a panic still ends the request; observers joined run in order and end in reverse; an
// initialized session's end is reported once.
func TestObserver(t *testing.T) {
	var order []string
	a, b := &obsRecorder{name: "a", order: &order}, &obsRecorder{name: "b", order: &order}
	e, _ := testServer(t, mcp.EngineOptions{Observer: mcp.JoinObservers(a, nil, b)})
	c := mcptest.Connect(t, e)
	c.Initialize(t, "2025-06-18")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c.Request(t, 1, "prompts/get", json.RawMessage(`{"name":"hello","arguments":{"who":"secret-value"}}`))
	c.Request(t, "two", "prompts/get", json.RawMessage(`{"name":"nope","_meta":{"traceparent":"`+tp+`","tracestate":"k=v"}}`))
	c.Request(t, 3, "test/panic", nil)
	c.Request(t, 4, "prompts/get", json.RawMessage(`{"name":"hello",`+meta(`"traceparent":"`+tp+`"`)+`}`))

	got := b.get()
	if len(got) != 4 {
		t.Fatalf("observed %d requests, want 4: %+v", len(got), got)
	}
	sid := c.S.ID()
	want := []struct {
		info mcp.RequestInfo
		code int64
	}{
		{mcp.RequestInfo{Method: "prompts/get", Target: "hello", ID: "1", ProtocolVersion: "2025-06-18",
			Client: mcp.Implementation{Name: "mcptest", Version: "1"}, SessionID: sid}, 0},
		{mcp.RequestInfo{Method: "prompts/get", Target: "nope", ID: "two", ProtocolVersion: "2025-06-18",
			Client: mcp.Implementation{Name: "mcptest", Version: "1"}, SessionID: sid, TraceParent: tp, TraceState: "k=v"}, -32602},
		{mcp.RequestInfo{Method: "test/panic", ID: "3", ProtocolVersion: "2025-06-18",
			Client: mcp.Implementation{Name: "mcptest", Version: "1"}, SessionID: sid}, -32603},
		{mcp.RequestInfo{Method: "prompts/get", Target: "hello", ID: "4", ProtocolVersion: "2026-07-28",
			Client: mcp.Implementation{Name: "c", Version: "1"}, Modern: true, TraceParent: tp}, 0},
	}
	for i, w := range want {
		g := got[i]
		g.info.Client.Title = ""
		if diff := cmp.Diff(w.info, g.info); diff != "" {
			t.Errorf("request %d info (-want +got):\n%s", i, diff)
		}
		if g.outcome.Code != w.code || (w.code != 0) != (g.outcome.Err != nil) {
			t.Errorf("request %d outcome %+v, want code %d", i, g.outcome, w.code)
		}
	}
	if order[0] != "start a" || order[1] != "start b" || order[2] != "end b" || order[3] != "end a" {
		t.Errorf("order %v: want a started first and ended last", order[:4])
	}
	c.S.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) != 1 || a.sessions[0].ID != sid || a.sessions[0].ProtocolVersion != "2025-06-18" || a.sessions[0].Duration <= 0 {
		t.Errorf("sessions ended: %+v", a.sessions)
	}
}
