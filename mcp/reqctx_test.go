package mcp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRequestContext: the lazy context behaves as context.WithTimeout
// would, whether or not Done was called before it ended.
func TestRequestContext(t *testing.T) {
	type step func(t *testing.T, parentCancel context.CancelFunc, c *requestContext)
	armed := func(t *testing.T, _ context.CancelFunc, c *requestContext) { c.Done() }
	tests := []struct {
		name    string
		timeout time.Duration
		before  step // before the context ends (nil: nothing)
		end     step
		want    error
	}{
		{name: "cancelled, never armed", timeout: time.Hour,
			end: func(_ *testing.T, _ context.CancelFunc, c *requestContext) { c.cancel() }, want: context.Canceled},
		{name: "cancelled, armed", timeout: time.Hour, before: armed,
			end: func(_ *testing.T, _ context.CancelFunc, c *requestContext) { c.cancel() }, want: context.Canceled},
		{name: "session ends, never armed", timeout: time.Hour,
			end: func(_ *testing.T, pc context.CancelFunc, _ *requestContext) { pc() }, want: context.Canceled},
		{name: "session ends, armed", timeout: time.Hour, before: armed,
			end: func(_ *testing.T, pc context.CancelFunc, _ *requestContext) { pc() }, want: context.Canceled},
		{name: "deadline, never armed", timeout: time.Millisecond,
			end: func(*testing.T, context.CancelFunc, *requestContext) { time.Sleep(5 * time.Millisecond) }, want: context.DeadlineExceeded},
		{name: "deadline, armed", timeout: 20 * time.Millisecond, before: armed,
			end: func(t *testing.T, _ context.CancelFunc, c *requestContext) {
				select {
				case <-c.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("Done did not close at the deadline")
				}
			}, want: context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent, pc := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
			defer pc()
			c := newRequestContext(parent, tc.timeout)
			if c.Err() != nil {
				t.Fatalf("Err before the end = %v", c.Err())
			}
			if got := c.Value(ctxKey{}); got != "v" {
				t.Errorf("Value = %v, want the parent's", got)
			}
			if tc.before != nil {
				tc.before(t, pc, c)
			}
			child, cancelChild := context.WithCancel(c)
			defer cancelChild()
			tc.end(t, pc, c)
			if err := c.Err(); !errors.Is(err, tc.want) {
				t.Fatalf("Err = %v, want %v", err, tc.want)
			}
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done is not closed after Err reported the end")
			}
			select {
			case <-child.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("a context derived from the request's did not end with it")
			}
			// The first end is final.
			c.cancel()
			pc()
			if err := c.Err(); !errors.Is(err, tc.want) {
				t.Errorf("Err after more ends = %v, want still %v", err, tc.want)
			}
		})
	}
}

type ctxKey struct{}

func TestRequestContextDeadline(t *testing.T) {
	early := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), early)
	defer cancel()
	tests := []struct {
		name    string
		parent  context.Context
		timeout time.Duration
		want    func(time.Time) bool
	}{
		{"own deadline", context.Background(), time.Hour, func(d time.Time) bool {
			return d.After(time.Now().Add(59*time.Minute)) && d.Before(time.Now().Add(61*time.Minute))
		}},
		{"parent's earlier deadline", parent, time.Hour, func(d time.Time) bool { return d.Equal(early) }},
	}
	for _, tc := range tests {
		d, ok := newRequestContext(tc.parent, tc.timeout).Deadline()
		if !ok || !tc.want(d) {
			t.Errorf("%s: Deadline = %v, %v", tc.name, d, ok)
		}
	}
}

// TestRequestContextReleases: ending an armed context stops its timer and
// its registration with the session, so nothing fires or lingers later.
func TestRequestContextReleases(t *testing.T) {
	parent, pc := context.WithCancel(context.Background())
	defer pc()
	// An hour: the timer is armed through the whole test unless end stops it.
	c := newRequestContext(parent, time.Hour)
	c.Done()
	c.mu.Lock()
	stop, timer := c.stopParent, c.timer
	c.mu.Unlock()
	if stop == nil || timer == nil {
		t.Fatal("Done armed no timer or no session registration")
	}
	c.cancel()
	// Each reports true only if it was still armed, which means end left it.
	if timer.Stop() {
		t.Error("the deadline timer is still armed after the end")
	}
	if stop() {
		t.Error("the context is still registered with the session's after the end")
	}
	c.mu.Lock()
	kept := c.stopParent != nil || c.timer != nil
	c.mu.Unlock()
	if kept {
		t.Error("the timer and the session registration are kept after the end")
	}
}

func BenchmarkRequestContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := newRequestContext(parent, time.Minute)
			_ = c.Err()
			c.cancel()
		}
	})
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, cancel := context.WithTimeout(parent, time.Minute)
			_ = c.Err()
			cancel()
		}
	})
}
