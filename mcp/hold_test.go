package mcp_test

import (
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
			settle(t, "control session expired", func() bool { return e.Session(control.ID()) == nil })
			if e.Session(held.ID()) == nil {
				t.Fatal("held session expired")
			}

			for i, done := range released {
				if !done {
					releases[i]()
				}
			}
			settle(t, "session expired once released", func() bool { return e.Session(held.ID()) == nil })
		})
	}
}

// settle polls cond until it holds, failing after mcptest.Wait.
func settle(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("%s: not within %s", what, mcptest.Wait)
	}
}

// eventually polls cond until it holds, and reports whether it did within
// mcptest.Wait. Unlike settle it may run on any goroutine.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(mcptest.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
