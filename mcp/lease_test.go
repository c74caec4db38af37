package mcp_test

import (
	"context"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestLeaseLastsAsLongAsTheRun: a message's lease (what its bytes hold of
// the transport's budget) is let go when the request it became has run,
// however its run ends, and by the transport's Release when it became no
// request; never twice.
func TestLeaseLastsAsLongAsTheRun(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		// runs: the message becomes a request that blocks until end lets
		// it go; Release right after delivery must not let go of it.
		runs bool
		end  func(s *mcp.Session, release chan struct{})
	}{
		{name: "a request, answered", frame: `{"jsonrpc":"2.0","id":7,"method":"test/block"}`, runs: true,
			end: func(_ *mcp.Session, release chan struct{}) { release <- struct{}{} }},
		{name: "a request, its session closed while it runs", frame: `{"jsonrpc":"2.0","id":7,"method":"test/block"}`, runs: true,
			end: func(s *mcp.Session, _ chan struct{}) { s.Close() }},
		{name: "a notification", frame: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		{name: "an unknown method", frame: `{"jsonrpc":"2.0","id":7,"method":"no/such"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, h := testServer(t, mcp.EngineOptions{})
			s := newSession(t, e, &keepingSink{})
			s.Deliver([]byte(initFrame), nil)
			s.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)

			released := make(chan struct{}, 2)
			lease := mcp.NewLease(func() { released <- struct{}{} })
			in, err := mcp.ParseInbound([]byte(tc.frame))
			if err != nil {
				t.Fatal(err)
			}
			in.Keep(lease)
			s.DeliverInbound(context.Background(), in, nil)
			if tc.runs {
				<-h.started
			}
			lease.Release() // what the transport does once the message is delivered
			if tc.runs {
				select {
				case <-released:
					t.Fatal("the lease was let go while its request runs")
				default:
				}
				tc.end(s, h.release)
			}
			<-released
			lease.Release()
			select {
			case <-released:
				t.Fatal("the lease was let go twice")
			default:
			}
		})
	}
}
