package transporttest

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the failure and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func run(t *testing.T, f func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failure
}

func TestSettle(t *testing.T) {
	tests := []struct {
		name    string
		after   int32 // cond holds from this call on; -1 never
		bound   time.Duration
		wantErr string
	}{
		{"already true", 1, time.Minute, ""},
		{"true later", 5, time.Minute, ""},
		{"never true", -1, 20 * time.Millisecond, "sessions gone: not within 20ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			cond := func() bool {
				n := calls.Add(1)
				return tc.after >= 0 && n >= tc.after
			}
			got := run(t, func(tb testing.TB) { Settle(tb, tc.bound, "sessions gone", cond) })
			if got != tc.wantErr {
				t.Fatalf("failure %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func TestGoroutinesBackTo(t *testing.T) {
	// Slack 1: run's own goroutine is alive while it counts. Ten leaks, not
	// one: goroutines of earlier tests may still be exiting when base is
	// counted, and one leak could hide behind them.
	base := runtime.NumGoroutine()
	stop := make(chan struct{})
	for range 10 {
		go func() { <-stop }() // the leak
	}
	got := run(t, func(tb testing.TB) { GoroutinesBackTo(tb, 20*time.Millisecond, base, 1) })
	// The stacks name the leaking function.
	if !strings.Contains(got, "goroutines, want at most") || !strings.Contains(got, "TestGoroutinesBackTo.func") {
		t.Fatalf("failure does not show the leak:\n%.2000s", got)
	}
	close(stop)
	if got := run(t, func(tb testing.TB) { GoroutinesBackTo(tb, time.Minute, base, 1) }); got != "" {
		t.Fatalf("after the leak ended: %.2000s", got)
	}
}

func TestLibrary(t *testing.T) {
	lib := Library(t)
	if _, ok := lib.Catalog().Lookup("Code_Review"); !ok {
		t.Fatal("Code_Review is not in the embedded library")
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Receive(t, ch, time.Second, "number"); got != 7 {
		t.Fatalf("got %d", got)
	}
	if msg := run(t, func(tb testing.TB) { Receive(tb, ch, 10*time.Millisecond, "number") }); !strings.Contains(msg, "no number within") {
		t.Errorf("timeout: %q", msg)
	}
	close(ch)
	if msg := run(t, func(tb testing.TB) { Receive(tb, ch, time.Second, "number") }); !strings.Contains(msg, "stream ended") {
		t.Errorf("closed: %q", msg)
	}
}
