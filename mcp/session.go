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

// Outgoing is one message leaving a session.
type Outgoing struct {
	// Data is one compact JSON-RPC message, without a trailing newline. It
	// is never modified after it is handed to a Sink and may be retained,
	// except by a CopyingSink: its buffer is reused once Send returns.
	Data []byte
	// Route is what the transport passed to Deliver with the request this
	// message answers or belongs to (progress, logs, server→client requests
	// made while handling it); nil for unsolicited messages.
	Route any
	// Response is set on the response that completes a request.
	Response bool
	// EndStream marks a message without Data that asks the transport to
	// close the stream carrying Route's messages while the request goes on
	// (SEP-1699 polling): the client reconnects and receives the rest of
	// the request's messages, its response included, on the resumed
	// stream. Only routes that implement Resumable and report true ever
	// receive it, so other transports need not know about it.
	EndStream bool

	release bool        // frees the request's in-flight slot once written
	buf     *respBuffer // Data's pooled buffer: recycled after Send by a CopyingSink, by Release for a ReleasingSink
}

// Release gives a response's buffer back for reuse: a ReleasingSink calls
// it once it has written Data, which must not be used afterwards. It does
// nothing for other messages. Call it once per response: a second call is
// ignored until the buffer is reused, and would then free another
// response's buffer.
func (o Outgoing) Release() {
	if o.buf != nil && o.buf.bySink {
		o.buf.put()
	}
}

// Resumable is implemented by a transport's route value (see Deliver)
// when the stream carrying that route's messages can be closed early and
// resumed by the client, as Streamable HTTP allows with event ids and
// Last-Event-ID. Resumable may be asked from any goroutine.
type Resumable interface {
	Resumable() bool
}

// Sink is a transport's side of a session. Send is called by one goroutine
// at a time, each call finished before the next begins: the session's writer
// goroutine, or for a NonBlockingSink whichever goroutine produced a
// message. So a Sink needs no locking of its own for writes; Close is
// called once, after the last Send.
type Sink interface {
	// Send writes msgs in order. An error closes the session.
	Send(msgs []Outgoing) error
	// Close releases the transport's resources for the session.
	Close()
}

// NonBlockingSink is a Sink whose Send never waits on a client (it only
// hands messages to other goroutines, as Streamable HTTP does). The session
// then writes on the goroutine that produced the message, Send calls still
// never overlapping, and keeps no writer goroutine at all.
type NonBlockingSink interface {
	Sink
	NonBlocking()
}

// InlineSink is a Sink whose transport delivers each request on a
// goroutine of its own that waits for the answer anyway (an HTTP request
// handler). Requests that never wait on the client (prompts/get, the
// lists, resources, completion, ping) then run on that goroutine instead of
// being handed to a worker and back: two goroutine switches fewer per
// request. Requests that may ask the client something (tools/call) still go
// to a worker, since their questions travel on the stream the transport
// only serves once Deliver has returned.
type InlineSink interface {
	Sink
	RunsInline()
}

// CopyingSink is a Sink that is done with every message's Data when Send
// returns (it writes or copies it and keeps nothing). Responses to its
// session are then encoded into recycled buffers instead of a fresh
// allocation each.
type CopyingSink interface {
	Sink
	CopiesData()
}

// ReleasingSink is a Sink that keeps the Data of responses past Send and
// hands each one back with Outgoing.Release once written. Responses to its
// session are then encoded into recycled buffers too, instead of being
// copied out of one. A response it drops without releasing is left to the
// garbage collector.
type ReleasingSink interface {
	Sink
	ReleasesResponses()
}

// Request is one request being handled.
type Request struct {
	Session *Session
	Method  string
	ID      json.RawMessage
	Params  json.RawMessage

	progressToken json.RawMessage
	route         any
	scratch       *[]byte
}

// Scratch returns the request's buffer for the bytes of the handler's
// result (a rendered prompt, say), so a hot handler need not allocate
// them: it comes from a pool, empty, and goes back to it once the result
// is encoded. The handler appends to it and stores the grown slice back;
// later calls return it as left. Nothing may keep the buffer, or strings
// made from its memory, past the encoding of the result: after that the
// memory holds another request's bytes.
func (r *Request) Scratch() *[]byte {
	if r == nil {
		b := make([]byte, 0, scratchSize)
		return &b
	}
	if r.scratch == nil {
		r.scratch = scratchPool.Get().(*[]byte)
		*r.scratch = (*r.scratch)[:0]
	}
	return r.scratch
}

// scratchSize fits a 2 KB prompt's text, its escaping and the render
// tool's report around both.
const scratchSize = 16 << 10

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, scratchSize); return &b }}

// releaseScratch returns the scratch buffer once the result is encoded.
func (r *Request) releaseScratch() {
	if r.scratch == nil {
		return
	}
	if cap(*r.scratch) <= maxPooledBuffer {
		scratchPool.Put(r.scratch)
	}
	r.scratch = nil
}

// ProgressToken returns the request's progress token, or nil.
func (r *Request) ProgressToken() json.RawMessage { return r.progressToken }

// Progress sends notifications/progress when the request asked for it.
func (r *Request) Progress(progress, total float64, message string) {
	if r.progressToken == nil {
		return
	}
	r.Session.send(r.route, NotificationProgress, &ProgressParams{
		ProgressToken: r.progressToken, Progress: progress, Total: total, Message: message})
}

// Log sends notifications/message on this request's stream when the
// session's level lets it through.
func (r *Request) Log(level Level, logger string, data any) {
	r.Session.log(r.route, level, logger, data)
}

// EndStream asks the transport to close the stream that carries this
// request's messages without ending the request, so a long-running handler
// does not hold a connection open (SEP-1699): the client reconnects and
// the messages sent after this call, the response included, reach it on
// the resumed stream. Messages sent before it are written first. It
// reports false, and does nothing, when the request's transport cannot
// resume streams.
func (r *Request) EndStream() bool {
	rs, ok := r.route.(Resumable)
	if !ok || !rs.Resumable() {
		return false
	}
	r.Session.offer(Outgoing{Route: r.route, EndStream: true})
	return true
}

// Call sends a server→client request (sampling, elicitation) tied to this
// request and waits for the client's answer, as Session.Call does.
func (r *Request) Call(ctx context.Context, method string, params, result any) error {
	return r.Session.call(ctx, r.route, method, params, result)
}

type inflight struct {
	ctx       *requestContext
	cancelled atomic.Bool
}

const (
	stateNew int32 = iota
	stateReady
	stateClosed
)

// Session is one client connection's protocol state and outbox.
type Session struct {
	id     string
	engine *Engine
	sink   Sink
	slots  chan struct{}

	// The outbox is a queue that costs nothing while a session is idle:
	// producers append under omu; whoever takes the writing flag swaps the
	// queue out whole and hands it to the sink. That is a writeLoop
	// goroutine, started on demand and woken through osignal, or for a
	// NonBlockingSink the producer itself, in flushInline.
	omu      sync.Mutex
	oq       []Outgoing
	ospare   []Outgoing
	osignal  chan struct{} // cap 1: there is something to write
	odrained chan struct{} // cap 1: the writer took a batch
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	closed   sync.Once
	// unwritten counts messages queued but not yet handed to the sink, so
	// Drain knows when everything has really been written.
	unwritten  atomic.Int64
	writing    atomic.Bool // the writing role is taken: a writeLoop runs, a flushInline writes, or the sink is being closed
	inline     bool        // the sink never blocks: write on the pushing goroutine
	recycle    bool        // the sink copies Data: encode responses into pooled buffers
	releases   bool        // the sink releases responses: the same, recycled by Release
	runHere    bool        // the sink's transport delivers on a goroutine per request: run quick ones there
	writerDone chan struct{}

	state      atomic.Int32
	logLevel   atomic.Int32
	greeted    atomic.Bool // OnInitialized ran
	lastActive atomic.Int64
	holds      atomic.Int32 // Hold calls not yet released: the janitor leaves the session alone

	mu         sync.Mutex
	version    string
	clientInfo Implementation
	clientCaps ClientCapabilities
	inflight   map[string]*inflight
	pending    map[int64]chan frame
	subs       map[string]struct{}
	values     map[rememberKey][]string
	nextCallID int64
}

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

// Context is cancelled when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

// Initialized reports whether initialize has been answered.
func (s *Session) Initialized() bool { return s.state.Load() == stateReady }

// ProtocolVersion returns the negotiated revision ("" before initialize).
func (s *Session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// ClientInfo returns the client's name and version.
func (s *Session) ClientInfo() Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientInfo
}

// ClientCapabilities returns what the client declared at initialize.
func (s *Session) ClientCapabilities() ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps
}

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
			// Touched first, so the janitor never sees the hold gone and the
			// last activity from before it.
			s.Touch()
			s.holds.Add(-1)
		})
	}
}

// Remember records a value the client used for name in scope (a template's
// variable), most recent first; argument completion offers them back.
func (s *Session) Remember(scope, name, value string) {
	if value == "" {
		return
	}
	key := rememberKey{scope, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = make(map[rememberKey][]string)
	}
	old := s.values[key]
	if len(old) > 0 && old[0] == value {
		return // the common case of a client repeating itself costs nothing
	}
	vals := make([]string, 0, len(old)+1)
	vals = append(vals, value)
	for _, v := range old {
		if v != value && len(vals) < 20 {
			vals = append(vals, v)
		}
	}
	s.values[key] = vals
}

// rememberKey is a key of remembered values in two parts, so callers
// need not join them into a new string on every request.
type rememberKey struct{ scope, name string }

// Remembered returns the values recorded for scope and name, most recent
// first.
func (s *Session) Remembered(scope, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.values[rememberKey{scope, name}]...)
}

// Subscribed reports whether the client subscribed to uri.
func (s *Session) Subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[uri]
	return ok
}

func (s *Session) subscribe(uri string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.subs, uri)
		return
	}
	if s.subs == nil {
		s.subs = make(map[string]struct{})
	}
	s.subs[uri] = struct{}{}
}

// Deliver hands one inbound frame to the session and returns how many
// responses it will produce on route (0 or 1). It never fails: a bad frame
// is answered with a JSON-RPC error and the session lives on. It blocks
// when the session already has its maximum of requests in flight, which is
// how a client that floods us is slowed down instead of buffered without end.
func (s *Session) Deliver(data []byte, route any) int {
	n, _ := s.deliver(data, route, false)
	return n
}

// DeliverJSON is Deliver for transports that refuse malformed JSON
// themselves (HTTP answers it with 400): a message that is not valid JSON
// is not answered on the session, and its parse error is returned instead.
// It spares those transports a validation pass of their own.
func (s *Session) DeliverJSON(data []byte, route any) (int, error) {
	return s.deliver(data, route, true)
}

func (s *Session) deliver(data []byte, route any, refuseMalformed bool) (int, error) {
	s.Touch()
	if s.state.Load() == stateClosed {
		return 0, nil
	}
	if max := s.engine.opts.MaxMessageSize; len(data) > max {
		s.replyErr(nullID, route, tooLarge(len(data), max))
		return 1, nil
	}
	f, answerID, err := decodeFrame(data)
	if err != nil {
		if fe := fault.As(err); refuseMalformed && fe != nil && fe.Code == CodeParseError {
			return 0, err
		}
		s.replyErr(answerID, route, err)
		return 1, nil
	}
	switch f.kind {
	case kindResponse:
		s.resolve(f)
		return 0, nil
	case kindNotification:
		s.notification(f)
		return 0, nil
	}
	if f.method == MethodInitialize {
		s.initialize(f, route)
		return 1, nil
	}
	m, ok := s.engine.methods[f.method]
	if !ok {
		s.replyErr(f.id, route, protocolError(CodeMethodNotFound, fmt.Sprintf("unknown method %q", f.method),
			"this server does not implement it", "see the capabilities returned by initialize"))
		return 1, nil
	}
	if !m.beforeInit && s.state.Load() != stateReady {
		s.replyErr(f.id, route, protocolError(CodeNotInitialized, fmt.Sprintf("%s before initialize", f.method),
			"only ping is allowed before the session is initialized", "send initialize first"))
		return 1, nil
	}
	key := idKey(f.id)
	s.mu.Lock()
	_, dup := s.inflight[key]
	s.mu.Unlock()
	if dup {
		s.replyErr(f.id, route, protocolError(CodeInvalidRequest, fmt.Sprintf("request id %s is already in use", f.id),
			"a request with this id is still in flight on this session", "use a fresh id for every request"))
		return 1, nil
	}
	select {
	case s.slots <- struct{}{}:
	case <-s.done:
		return 0, nil
	}
	ctx := newRequestContext(s.ctx, s.engine.opts.RequestTimeout)
	fl := &inflight{ctx: ctx}
	s.mu.Lock()
	s.inflight[key] = fl
	s.mu.Unlock()
	j := &job{s: s, m: m, fl: fl, key: key,
		req: Request{Session: s, Method: f.method, ID: f.id, Params: f.params, route: route}}
	var taken bool
	if m.quick && s.runHere {
		taken = s.engine.runInline(j)
	} else {
		taken = s.engine.enqueue(j)
	}
	if !taken {
		s.finish(j)
		<-s.slots
		s.replyErr(f.id, route, protocolError(CodeInvalidRequest, "the server is shutting down",
			"it no longer accepts requests", "reconnect once it is back"))
	}
	return 1, nil
}

func tooLarge(size, max int) error {
	return &fault.Error{Code: CodeMessageTooBig, What: fmt.Sprintf("message of %d bytes is too large", size),
		Why: fmt.Sprintf("the server accepts messages of at most %d bytes", max),
		How: "send smaller arguments, or raise --max-message-size", Details: map[string]any{"size": size, "max": max}}
}

// RejectTooLarge answers a message the transport refused to read whole
// because it exceeds the size cap; the session goes on.
func (s *Session) RejectTooLarge(size int, route any) {
	s.replyErr(nullID, route, tooLarge(size, s.engine.opts.MaxMessageSize))
}

func (s *Session) initialize(f frame, route any) {
	if !s.state.CompareAndSwap(stateNew, stateReady) {
		s.replyErr(f.id, route, protocolError(CodeInvalidRequest, "initialize was already done",
			"a session is initialized once", "start a new session to initialize again"))
		return
	}
	r := &Request{Session: s, Method: f.method, ID: f.id, Params: f.params, route: route}
	var p InitializeParams
	if err := r.Decode(&p); err != nil {
		s.state.Store(stateNew)
		s.replyErr(f.id, route, err)
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
	s.mu.Lock()
	s.version = res.ProtocolVersion
	s.clientInfo = p.ClientInfo
	s.clientCaps = caps
	s.mu.Unlock()
	data, err := encodeResponse(f.id, res, nil)
	if err != nil {
		s.engine.log.Error("encode initialize result", "err", err)
	}
	s.enqueue(Outgoing{Data: data, Route: route, Response: true})
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
			fl.cancelled.Store(true)
			fl.ctx.cancel()
		}
	case NotificationInitialized:
		if fn := s.engine.srv.OnInitialized; fn != nil && s.Initialized() && s.greeted.CompareAndSwap(false, true) {
			fn(s)
		}
	default:
		// roots/list_changed and anything unknown need no action; unknown
		// notifications must be ignored.
	}
}

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

// finish forgets a request; it reports whether the client cancelled it.
func (s *Session) finish(j *job) bool {
	s.mu.Lock()
	if s.inflight[j.key] == j.fl {
		delete(s.inflight, j.key)
	}
	s.mu.Unlock()
	j.fl.ctx.cancel()
	return j.fl.cancelled.Load()
}

func (s *Session) replyErr(id json.RawMessage, route any, err error) {
	data, encErr := encodeResponse(id, nil, ErrorObject(err))
	if encErr != nil {
		s.engine.log.Error("encode error response", "err", encErr)
	}
	s.enqueue(Outgoing{Data: data, Route: route, Response: true})
}

// outboxLimit bounds the messages waiting in a session's outbox that no
// in-flight slot accounts for (notifications, error replies).
func (s *Session) outboxLimit() int { return s.engine.opts.MaxInflightPerSession + 64 }

// push appends o to the outbox and sees it written: here and now for a
// NonBlockingSink, else by the writer, which it starts or wakes.
func (s *Session) push(o Outgoing) {
	s.unwritten.Add(1)
	s.omu.Lock()
	s.oq = append(s.oq, o)
	s.omu.Unlock()
	if s.inline {
		s.flushInline()
		return
	}
	if s.writing.CompareAndSwap(false, true) {
		go s.writeLoop()
		return
	}
	select {
	case s.osignal <- struct{}{}:
	default:
	}
}

// flushInline writes the outbox on the calling goroutine, for sinks that
// never block. Whoever holds the writing flag writes everything queued,
// including what others pushed meanwhile.
func (s *Session) flushInline() {
	for {
		if !s.writing.CompareAndSwap(false, true) {
			return // the holder will see our message
		}
		if !s.flush() || s.isDone() {
			s.finishWriter()
			return
		}
		s.writing.Store(false)
		if s.queued() == 0 && !s.isDone() {
			return
		}
	}
}

func (s *Session) queued() int {
	s.omu.Lock()
	defer s.omu.Unlock()
	return len(s.oq)
}

// enqueue puts a message in the outbox. Responses (release set) have room
// reserved by their in-flight slot and never wait; other messages wait
// while a client that is slow to read has the outbox full, which slows
// down only that client's reader or handler.
func (s *Session) enqueue(o Outgoing) bool {
	if !o.release {
		for s.queued() >= s.outboxLimit() {
			select {
			case <-s.odrained:
			case <-s.done:
				return false
			}
		}
	}
	select {
	case <-s.done:
		return false
	default:
	}
	s.push(o)
	return true
}

// Notify sends a notification to this session's client.
func (s *Session) Notify(method string, params any) error {
	return s.send(nil, method, params)
}

func (s *Session) send(route any, method string, params any) error {
	data, err := encodeRequest(-1, method, params)
	if err != nil {
		return err
	}
	s.offer(Outgoing{Data: data, Route: route})
	return nil
}

// offer queues an unsolicited message without ever blocking the caller: a
// client that stopped reading fills only its own outbox, and is closed.
func (s *Session) offer(o Outgoing) {
	select {
	case <-s.done:
		return
	default:
	}
	if s.queued() >= s.outboxLimit() {
		s.engine.log.Warn("closing a session that stopped reading", "session", s.id)
		s.Close()
		return
	}
	s.push(o)
}

func (s *Session) log(route any, level Level, logger string, data any) {
	if level < Level(s.logLevel.Load()) || s.state.Load() != stateReady {
		return
	}
	_ = s.send(route, NotificationMessage, &LoggingMessageParams{Level: level.String(), Logger: logger, Data: data})
}

// Log sends notifications/message when the session's level lets it through.
func (s *Session) Log(level Level, logger string, data any) { s.log(nil, level, logger, data) }

// Call sends a server→client request and waits for the answer, the
// session's end, ctx, or the engine's call timeout. When the call timeout or
// ctx's deadline ends the wait, the client is told the call is abandoned and
// the error is a REQUEST_TIMEOUT fault saying that the client did not answer.
func (s *Session) Call(ctx context.Context, method string, params, result any) error {
	return s.call(ctx, nil, method, params, result)
}

func (s *Session) call(ctx context.Context, route any, method string, params, result any) error {
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
	if !s.enqueue(Outgoing{Data: data, Route: route}) {
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
			s.abandonCall(route, id, "the request that asked was cancelled")
			return err
		}
	case <-s.done:
		return fmt.Errorf("%s: session closed before the client answered", method)
	case <-timer.C:
	}
	s.abandonCall(route, id, "no answer in time")
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
func (s *Session) abandonCall(route any, id int64, reason string) {
	_ = s.send(route, NotificationCancelled, &CancelledParams{RequestID: strconv.AppendInt(nil, id, 10), Reason: reason})
}

// writerLinger is how long a writer with nothing to write waits before it
// exits: a busy session keeps its writer, an idle one holds no goroutine.
const writerLinger = 250 * time.Millisecond

// writeLoop is the only writer to the sink while it runs, and at most one
// runs at a time (the writing flag; sinks that never block use flushInline
// instead). It hands the sink everything that is ready at once, so a burst
// of responses costs one write.
func (s *Session) writeLoop() {
	// The timer is not re-armed after every write, which cost a timer
	// update per message on a busy session: when it fires, the writer
	// looks at how long ago it last wrote and waits out the rest.
	idle := time.NewTimer(writerLinger)
	defer idle.Stop()
	var last time.Time
	for {
		if !s.flush() {
			s.finishWriter()
			return
		}
		select {
		case <-s.done:
			s.finishWriter()
			return
		default:
		}
		last = time.Now()
	wait:
		select {
		case <-s.osignal:
			continue
		case <-s.done:
			s.finishWriter()
			return
		case <-idle.C:
			if rest := writerLinger - time.Since(last); rest > 0 {
				idle.Reset(rest)
				goto wait
			}
		}
		idle.Reset(writerLinger) // for the next round, if the writer stays
		s.writing.Store(false)
		// A push between our last look and the Store saw a writer and only
		// signalled: look again, and carry on if we can take the role back.
		if s.queued() == 0 && !s.isDone() {
			return
		}
		if !s.writing.CompareAndSwap(false, true) {
			return // a new writer (or Close) took over
		}
	}
}

func (s *Session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// flush writes batches until the outbox is empty. false means the
// transport failed and the session was closed.
func (s *Session) flush() bool {
	for {
		s.omu.Lock()
		batch := s.oq
		s.oq, s.ospare = s.ospare[:0], nil
		s.omu.Unlock()
		if len(batch) == 0 {
			return true
		}
		select {
		case s.odrained <- struct{}{}:
		default:
		}
		err := s.sink.Send(batch)
		s.unwritten.Add(-int64(len(batch)))
		for i := range batch {
			if batch[i].release {
				<-s.slots
			}
			if b := batch[i].buf; b != nil && s.recycle {
				b.put() // a CopyingSink is done with it (a ReleasingSink's may be back in use)
			}
			batch[i] = Outgoing{}
		}
		if cap(batch) <= 64 {
			// Keep a small buffer for the next burst; let big ones go.
			s.omu.Lock()
			if s.ospare == nil {
				s.ospare = batch[:0]
			}
			s.omu.Unlock()
		}
		if err != nil {
			s.engine.log.Debug("session transport failed", "session", s.id, "err", err)
			s.Close()
			return false
		}
	}
}

// finishWriter closes the sink once the session is over. Whoever holds
// the writing role when the session ends calls it, exactly once.
func (s *Session) finishWriter() {
	s.sink.Close()
	close(s.writerDone)
}

// Drain waits until every admitted request has been answered and written,
// or ctx ends.
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

// Close ends the session: pending work is cancelled, late results are
// dropped, and the transport's sink is closed.
func (s *Session) Close() {
	s.closed.Do(func() {
		s.state.Store(stateClosed)
		s.cancel()
		close(s.done)
		s.engine.forget(s)
		if s.writing.CompareAndSwap(false, true) {
			// No writer is running to close the sink: do it here.
			s.finishWriter()
		}
	})
}
