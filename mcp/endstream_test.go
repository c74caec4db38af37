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

// recorder is a session's Sink and a request's Route at once: it records
// every message it is handed, saying which way it came, in order, and
// signals each response.
type recorder struct {
	resumable bool

	mu   sync.Mutex
	got  []string
	resp chan struct{}
}

func (k *recorder) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		k.record("sink", m)
	}
	return nil
}

func (k *recorder) Close() {}

func (k *recorder) Push(m mcp.Outgoing) bool {
	k.record("route", m)
	return true
}

func (k *recorder) Resumable() bool { return k.resumable }

func (k *recorder) record(way string, m mcp.Outgoing) {
	line := way + " " + describe(m)
	k.mu.Lock()
	k.got = append(k.got, line)
	k.mu.Unlock()
	if m.Kind == mcp.KindResponse {
		k.resp <- struct{}{}
	}
}

// describe reduces a message to one comparable word or two.
func describe(m mcp.Outgoing) string {
	switch m.Kind {
	case mcp.KindEndStream:
		if m.Data != nil {
			return "end-stream with data"
		}
		return "end-stream"
	case mcp.KindUnanswered:
		return "unanswered"
	}
	var d struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(m.Data, &d); err != nil {
		return "invalid JSON"
	}
	if d.Method != "" {
		return d.Method
	}
	return "response " + string(d.ID)
}

func (k *recorder) lines() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.got...)
}

func TestRequestEndStream(t *testing.T) {
	tests := []struct {
		name      string
		route     bool // the request has a route of its own
		resumable bool
		reported  bool
		want      []string
	}{
		{"resumable route gets the marker in order", true, true, true,
			[]string{"route response \"i\"", "route notifications/message", "route end-stream", "route notifications/message", "route response 1"}},
		{"route that cannot resume", true, false, false,
			[]string{"route response \"i\"", "route notifications/message", "route notifications/message", "route response 1"}},
		{"no route (stdio)", false, false, false,
			[]string{"sink response \"i\"", "sink notifications/message", "sink notifications/message", "sink response 1"}},
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
			k := &recorder{resumable: tc.resumable, resp: make(chan struct{}, 4)}
			s, err := e.NewSession(context.Background(), k, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			var d mcp.Route
			if tc.route {
				d = k
			}
			wait := func() {
				t.Helper()
				select {
				case <-k.resp:
				case <-time.After(10 * time.Second):
					t.Fatal("no response within 10s")
				}
			}
			s.Deliver([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`), d)
			wait()
			s.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
			s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"test/poll"}`), d)
			wait()
			if reported != tc.reported {
				t.Errorf("EndStream() = %v, want %v", reported, tc.reported)
			}
			if diff := cmp.Diff(tc.want, k.lines()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}
