package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/sourcegraph/jsonrpc2"
)

// Session is the layer the 2025-era protocol puts around requests: one
// client's connection (a stdio pipe, a legacy SSE stream, a Streamable
// HTTP session). It answers initialize and keeps what it learns there
// (the Peer every request of the session carries), the log level, the
// requests in flight (so the client can cancel them), the questions
// waiting for the client's answer, the resource subscriptions, and the
// outbox: the only writer to its Sink.
type Session struct {
	// opener holds the values of the context the session was opened
	// with (NewSession): who opened it, for an Audience.
	opener context.Context
	id     string
	engine *Engine
	sink   Sink
	// slots bound the requests in flight: one is taken when a request is
	// admitted and given back once its answer has been handed to the
	// transport. A client that floods us waits in Deliver.
	slots chan struct{}
	ctx   context.Context
	end   context.CancelCauseFunc
	done  chan struct{}
	once  sync.Once

	// The outbox costs nothing while the session is idle: producers append
	// under omu; the writer, a goroutine started when there is something
	// to write and gone after a short idle spell, swaps the queue out whole
	// and hands it to the sink, so a burst costs one Send.
	omu        sync.Mutex
	oq         []Outgoing
	ospare     []Outgoing
	oslots     int           // messages in oq that give back an in-flight slot once written
	osignal    chan struct{} // cap 1: there is something to write
	odrained   chan struct{} // cap 1: the writer took a batch
	unwritten  atomic.Int64  // queued but not yet handed to the sink
	writing    atomic.Bool   // a writer runs, or the sink is being closed
	writerDone chan struct{} // closed once the sink is closed

	state      atomic.Int32
	peer       atomic.Pointer[Peer]
	logLevel   atomic.Int32
	greeted    atomic.Bool
	lastActive atomic.Int64
	holds      atomic.Int32 // Hold calls not yet released: idle expiry leaves the session alone

	// For the engine's Observer: the transport's network (SetTransport;
	// atomic because Shutdown may close a session the moment it opens)
	// and when initialize succeeded (zero: never).
	transport atomic.Pointer[string]
	started   atomic.Int64 // unix nanoseconds

	mu         sync.Mutex
	inflight   map[string]*running
	pending    map[int64]chan frame
	subs       map[string]struct{}
	nextCallID int64
	onClose    []func() // OnClose's, run by Close
}

const (
	stateNew int32 = iota
	stateReady
	stateClosed
)

// noPeer is what requests see before initialize (only ping runs then).
var noPeer = &Peer{}

func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // cannot happen on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// ID returns the session's id (32 hex characters from crypto/rand).
func (s *Session) ID() string { return s.id }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Context is cancelled, with cause ErrSessionClosed, when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

// Initialized reports whether initialize has been answered.
func (s *Session) Initialized() bool { return s.state.Load() == stateReady }

// ProtocolVersion returns the negotiated revision ("" before initialize).
func (s *Session) ProtocolVersion() string { return s.peer.Load().ProtocolVersion }

// Touch marks the session active (idle expiry counts from the last touch).
func (s *Session) Touch() { s.lastActive.Store(time.Now().UnixNano()) }

// Hold keeps the session from idle expiry until release is called. A
// transport holds a session while its client stays connected to a stream:
// a connected client is not idle however quiet it is, and whether the
// transport sends keep-alives must not decide when the session ends. Holds
// nest; release may be called more than once, and idle time counts from
// the last release.
func (s *Session) Hold() (release func()) {
	s.holds.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			// Touched first, so idle expiry never sees the hold gone and the
			// last activity from before it.
			s.Touch()
			s.holds.Add(-1)
		})
	}
}

// Idle reports whether nothing holds the session (no request in flight,
// no stream a client is connected to, see Hold) and when it was last
// used. The idle expiry and the transports' reclaiming of idle sessions
// at the server's cap read idleness here, so both mean the same thing.
func (s *Session) Idle() (lastUsed time.Time, idle bool) {
	return time.Unix(0, s.lastActive.Load()), s.holds.Load() == 0 && len(s.slots) == 0
}

// Deliver hands the session one inbound frame, which belongs to the
// session from then on, and returns how many responses the frame will get
// (0 or 1) on rt, the route of the request in it (nil: the session's
// Sink). It is the entry of a transport that hands over frames as they
// come (stdio): a frame the session cannot read is answered with its
// JSON-RPC error (-32700 and id null for one that is not JSON), and the
// session lives on. Deliver blocks while the session has its maximum of
// requests in flight, which is how a client that floods us is slowed down
// instead of buffered without end.
func (s *Session) Deliver(frame []byte, rt Route) int {
	s.Touch()
	if s.state.Load() == stateClosed {
		return 0
	}
	if limit := s.engine.opts.MaxMessageSize; len(frame) > limit {
		s.replyError(nullID, rt, tooLarge(len(frame), limit))
		return 1
	}
	f, answerID, err := decodeFrame(frame)
	if err != nil {
		s.replyError(answerID, rt, err)
		return 1
	}
	in, _ := modernFrame(f)
	return s.deliver(s.opener, f, in, nil, rt)
}

// DeliverInbound is Deliver for a message the transport read first
// (ParseInbound), to answer a message it cannot read its own way (HTTP:
// status 400) or to tell its era; see Deliver.
//
// from says who sent the message: a request it starts runs under a
// context with from's values (the member an access token named, the
// HTTP headers a handler reads), and for a key from has no value, the
// value of the context that opened the session (NewSession's opener: a
// header the client sent only when it connected still holds). It never
// has from's deadline or cancellation, since a 2025-era request outlives
// the POST that carried it.
func (s *Session) DeliverInbound(from context.Context, in *Inbound, rt Route) int {
	s.Touch()
	if s.state.Load() == stateClosed {
		return 0
	}
	if limit := s.engine.opts.MaxMessageSize; in.size > limit {
		s.replyError(nullID, rt, tooLarge(in.size, limit))
		return 1
	}
	var modern *Inbound
	if in.IsRequest() && in.Modern() {
		modern = in
	}
	return s.deliver(sentBy{Context: context.WithoutCancel(from), opener: s.opener}, in.f, modern, in.lease, rt)
}

// sentBy is the context of a request a message started: the values of
// the context it came with, then those of the session's opener.
type sentBy struct {
	context.Context // the message's, without its cancellation
	opener          context.Context
}

func (c sentBy) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.opener.Value(key)
}

// deliver serves one frame read; modern is its Inbound when it is a
// request of revision 2026-07-28 or later, which uses the session only
// for its in-flight table and outbox. A request goes on to the dispatch
// stage (Engine.start) once the session has checked what only the 2025
// era has: its method allowed before initialize, and initialize itself,
// which the session answers. lease is the message's (Inbound.Keep), which
// a request it starts takes.
func (s *Session) deliver(from context.Context, f frame, modern *Inbound, lease *Lease, rt Route) int {
	switch f.kind {
	case kindResponse:
		s.resolve(f)
		return 0
	case kindNotification:
		s.notification(f)
		return 0
	}
	if modern != nil {
		peer, level, err := peerOf(modern)
		var m method
		if err == nil {
			m, err = s.engine.lookup(f.method, true)
		}
		if err != nil {
			handOver(s, rt, errorReply(s.engine, f.id, err, true), false)
			return 1
		}
		s.engine.start(from, modernRequest(modern, peer, level, s, rt), m)
		return 1
	}
	if f.method == MethodInitialize {
		s.initialize(f, rt)
		return 1
	}
	m, err := s.engine.lookup(f.method, false)
	if err != nil {
		s.replyError(f.id, rt, err)
		return 1
	}
	if !m.beforeInit && s.state.Load() != stateReady {
		s.replyError(f.id, rt, protocolError(CodeNotInitialized, fmt.Sprintf("%s before initialize", f.method),
			"only ping is allowed before the session is initialized",
			fmt.Sprintf("send initialize first, or name revision %s in params._meta.%q to send requests without a session",
				Version20260728, MetaProtocolVersion)))
		return 1
	}
	s.engine.start(from, Request{Method: f.method, ID: f.id, Params: f.params, peer: s.peer.Load(), s: s, route: rt, lease: lease}, m)
	return 1
}

// track keeps an admitted request in the in-flight table, where
// notifications/cancelled finds it; the error is ErrSessionClosed once the
// session has ended, or the fault for an id already in flight.
func (s *Session) track(r *running) error {
	r.key = idKey(r.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Load() == stateClosed {
		return ErrSessionClosed
	}
	if _, dup := s.inflight[r.key]; dup {
		return protocolError(CodeInvalidRequest, fmt.Sprintf("request id %s is already in use", r.ID),
			"a request with this id is still in flight on this session", "use a fresh id for every request")
	}
	s.inflight[r.key] = r
	return nil
}

// untrack forgets a request whose handler has returned.
func (s *Session) untrack(r *running) {
	s.mu.Lock()
	if s.inflight[r.key] == r {
		delete(s.inflight, r.key)
	}
	s.mu.Unlock()
}

func tooLarge(size, limit int) error {
	return &fault.Error{Code: CodeMessageTooBig, What: fmt.Sprintf("message of %d bytes is too large", size),
		Why: fmt.Sprintf("the server accepts messages of at most %d bytes", limit),
		How: "send smaller arguments, or raise --max-message-size", Details: map[string]any{"size": size, "max": limit}}
}

// RejectTooLarge answers a message the transport refused to read whole
// because it exceeds the size cap; the session goes on.
func (s *Session) RejectTooLarge(size int) {
	s.replyError(nullID, nil, tooLarge(size, s.engine.opts.MaxMessageSize))
}

func (s *Session) initialize(f frame, rt Route) {
	if !s.state.CompareAndSwap(stateNew, stateReady) {
		s.replyError(f.id, rt, protocolError(CodeInvalidRequest, "initialize was already done",
			"a session is initialized once", "start a new session to initialize again"))
		return
	}
	r := &Request{Method: f.method, ID: f.id, Params: f.params, peer: noPeer, s: s}
	var p InitializeParams
	if err := r.Decode(&p); err != nil {
		s.state.Store(stateNew)
		s.replyError(f.id, rt, err)
		return
	}
	if err := checkPeer("params.clientInfo", p.ClientInfo, "params.capabilities", p.Capabilities); err != nil {
		s.state.Store(stateNew)
		s.replyError(f.id, rt, err)
		return
	}
	var caps ClientCapabilities
	if len(p.Capabilities) > 0 {
		_ = json.Unmarshal(p.Capabilities, &caps) // unknown shapes are simply not acted on
	}
	res := &InitializeResult{
		ProtocolVersion: NegotiateVersion(p.ProtocolVersion),
		Capabilities:    s.engine.caps,
		ServerInfo:      s.engine.srv.Info,
		Instructions:    s.engine.srv.Instructions,
	}
	if s.engine.opts.Observer != nil {
		s.started.Store(time.Now().UnixNano())
	}
	s.peer.Store(&Peer{ProtocolVersion: res.ProtocolVersion, Info: p.ClientInfo, Capabilities: caps})
	data, err := encodeResponse(f.id, res, nil)
	if err != nil {
		s.engine.log.Error("encode initialize result", "err", err)
	}
	handOver(s, rt, Outgoing{Kind: KindResponse, Data: data}, false)
}

func (s *Session) notification(f frame) {
	switch f.method {
	case NotificationCancelled:
		var p CancelledParams
		if f.params == nil || json.Unmarshal(f.params, &p) != nil || p.RequestID == nil {
			return
		}
		key := idKey(p.RequestID)
		s.mu.Lock()
		fl := s.inflight[key]
		// Forget it now: the client may reuse the id once it has cancelled.
		delete(s.inflight, key)
		s.mu.Unlock()
		if fl != nil {
			fl.cancel(ErrCancelledByClient)
		}
	case NotificationInitialized:
		if greet := s.engine.srv.Greeting; greet != nil && s.Initialized() && s.greeted.CompareAndSwap(false, true) {
			for _, m := range greet(s.opener) {
				s.log(nil, m.Level, m.Logger, m.Data)
			}
		}
	default:
		// roots/list_changed and anything unknown need no action; unknown
		// notifications must be ignored.
	}
}

// resolve hands the client's answer to the call waiting for it.
func (s *Session) resolve(f frame) {
	n, err := strconv.ParseInt(string(f.id), 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	ch := s.pending[n]
	delete(s.pending, n)
	s.mu.Unlock()
	if ch != nil {
		ch <- f
	}
}

// replyError answers a frame the session refused, with the codes of the
// 2025 era.
func (s *Session) replyError(id json.RawMessage, rt Route, err error) {
	handOver(s, rt, errorReply(s.engine, id, err, false), false)
}

// Subscribed reports whether the client subscribed to uri.
func (s *Session) Subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[uri]
	return ok
}

// subscribe keeps a subscription to uri, unless the session already has
// its maximum (EngineOptions.MaxSubscriptions) of others, or the server's
// subscriptions take their maximum (EngineOptions.MaxSubscriptionBytes);
// subscribing again to one it has is no new one.
func (s *Session) subscribe(uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Load() == stateClosed {
		// Close has let go of the subscriptions: nothing more is kept.
		return ErrSessionClosed
	}
	if _, ok := s.subs[uri]; ok {
		return nil
	}
	if limit := s.engine.opts.MaxSubscriptions; len(s.subs) >= limit {
		return tooManySubscriptions(limit)
	}
	if err := s.engine.holdSubscriptions("params.uri", subscriptionSize(uri)); err != nil {
		return err
	}
	if s.subs == nil {
		s.subs = make(map[string]struct{})
	}
	s.subs[uri] = struct{}{}
	return nil
}

// unsubscribe forgets the subscription to uri, if there is one.
func (s *Session) unsubscribe(uri string) {
	s.mu.Lock()
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		s.engine.letGoSubscriptions(subscriptionSize(uri))
	}
	s.mu.Unlock()
}

// notify sends a notification that belongs to the request whose route is
// rt (nil: to none), never blocking the caller.
func (s *Session) notify(rt Route, method string, params any) {
	data, err := encodeRequest(-1, method, params)
	if err != nil {
		s.engine.log.Error("encode notification", "method", method, "err", err)
		return
	}
	m := Outgoing{Kind: KindMessage, Data: data}
	if rt != nil && rt.Push(m) {
		return
	}
	s.offer(m)
}

func (s *Session) log(rt Route, level Level, logger string, data any) {
	if level < Level(s.logLevel.Load()) || s.state.Load() != stateReady {
		return
	}
	s.notify(rt, NotificationMessage, &LoggingMessageParams{Level: level.String(), Logger: logger, Data: data})
}

// LogMessage is one notifications/message a server sends.
type LogMessage struct {
	Level  Level
	Logger string
	Data   any
}

// call sends a server→client request that belongs to the request whose
// route is rt and waits for the answer; see Request.Call.
func (s *Session) call(ctx context.Context, rt Route, method string, params, result any) error {
	s.mu.Lock()
	s.nextCallID++
	id := s.nextCallID
	ch := make(chan frame, 1)
	if s.pending == nil {
		s.pending = make(map[int64]chan frame)
	}
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	data, err := encodeRequest(id, method, params)
	if err != nil {
		return err
	}
	m := Outgoing{Kind: KindMessage, Data: data}
	if (rt == nil || !rt.Push(m)) && !s.enqueue(m) {
		return fmt.Errorf("%s: session closed", method)
	}
	// The wait ends with the request that asked at the latest: bounding the
	// timer by ctx's deadline, rather than racing it, is what makes a call
	// made late in a request say that the client did not answer, instead of
	// the request's own "took too long".
	wait, byDeadline := s.engine.opts.CallTimeout, false
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait, byDeadline = max(0, time.Until(d)), true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case f := <-ch:
		if f.err != nil {
			return &jsonrpc2.Error{Code: f.err.Code, Message: f.err.Message, Data: f.err.Data}
		}
		if result != nil && f.result != nil {
			if err := json.Unmarshal(f.result, result); err != nil {
				return fmt.Errorf("decode %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		// The timer and the deadline fire together; whichever select picks,
		// the answer is the same.
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			s.abandonCall(rt, id, "the request that asked was cancelled")
			return context.Cause(ctx)
		}
	case <-s.done:
		return fmt.Errorf("%s: session closed before the client answered", method)
	case <-timer.C:
	}
	s.abandonCall(rt, id, "no answer in time")
	f := &fault.Error{Code: fault.RequestTimeout, What: fmt.Sprintf("the client did not answer %s", method),
		Why: fmt.Sprintf("no answer within %s", wait.Round(time.Millisecond)), How: "answer the request sooner, or retry",
		Err: ctx.Err()}
	if byDeadline {
		f.Why += ", all the time the request that asked had left"
		f.How += "; the server's --request-timeout sets how long that is"
	}
	return f
}

// abandonCall tells the client that the server no longer waits for its
// answer to call id, so it can close what it showed the user (a form, a
// sampling approval) instead of asking for input nobody will read.
func (s *Session) abandonCall(rt Route, id int64, reason string) {
	s.notify(rt, NotificationCancelled, &CancelledParams{RequestID: strconv.AppendInt(nil, id, 10), Reason: reason})
}

// Drain waits until every admitted request has been answered and handed
// to the transport, or ctx ends.
func (s *Session) Drain(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for len(s.slots) > 0 || s.unwritten.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return nil
		case <-t.C:
		}
	}
	return nil
}

// Wait blocks until the session is closed and its sink has been closed
// (so everything written has been flushed). Never call it from a Sink.
func (s *Session) Wait() { <-s.writerDone }

// Close ends the session: its requests' contexts are cancelled, late
// results are dropped, and the transport's sink is closed.
func (s *Session) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.state.Store(stateClosed)
		for _, r := range s.inflight {
			r.cancel(ErrSessionClosed)
		}
		for uri := range s.subs {
			s.engine.letGoSubscriptions(subscriptionSize(uri))
		}
		s.subs = nil
		hooks := s.onClose
		s.onClose = nil
		s.mu.Unlock()
		s.end(ErrSessionClosed)
		close(s.done)
		s.engine.forget(s)
		if s.writing.CompareAndSwap(false, true) {
			// No writer is running to close the sink: do it here.
			s.finishWriter()
		}
		s.sessionEnded()
		if fn := s.engine.srv.OnSessionClosed; fn != nil {
			fn(s.id)
		}
		for _, fn := range hooks {
			fn()
		}
	})
}

// OnClose has fn called once the session is closed: by Close, before it
// returns, holding none of the session's locks (at once, when the session
// is closed already). A transport keeps its count of sessions with it, so
// that whoever sees a session ended (a DELETE's answer, an initialize's
// refusal) finds it no longer counted, where context.AfterFunc on the
// session's Context would count it down a moment later. fn must not wait
// for anything slow: the closer (a DELETE, Shutdown, the idle reaper)
// waits for it; nor call OnClose.
func (s *Session) OnClose(fn func()) {
	s.mu.Lock()
	if s.state.Load() != stateClosed {
		s.onClose = append(s.onClose, fn)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	// Close may still be running the hooks it took: fn runs once it has.
	s.once.Do(func() {})
	fn()
}
