// Package transporttest holds what the HTTP transports' tests share: the
// embedded example library they serve, and bounded waits for state that
// settles asynchronously (a session going away, goroutines ending).
//
// Every wait takes its bound from the caller, because the bound is a guard
// against hangs that each package sizes for its own heaviest test, not a
// speed assertion.
package transporttest

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/templates"
)

// Quiet discards logs: the tests check behaviour, and a failing test
// prints what it needs itself.
var Quiet = slog.New(slog.DiscardHandler)

// Library returns the embedded example library, loaded.
func Library(t testing.TB) *templates.Library {
	t.Helper()
	lib := templates.NewLibrary(templates.Embedded(), Quiet)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return lib
}

// Settle waits until cond holds, polling, and fails the test when it does
// not within bound.
func Settle(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// GoroutinesBackTo waits for the goroutine count to come back to base plus
// slack (for the runtime's and the HTTP client's own), and fails the test
// with every goroutine's stack when it does not within bound: the stacks
// name the leak.
func GoroutinesBackTo(t testing.TB, bound time.Duration, base, slack int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		n := runtime.NumGoroutine()
		if n <= base+slack {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, base+slack, bytes.TrimSpace(buf))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Receive returns the next value from ch, failing the test when ch is
// closed or nothing arrives within bound; what names the awaited value.
func Receive[T any](t testing.TB, ch <-chan T, bound time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("no %s within %s", what, bound)
	}
	var zero T
	return zero
}
