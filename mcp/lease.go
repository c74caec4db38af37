package mcp

import "sync/atomic"

// A Lease is the share of a budget that a message's bytes take while the
// server keeps them: an HTTP transport takes it before reading the body
// (a request's bytes stay with it, as its params, until its run ends) and
// hands it over with the message (Inbound.Keep). The dispatch stage takes
// it from there when the message becomes a running request, and lets it
// go when the run ends; a message that becomes no request (a
// notification, a response, initialize, a refusal) is let go by its
// transport, whose Release after delivery does nothing once a run has it.
type Lease struct {
	release func()
	state   atomic.Int32 // leaseFree, leaseRunning or leaseDone
}

const (
	leaseFree    = iota // the transport's: Release lets go
	leaseRunning        // a request's run has it: its end lets go
	leaseDone           // let go
)

// NewLease returns a lease that calls release once, when it is let go.
func NewLease(release func()) *Lease { return &Lease{release: release} }

// Release lets go of l unless a request's run has taken it, which lets go
// when it ends. A nil Hold is none.
func (l *Lease) Release() {
	if l != nil && l.state.CompareAndSwap(leaseFree, leaseDone) {
		l.release()
	}
}

// take hands l to a request's run.
func (l *Lease) take() {
	if l != nil {
		l.state.CompareAndSwap(leaseFree, leaseRunning)
	}
}

// end lets go of a lease a run took.
func (l *Lease) end() {
	if l != nil && l.state.CompareAndSwap(leaseRunning, leaseDone) {
		l.release()
	}
}

// Keep hands l over with the message: the request it becomes keeps it
// until its run ends (see Lease).
func (in *Inbound) Keep(l *Lease) { in.lease = l }
