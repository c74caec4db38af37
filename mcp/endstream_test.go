package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// resumableRoute is a route whose transport says it can (or cannot)
// resume streams.
type resumableRoute struct{ ok bool }

func (r *resumableRoute) Resumable() bool { return r.ok }

// routeSink records every Outgoing with its route, in order, and signals
// each response.
type routeSink struct {
	mu   sync.Mutex
	got  []mcp.Outgoing
	resp chan struct{}
}

func (k *routeSink) Send(msgs []mcp.Outgoing) error {
	k.mu.Lock()
	k.got = append(k.got, msgs...)
	k.mu.Unlock()
	for _, m := range msgs {
		if m.Response {
			k.resp <- struct{}{}
		}
	}
	return nil
}

func (k *routeSink) Close() {}

// describe reduces what the sink saw to one comparable line per message.
func (k *routeSink) describe(t *testing.T) []string {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, m := range k.got {
		var d struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		switch {
		case m.EndStream:
			if m.Data != nil {
				t.Errorf("EndStream message carries data %s", m.Data)
			}
			out = append(out, "end-stream")
			continue
		case m.Data == nil:
			out = append(out, "nil")
			continue
		}
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatalf("bad message %s: %v", m.Data, err)
		}
		if d.Method != "" {
			out = append(out, d.Method)
		} else {
			out = append(out, "response "+string(d.ID))
		}
	}
	return out
}

func TestRequestEndStream(t *testing.T) {
	tests := []struct {
		name     string
		route    any
		reported bool
		want     []string
	}{
		{"resumable route gets the marker in order", &resumableRoute{ok: true}, true,
			[]string{"response \"i\"", "notifications/message", "end-stream", "notifications/message", "response 1"}},
		{"route that cannot resume now", &resumableRoute{ok: false}, false,
			[]string{"response \"i\"", "notifications/message", "notifications/message", "response 1"}},
		{"route without the interface", "plain", false,
			[]string{"response \"i\"", "notifications/message", "notifications/message", "response 1"}},
		{"nil route (stdio)", nil, false,
			[]string{"response \"i\"", "notifications/message", "notifications/message", "response 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reported bool
			srv := &mcp.Server{
				Info: mcp.Implementation{Name: "t", Version: "0"},
				Methods: map[string]mcp.Handler{
					"test/poll": func(_ context.Context, r *mcp.Request) (any, error) {
						r.Log(mcp.LevelWarning, "t", "before")
						reported = r.EndStream()
						r.Log(mcp.LevelWarning, "t", "after")
						return map[string]bool{"ok": true}, nil
					},
				},
			}
			e := mcp.NewEngine(srv, mcp.EngineOptions{})
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			k := &routeSink{resp: make(chan struct{}, 4)}
			s := e.NewSession(k)
			t.Cleanup(s.Close)
			wait := func() {
				t.Helper()
				select {
				case <-k.resp:
				case <-time.After(10 * time.Second):
					t.Fatal("no response within 10s")
				}
			}
			s.Deliver([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`), tc.route)
			wait()
			s.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
			s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"test/poll"}`), tc.route)
			wait()
			if reported != tc.reported {
				t.Errorf("EndStream() = %v, want %v", reported, tc.reported)
			}
			if diff := cmp.Diff(tc.want, k.describe(t)); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			for _, m := range k.got {
				if m.Route != tc.route {
					t.Errorf("message routed to %v, want %v", m.Route, tc.route)
				}
			}
		})
	}
}
