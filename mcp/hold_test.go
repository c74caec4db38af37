package mcp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestHoldKeepsSessionFromIdleExpiry: a held session outlives idle expiry
// for as long as any hold is left, and expires like any other once the
// last one is released.
//
// No test waits a fixed time: a control session opened after the held
// one was last active is expired by the same janitor pass that would have
// taken the held one, so the control's expiry proves that the janitor
// has passed over the held session.
func TestHoldKeepsSessionFromIdleExpiry(t *testing.T) {
	tests := []struct {
		name  string
		holds int
		early []int // releases (by hold) called before the control expires; the rest follow
	}{
		{name: "one hold", holds: 1},
		{name: "nested holds: releasing one keeps the other", holds: 2, early: []int{0}},
		{name: "calling a release twice counts once", holds: 2, early: []int{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testServer(t, mcp.EngineOptions{IdleTimeout: 40 * time.Millisecond})
			held := newSession(t, e, &keepingSink{})
			releases := make([]func(), tc.holds)
			for i := range releases {
				releases[i] = held.Hold()
			}
			released := make([]bool, tc.holds)
			for _, i := range tc.early {
				releases[i]()
				released[i] = true
			}

			control := newSession(t, e, &keepingSink{})
			ended(t, "control session expired", control)
			if e.Session(held.ID()) == nil {
				t.Fatal("held session expired")
			}

			for i, done := range released {
				if !done {
					releases[i]()
				}
			}
			ended(t, "session expired once released", held)
		})
	}
}

// ended waits for s to end, failing after mcptest.Wait.
func ended(t *testing.T, what string, s *mcp.Session) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(mcptest.Wait):
		t.Fatalf("%s: not within %s", what, mcptest.Wait)
	}
}

// settle waits until cond holds, checking it again each time changed
// fires (a sink or a route took a message), failing after mcptest.Wait.
func settle(t *testing.T, what string, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	timeout := time.After(mcptest.Wait)
	for !cond() {
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%s: not within %s", what, mcptest.Wait)
		}
	}
}

// changes is what settle waits on: a channel that fires after each change
// noted since it was made (at most one pending).
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// watch returns the channel, made on first use.
func (c *changes) watch() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{}, 1)
	}
	return c.ch
}

// note fires the channel, if anyone watches.
func (c *changes) note() {
	c.mu.Lock()
	ch := c.ch
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// TestIdle: a session is idle while nothing holds it: not while a request
// is in flight, nor while a stream holds it; and its last use moves with
// each request.
func TestIdle(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	s := newSession(t, e, &keepingSink{})
	s.Deliver([]byte(initFrame), nil)
	opened, idle := s.Idle()
	if !idle {
		t.Fatal("a session nobody uses is not idle")
	}
	rt := &testRoute{}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`), rt)
	<-h.started
	if used, idle := s.Idle(); idle || used.Before(opened) {
		t.Fatalf("with a request in flight: idle %v, last used %v (opened %v)", idle, used, opened)
	}
	h.release <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Wait)
	defer cancel()
	if err := s.Drain(ctx); err != nil { // the request answered and handed over
		t.Fatal(err)
	}
	if _, idle := s.Idle(); !idle {
		t.Fatal("answered, the session is not idle")
	}
	release := s.Hold()
	if _, idle := s.Idle(); idle {
		t.Fatal("held by a stream, the session is idle")
	}
	release()
	if _, idle := s.Idle(); !idle {
		t.Fatal("released, the session is not idle")
	}
}
