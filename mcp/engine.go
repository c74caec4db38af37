package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/logid"
)

// EngineOptions tune the engine; zero values take the defaults.
type EngineOptions struct {
	MaxMessageSize        int           // bytes per inbound message (default 4 MiB)
	MaxInflightPerSession int           // requests a session may have in flight (default DefaultMaxInflightPerSession)
	RequestTimeout        time.Duration // per-request deadline (default 5 min)
	CallTimeout           time.Duration // wait for a client's answer to our request (default 10 min; never past the asking request's deadline)
	IdleTimeout           time.Duration // close sessions idle this long; 0 never (HTTP sets it)
	// MaxSubscriptions caps the resources one session, or one
	// subscriptions/listen stream, may subscribe to (default
	// DefaultMaxSubscriptions).
	MaxSubscriptions int
	// MaxSubscriptionBytes bounds what the resource subscriptions of all
	// sessions and listen streams take together (default
	// DefaultMaxSubscriptionBytes).
	MaxSubscriptionBytes int64
	Logger               *slog.Logger
	// Observer, when set, sees every request and every 2025-era session
	// end (see Observer); nil costs the request path nothing.
	Observer Observer
}

// DefaultMaxInflightPerSession is how many requests a session may have
// in flight by default; past it, Deliver blocks the transport's reader.
const DefaultMaxInflightPerSession = 256

func (o *EngineOptions) fill() {
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.MaxInflightPerSession <= 0 {
		o.MaxInflightPerSession = DefaultMaxInflightPerSession
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.MaxSubscriptionBytes <= 0 {
		o.MaxSubscriptionBytes = DefaultMaxSubscriptionBytes
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

// Engine runs the requests of every session of every transport through
// one method table, and keeps the registry of live sessions.
//
// A request runs on a goroutine of its own, or on its transport's when the
// transport waits for the answer anyway (dispatch.go). What bounds the
// work is per session (its in-flight slots) and per server (the
// transports' cap on sessions), not a pool of fixed size.
type Engine struct {
	srv     *Server
	opts    EngineOptions
	methods map[string]method
	caps    ServerCapabilities
	log     *slog.Logger
	stop    chan struct{}
	// idle hands a request to a goroutine that finished one a moment ago
	// and waits for more (unbuffered: only a goroutine really waiting
	// takes it). A new goroutine starts with a small stack, which a
	// handler grows, and growing copies it; a goroutine that stays a while
	// serves a busy engine with the stack it has grown.
	idle chan func()

	// admitMu orders admitting a request (running.Add) before Shutdown's
	// running.Wait: a WaitGroup must not grow once waited on.
	admitMu sync.RWMutex
	closing bool
	running sync.WaitGroup

	mu       sync.RWMutex
	sessions map[string]*Session

	// serverInfoMember is the _meta member every modern result carries.
	serverInfoMember []byte
	lmu              sync.Mutex
	listeners        map[*listener]struct{} // open subscriptions/listen streams
	// subscribed is the bytes the resource subscriptions of all sessions
	// and listen streams take (MaxSubscriptionBytes bounds it).
	subscribed atomic.Int64

	paramHeaders sync.Map // tool name → *paramHeaders
}

// NewEngine starts an engine serving srv.
func NewEngine(srv *Server, opts EngineOptions) *Engine {
	opts.fill()
	e := &Engine{
		srv:      srv,
		opts:     opts,
		caps:     srv.capabilities(),
		log:      opts.Logger,
		stop:     make(chan struct{}),
		idle:     make(chan func()),
		sessions: make(map[string]*Session),

		serverInfoMember: serverInfoMember(srv.Info),
		listeners:        make(map[*listener]struct{}),
	}
	e.methods = srv.methodTable(e)
	if opts.IdleTimeout > 0 {
		go e.expireIdle()
	}
	return e
}

// Options returns the engine's effective options.
func (e *Engine) Options() EngineOptions { return e.opts }

// ErrTooManySessions is NewSession's answer at the cap on live sessions.
var ErrTooManySessions = errors.New("too many sessions")

// NewSession registers a session whose messages leave through sink,
// unless the engine already holds limit live sessions (0: no limit), when
// it returns ErrTooManySessions. Checking and registering are one step,
// so a burst of clients cannot overshoot the limit.
//
// opener says who opened the session: its values (never its deadline or
// cancellation, which end with the request that opened it) are what
// NotifyWhere's filter sees of the session, such as the member an
// access token named. Pass context.Background() when there is nobody to
// tell apart (stdio: the local user's own process).
func (e *Engine) NewSession(opener context.Context, sink Sink, limit int) (*Session, error) {
	ctx, end := context.WithCancelCause(context.Background())
	s := &Session{
		opener:     context.WithoutCancel(opener),
		id:         newSessionID(),
		engine:     e,
		sink:       sink,
		slots:      make(chan struct{}, e.opts.MaxInflightPerSession),
		ctx:        ctx,
		end:        end,
		done:       make(chan struct{}),
		osignal:    make(chan struct{}, 1),
		odrained:   make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		inflight:   make(map[string]*running),
	}
	s.peer.Store(noPeer)
	s.logLevel.Store(int32(DefaultLogLevel))
	s.Touch()
	e.mu.Lock()
	if limit > 0 && len(e.sessions) >= limit {
		e.mu.Unlock()
		end(ErrTooManySessions)
		return nil, ErrTooManySessions
	}
	e.sessions[s.id] = s
	e.mu.Unlock()
	return s, nil
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

// live returns the sessions that may be sent notifications.
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

// Notify sends a change notification to every initialized session, on
// every transport, and to every subscriptions/listen stream that asked for
// it. It is encoded once for the sessions and never blocks on a slow
// client.
func (e *Engine) Notify(method string, params any) { e.NotifyWhere(method, params, nil) }

// An Audience picks who a notification is for. It is called once per
// 2025-era session with the context the session was opened with
// (NewSession's opener) and a nil request, and once per
// subscriptions/listen stream with the listen request's context and the
// request itself (whose _meta a modern client's choices travel in). It
// may be called from several goroutines at once, must not block, and
// must not keep what it is given. A nil Audience means everyone.
type Audience func(ctx context.Context, listen *Request) bool

// NotifyWhere is Notify for the sessions and streams to picks: a change
// that only some clients can see (a library a member may not read, a
// label other clients do not follow) reaches only those.
func (e *Engine) NotifyWhere(method string, params any, to Audience) {
	e.notifyListeners(method, "", nil, to)
	data, err := encodeRequest(-1, method, params)
	if err != nil {
		e.log.Error("encode notification", "method", method, "err", err)
		return
	}
	for _, s := range e.live() {
		if to == nil || to(s.opener, nil) {
			s.offer(Outgoing{Kind: KindMessage, Data: data})
		}
	}
}

// ResourceUpdated tells the sessions subscribed to uri that it changed.
func (e *Engine) ResourceUpdated(uri string) { e.ResourceUpdatedWhere(uri, nil) }

// ResourceUpdatedWhere is ResourceUpdated for the sessions and streams to
// picks (see NotifyWhere).
func (e *Engine) ResourceUpdatedWhere(uri string, to Audience) {
	e.notifyListeners(NotificationResourceUpdated, uri, map[string]any{"uri": uri}, to)
	for _, s := range e.live() {
		if s.Subscribed(uri) && (to == nil || to(s.opener, nil)) {
			s.notify(nil, NotificationResourceUpdated, map[string]string{"uri": uri})
		}
	}
}

// Log sends a log notification to every session whose level admits it.
func (e *Engine) Log(level Level, logger string, data any) { e.LogWhere(level, logger, data, nil) }

// LogWhere is Log for the sessions to picks (see NotifyWhere; a
// subscriptions/listen stream carries no log messages): a warning about a
// library only some members may read reaches only those.
func (e *Engine) LogWhere(level Level, logger string, data any, to Audience) {
	for _, s := range e.live() {
		if to == nil || to(s.opener, nil) {
			s.log(nil, level, logger, data)
		}
	}
}

// expireIdle closes sessions nobody has used for IdleTimeout.
func (e *Engine) expireIdle() {
	t := time.NewTicker(e.opts.IdleTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			limit := now.Add(-e.opts.IdleTimeout)
			e.mu.RLock()
			var expired []*Session
			for _, s := range e.sessions {
				if used, idle := s.Idle(); idle && used.Before(limit) {
					expired = append(expired, s)
				}
			}
			e.mu.RUnlock()
			for _, s := range expired {
				e.log.Info("closing idle session", logid.Session(s.id))
				s.Close()
			}
		}
	}
}

// Shutdown stops admitting requests, waits (until ctx ends) for those in
// flight to be answered and handed to their transports, then closes every
// session, which ends the transports' streams. A handler that ignores its
// cancelled context cannot hold Shutdown past ctx.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.admitMu.Lock()
	first := !e.closing
	e.closing = true
	e.admitMu.Unlock()
	if first {
		close(e.stop)
	}
	e.mu.RLock()
	all := make([]*Session, 0, len(e.sessions))
	for _, s := range e.sessions {
		all = append(all, s)
	}
	e.mu.RUnlock()
	var err error
	for _, s := range all {
		if derr := s.Drain(ctx); derr != nil && err == nil {
			err = derr
		}
	}
	for _, s := range all {
		s.Close()
	}
	done := make(chan struct{})
	go func() { e.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("shutdown: requests still running: %w", ctx.Err())
		}
	}
	return err
}
