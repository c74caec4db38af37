package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// EngineOptions tune the engine; zero values take the defaults.
type EngineOptions struct {
	QueueSize             int           // input queue capacity (default 4096)
	MinWorkers            int           // workers kept alive (default 2×GOMAXPROCS)
	MaxWorkers            int           // workers at most (default 1024)
	MaxMessageSize        int           // bytes per inbound message (default 4 MiB)
	MaxInflightPerSession int           // requests a session may have in flight (default 256)
	RequestTimeout        time.Duration // per-request deadline (default 5 min)
	CallTimeout           time.Duration // wait for a client's answer to our request (default 10 min; never past the asking request's deadline)
	IdleTimeout           time.Duration // close sessions idle this long; 0 never (HTTP sets it)
	Logger                *slog.Logger
}

func (o *EngineOptions) fill() {
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.MinWorkers <= 0 {
		o.MinWorkers = 2 * runtime.GOMAXPROCS(0)
	}
	if o.MaxWorkers <= 0 {
		o.MaxWorkers = 1024
	}
	if o.MaxWorkers < o.MinWorkers {
		o.MaxWorkers = o.MinWorkers
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.MaxInflightPerSession <= 0 {
		o.MaxInflightPerSession = 256
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

type job struct {
	s   *Session
	m   method
	fl  *inflight // its context is the handler's
	key string
	req Request
}

// Engine runs requests from every session of every transport: one bounded
// input queue, a worker pool that grows under bursts and shrinks when idle,
// and the registry of live sessions.
type Engine struct {
	srv     *Server
	opts    EngineOptions
	methods map[string]method
	caps    ServerCapabilities
	log     *slog.Logger

	queue    chan *job
	stop     chan struct{}
	stopOnce sync.Once
	handoff  chan *job // unbuffered: only an idle worker can take a job
	workers  atomic.Int32
	wg       sync.WaitGroup
	closing  atomic.Bool

	mu       sync.RWMutex
	sessions map[string]*Session
}

// NewEngine starts an engine serving srv.
func NewEngine(srv *Server, opts EngineOptions) *Engine {
	opts.fill()
	e := &Engine{
		srv:      srv,
		opts:     opts,
		methods:  srv.methodTable(),
		caps:     srv.capabilities(),
		log:      opts.Logger,
		queue:    make(chan *job, opts.QueueSize),
		handoff:  make(chan *job),
		stop:     make(chan struct{}),
		sessions: make(map[string]*Session),
	}
	for i := 0; i < opts.MinWorkers; i++ {
		e.spawn()
	}
	if opts.IdleTimeout > 0 {
		go e.janitor()
	}
	return e
}

// Options returns the engine's effective options.
func (e *Engine) Options() EngineOptions { return e.opts }

// NewSession registers a session whose messages leave through sink.
func (e *Engine) NewSession(sink Sink) *Session { return e.TryNewSession(sink, 0) }

// TryNewSession is NewSession under a cap: it registers the session only
// while the engine holds fewer than max live sessions (0: no cap), and
// returns nil otherwise. Checking and registering are one step, so a
// burst of clients cannot overshoot the cap.
func (e *Engine) TryNewSession(sink Sink, max int) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		id:         newSessionID(),
		engine:     e,
		sink:       sink,
		osignal:    make(chan struct{}, 1),
		odrained:   make(chan struct{}, 1),
		slots:      make(chan struct{}, e.opts.MaxInflightPerSession),
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		inflight:   make(map[string]*inflight),
	}
	_, s.inline = sink.(NonBlockingSink)
	_, s.recycle = sink.(CopyingSink)
	_, s.releases = sink.(ReleasingSink)
	_, s.runHere = sink.(InlineSink)
	s.logLevel.Store(int32(DefaultLogLevel))
	s.Touch()
	e.mu.Lock()
	if max > 0 && len(e.sessions) >= max {
		e.mu.Unlock()
		cancel()
		return nil
	}
	e.sessions[s.id] = s
	e.mu.Unlock()
	return s
}

// Session returns the live session with id, or nil.
func (e *Engine) Session(id string) *Session {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.sessions[id]
}

// SessionCount returns the number of live sessions.
func (e *Engine) SessionCount() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.sessions)
}

func (e *Engine) forget(s *Session) {
	e.mu.Lock()
	delete(e.sessions, s.id)
	e.mu.Unlock()
}

func (e *Engine) live() []*Session {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*Session, 0, len(e.sessions))
	for _, s := range e.sessions {
		if s.Initialized() {
			out = append(out, s)
		}
	}
	return out
}

// Notify sends a notification to every initialized session, on every
// transport. It is encoded once and never blocks on a slow client.
func (e *Engine) Notify(method string, params any) {
	data, err := encodeRequest(-1, method, params)
	if err != nil {
		e.log.Error("encode notification", "method", method, "err", err)
		return
	}
	for _, s := range e.live() {
		s.offer(Outgoing{Data: data})
	}
}

// ResourceUpdated tells the sessions subscribed to uri that it changed.
func (e *Engine) ResourceUpdated(uri string) {
	for _, s := range e.live() {
		if s.Subscribed(uri) {
			_ = s.Notify(NotificationResourceUpdated, map[string]string{"uri": uri})
		}
	}
}

// Log sends a log notification to every session whose level admits it.
func (e *Engine) Log(level Level, logger string, data any) {
	for _, s := range e.live() {
		s.Log(level, logger, data)
	}
}

// enqueue hands j to an idle worker, or starts one when none is idle, or
// (at MaxWorkers) queues it for the next worker that frees up. The
// hand-off channel is unbuffered, so a send succeeds only when a worker is
// really waiting: a burst never waits behind busy workers while the pool
// could still grow.
func (e *Engine) enqueue(j *job) bool {
	if e.closing.Load() {
		return false
	}
	select {
	case e.handoff <- j:
		return true
	default:
	}
	if n := e.workers.Add(1); int(n) <= e.opts.MaxWorkers {
		e.wg.Add(1)
		go e.work(j, false)
		return true
	}
	e.workers.Add(-1)
	select {
	case e.queue <- j:
		return true
	case <-j.s.done:
		return false
	case <-e.stop:
		return false
	}
}

// runInline runs j on the caller's goroutine, counted as a worker so that
// Shutdown waits for it; false when the engine is shutting down.
func (e *Engine) runInline(j *job) bool {
	if e.closing.Load() {
		return false
	}
	e.wg.Add(1)
	defer e.wg.Done()
	e.run(j)
	return true
}

// spawn starts one of the MinWorkers workers that never leave.
func (e *Engine) spawn() {
	e.workers.Add(1)
	e.wg.Add(1)
	go e.work(nil, true)
}

const workerIdle = 30 * time.Second

// work runs first (if any), then jobs as they come. Workers beyond
// MinWorkers leave after being idle for a while.
func (e *Engine) work(first *job, permanent bool) {
	defer e.wg.Done()
	defer e.workers.Add(-1)
	if first != nil {
		e.run(first)
	}
	var idle *time.Timer
	var idleC <-chan time.Time // nil for permanent workers: never fires
	if !permanent {
		idle = time.NewTimer(workerIdle)
		defer idle.Stop()
		idleC = idle.C
	}
	for {
		select {
		case j := <-e.queue:
			e.run(j)
		case j := <-e.handoff:
			e.run(j)
		case <-idleC:
			return
		case <-e.stop:
			return
		}
		if idle != nil {
			idle.Reset(workerIdle)
		}
	}
}

func (e *Engine) run(j *job) {
	s := j.s
	var res any
	var err error
	if err = j.fl.ctx.Err(); err == nil {
		res, err = e.call(j)
	}
	cancelled := s.finish(j)
	// Whatever happens to res below, nothing reads it afterwards.
	defer j.req.releaseScratch()
	if cancelled || s.state.Load() == stateClosed {
		// The client gave up on it: no response, but the route still learns
		// that this request is over.
		s.enqueue(Outgoing{Route: j.req.route, Response: true, release: true})
		return
	}
	if err != nil && errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
		return
	}
	var rpcErr *jsonrpc2.Error
	if err != nil {
		res, rpcErr = nil, ErrorObject(err)
	}
	out := Outgoing{Route: j.req.route, Response: true, release: true}
	var encErr error
	if s.recycle || s.releases {
		// A pooled buffer, back to the pool once a CopyingSink has copied it,
		// or when a ReleasingSink releases it (a sink that is both copies).
		rb := getRespBuffer()
		rb.bySink = !s.recycle
		encErr = appendResponse(&rb.b, j.req.ID, res, rpcErr)
		out.Data, out.buf = rb.b.Bytes(), rb
	} else {
		// The sink may keep Data for good: it gets bytes of its own.
		out.Data, encErr = encodeResponse(j.req.ID, res, rpcErr)
	}
	if encErr != nil {
		e.log.Error("encode response", "method", j.req.Method, "err", encErr)
	}
	s.enqueue(out)
}

// call runs the handler, turning a panic into an internal error so one bad
// request cannot take the server down.
func (e *Engine) call(j *job) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("handler panicked", "method", j.req.Method, "panic", p)
			err = protocolError("INTERNAL_ERROR", "internal error while handling "+j.req.Method,
				"the handler failed unexpectedly", "retry; if it persists, report it with the server's log")
		}
	}()
	return j.m.handle(j.fl.ctx, &j.req)
}

func (e *Engine) janitor() {
	t := time.NewTicker(e.opts.IdleTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			limit := now.Add(-e.opts.IdleTimeout).UnixNano()
			e.mu.RLock()
			var expired []*Session
			for _, s := range e.sessions {
				if s.holds.Load() == 0 && s.lastActive.Load() < limit && len(s.slots) == 0 {
					expired = append(expired, s)
				}
			}
			e.mu.RUnlock()
			for _, s := range expired {
				e.log.Info("closing idle session", "session", s.id)
				s.Close()
			}
		}
	}
}

// Shutdown stops admitting requests, waits (until ctx ends) for in-flight
// ones to be answered and written, then closes every session and stops the
// workers.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.closing.Store(true)
	var err error
	e.mu.RLock()
	all := make([]*Session, 0, len(e.sessions))
	for _, s := range e.sessions {
		all = append(all, s)
	}
	e.mu.RUnlock()
	for _, s := range all {
		if derr := s.Drain(ctx); derr != nil && err == nil {
			err = derr
		}
	}
	for _, s := range all {
		s.Close()
	}
	e.stopOnce.Do(func() { close(e.stop) })
	// Sessions are closed, so handlers see their contexts cancelled; one
	// that ignores its context must not hold shutdown past the deadline.
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("shutdown: %d worker(s) still busy: %w", e.workers.Load(), ctx.Err())
		}
	}
	return err
}
