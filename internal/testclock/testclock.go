// Package testclock is a clock that tests move by hand, for code that takes
// its time from a func() time.Time (a cache's TTL, a source's next
// revalidation). It is safe for concurrent use.
package testclock

import (
	"sync"
	"time"
)

// Clock stands still until Add moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
