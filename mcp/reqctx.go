package mcp

import (
	"context"
	"sync"
	"time"
)

// requestContext is the context a request's handler runs under. It ends
// when the client cancels the request (notifications/cancelled), when the
// session ends, when the deadline passes, or when the request is over.
//
// context.WithTimeout would do the same, but it starts a timer and
// registers with the session's context, under that context's lock, for
// every request, and removes both again a few microseconds later: about a
// twentieth of the CPU time of a prompts/get, and a lock every request of
// a session contends on. Most handlers never wait on Done, so this context
// arms the timer and the registration only when Done is first called; Err
// checks the session and the clock itself until then.
type requestContext struct {
	parent   context.Context
	deadline time.Time

	mu         sync.Mutex
	done       chan struct{} // made by the first Done
	err        error
	stopParent func() bool
	timer      *time.Timer
}

// newRequestContext returns a context under parent that ends after
// timeout at the latest.
func newRequestContext(parent context.Context, timeout time.Duration) *requestContext {
	d := time.Now().Add(timeout)
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return &requestContext{parent: parent, deadline: d}
}

func (c *requestContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *requestContext) Value(key any) any { return c.parent.Value(key) }

func (c *requestContext) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// Not armed (or armed and not fired yet): look for ourselves, and make
	// what we find final so that Err never goes back to nil.
	if perr := c.parent.Err(); perr != nil {
		return c.end(perr)
	}
	if !time.Now().Before(c.deadline) {
		return c.end(context.DeadlineExceeded)
	}
	return nil
}

func (c *requestContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return c.done
	}
	// Both callbacks take c.mu, which is held here; they run on their own
	// goroutines, so they wait for it.
	c.stopParent = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	return c.done
}

// cancel ends the context with context.Canceled (the client cancelled, or
// the request is over and its resources go).
func (c *requestContext) cancel() { c.end(context.Canceled) }

// end records err unless the context already ended, and returns the
// error the context ended with.
func (c *requestContext) end(err error) error {
	c.mu.Lock()
	if c.err != nil {
		err = c.err
		c.mu.Unlock()
		return err
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	stop, t := c.stopParent, c.timer
	c.stopParent, c.timer = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	if t != nil {
		t.Stop()
	}
	return err
}

func (c *requestContext) String() string { return "mcp.requestContext" }
