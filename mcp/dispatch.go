package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// This file is the dispatch stage: the one lifecycle every request goes
// through, whatever its era and its transport. A request reaches it
// decoded (decode.go) and checked: by its session, for the 2025 era
// (session.go: initialize, the method allowed before it), or by Prepare,
// for a 2026-07-28 request that came without one. start then
//
//  1. admits it: a slot of its session's in-flight allowance (the
//     back-pressure on a client that floods us), and the engine's count of
//     running requests, which Shutdown waits for;
//  2. gives it its context: cancelled with a cause (notifications/cancelled,
//     the session's end, the POST's client leaving) and, unless it answers
//     with a stream that lasts, the deadline of --request-timeout;
//  3. runs it, on the transport's goroutine when the transport waits for
//     the answer anyway (it gave the request a Route) and the method never
//     waits on the client, else on a goroutine of its own;
//  4. answers it: the encode stage (encode.go) writes the response and
//     hands it over, to the request's Route or its session's outbox.
//
// What only the 2025 era has stays in the session layer: the session is
// asked to keep the request in its in-flight table (track), so that
// notifications/cancelled finds it, and to let go of it (untrack).

// Prepare checks a modern request that came without a session: its _meta
// (revision, capabilities, log level) and its method. The error, a fault,
// is what to answer instead of running it: CodeUnsupportedVersion,
// CodeInvalidParams or CodeMethodNotFound; a transport answers it with
// ErrorResponse, and gives it the status ErrorObjectFor's code calls for.
func (e *Engine) Prepare(in *Inbound) (*Exchange, error) {
	if !in.IsRequest() {
		return nil, protocolError(CodeInvalidRequest, "only requests are prepared",
			"notifications and responses get no answer", "send a request with an id")
	}
	peer, level, err := peerOf(in)
	if err != nil {
		return nil, err
	}
	m, err := e.lookup(in.f.method, true)
	if err != nil {
		return nil, err
	}
	return &Exchange{e: e, req: modernRequest(in, peer, level, nil, nil), m: m}, nil
}

// Method returns the request's method.
func (x *Exchange) Method() string { return x.req.Method }

// Run starts the request's lifecycle (see start) with rt as its route: its
// notifications (dropped when Push reports false), then its response or
// KindUnanswered. The request is cancelled when ctx is, which is how a
// client closing its response stream cancels it. A request that never
// waits on its client has been answered when Run returns; any other runs
// on a goroutine of its own. Run may be called once.
func (x *Exchange) Run(ctx context.Context, rt Route) {
	x.req.route = rt
	x.e.start(ctx, x.req, x.m)
}

// modernRequest builds the Request of a modern message.
func modernRequest(in *Inbound, peer *Peer, level Level, s *Session, rt Route) Request {
	r := Request{Method: in.f.method, ID: in.f.id, Params: in.f.params, peer: peer, s: s, route: rt,
		modern: true, level: level, lease: in.lease}
	if m := in.meta; m != nil {
		r.progressToken = m.ProgressToken
		r.trace = traceContext{parent: m.TraceParent, state: m.TraceState}
	}
	return r
}

var errShuttingDown = protocolError(CodeInvalidRequest, "the server is shutting down",
	"it no longer accepts requests", "retry once it is back")

// lookup finds method in the table, for a request of the era modern says.
func (e *Engine) lookup(name string, modern bool) (method, error) {
	m, ok := e.methods[name]
	if ok && (modern && m.era == eraLegacy || !modern && m.era == eraModern) {
		ok = false
	}
	if !ok {
		how := "see the capabilities returned by initialize"
		if modern {
			how = "see the capabilities returned by " + MethodServerDiscover
		}
		why := "this server does not implement it"
		switch {
		case modern && name == MethodInitialize:
			why = "revision " + Version20260728 + " has no handshake: every request carries its revision and capabilities in params._meta"
			how = "leave out the _meta protocol version to initialize a session of an older revision"
		case modern && m.handle != nil:
			why = "revision " + Version20260728 + " removed it"
		case !modern && m.handle != nil:
			why = "it belongs to revision " + Version20260728 + " and later, and this session speaks an older one"
			how = fmt.Sprintf("send it with params._meta naming %s, without a session", Version20260728)
		}
		return method{}, protocolError(CodeMethodNotFound, fmt.Sprintf("unknown method %q", name), why, how)
	}
	return m, nil
}

// running is an admitted request, as notifications/cancelled finds it in
// its session's in-flight table.
type running struct {
	Request
	e      *Engine
	key    string // its id, as idKey gives it (2025-era sessions only)
	m      method
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // the deadline's
}

func nop() {}

// start is the lifecycle of one request of either era: admission, its
// context, its run and its answer. req.s is its session (nil for a modern
// request with none), req.route its route (nil: the session's outbox).
// parent is what else ends the request: a POST's context, whose end is
// its client leaving; a session's requests get context.Background, since
// the session ends them through its in-flight table instead (see Close),
// which spares every request a registration with the context all of them
// share.
func (e *Engine) start(parent context.Context, req Request, m method) {
	s := req.s
	// The request's bytes are its run's from here: whichever way it
	// ends, its lease is let go then (run's end, or the refusals below).
	req.lease.take()
	if s != nil {
		select {
		case s.slots <- struct{}{}:
		case <-s.done:
			req.lease.end()
			return
		}
	}
	if !e.admit() {
		handOver(s, req.route, errorReply(e, req.ID, errShuttingDown, req.modern), s != nil)
		req.lease.end()
		return
	}
	r := &running{Request: req, e: e, m: m, stop: nop}
	r.ctx, r.cancel = context.WithCancelCause(parent)
	if !m.long {
		r.ctx, r.stop = context.WithTimeout(r.ctx, e.opts.RequestTimeout)
	}
	if s != nil {
		if err := s.track(r); err != nil {
			// Let go of it unrun. A closed session's transport learns of
			// the end from Done; a duplicate id is answered.
			r.stop()
			r.cancel(ErrSessionClosed)
			e.running.Done()
			defer req.lease.end()
			if errors.Is(err, ErrSessionClosed) {
				<-s.slots
				return
			}
			handOver(s, req.route, errorReply(e, req.ID, err, req.modern), true)
			return
		}
	}
	if req.route != nil && m.quick {
		r.run()
		return
	}
	e.goRun(r.run)
}

// run handles the request and hands over its answer: the response, or,
// when its client cancelled it or went away, KindUnanswered to its route.
// A request of a session that has ended gets neither: its transport learns
// of the end from Done.
func (r *running) run() {
	e, s := r.e, r.s
	defer e.running.Done()
	defer r.lease.end()
	res, err := e.call(r.ctx, r.m, &r.Request)
	// Read before the context is ended below: only a client (or the
	// session's end) cancels it while the handler runs.
	unanswered := errors.Is(r.ctx.Err(), context.Canceled)
	r.stop()
	if s != nil {
		s.untrack(r)
	}
	r.cancel(errRequestDone)
	switch {
	case s != nil && s.state.Load() == stateClosed:
		<-s.slots
	case unanswered:
		if r.route != nil {
			r.route.Push(Outgoing{Kind: KindUnanswered})
		}
		if s != nil {
			<-s.slots
		}
	default:
		e.respond(&r.Request, res, err)
	}
}

// admit counts a request in, unless the engine is shutting down.
func (e *Engine) admit() bool {
	e.admitMu.RLock()
	defer e.admitMu.RUnlock()
	if e.closing {
		return false
	}
	e.running.Add(1)
	return true
}

// linger is how long a goroutine that ran a request waits for another
// before it exits: a busy engine keeps its goroutines, an idle one holds
// none.
const linger = 2 * time.Second

// goRun runs fn on a goroutine that is waiting for work, or on a new one.
func (e *Engine) goRun(fn func()) {
	select {
	case e.idle <- fn:
	default:
		go e.serve(fn)
	}
}

// serve runs fn, then whatever goRun hands it, until it has waited linger
// for nothing.
func (e *Engine) serve(fn func()) {
	fn()
	t := time.NewTimer(linger)
	defer t.Stop()
	for {
		select {
		case fn := <-e.idle:
			fn()
			t.Reset(linger)
		case <-t.C:
			return
		}
	}
}

// call runs the handler, turning a panic into an internal error so one bad
// request cannot take the server down.
func (e *Engine) call(ctx context.Context, m method, r *Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("handler panicked", "method", r.Method, "panic", p)
			err = protocolError(fault.Internal, "internal error while handling "+r.Method,
				"the handler failed unexpectedly", "retry; if it persists, report it with the server's log")
		}
	}()
	if e.opts.Observer != nil {
		return e.observe(ctx, m, r)
	}
	return m.handle(ctx, r)
}
