package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/nats-io/nats.go"
	"github.com/sourcegraph/jsonrpc2"
)

// Defaults of RouterOptions.
const (
	DefaultMaxExchanges   = 1024
	DefaultChunkSize      = 64 << 10
	DefaultPingInterval   = 2 * time.Second
	DefaultMaxForwardBody = 64 << 20
	DefaultWriteTimeout   = 30 * time.Second
)

const (
	// missedPings silent ping intervals make a holder give up on its
	// forwarder, and a forwarder on its holder when pings time out.
	missedPings = 3
	// acceptTimeout bounds the wait for the holder to take an exchange: it
	// does so at once, before running anything, so a longer wait means the
	// message was lost on the way.
	acceptTimeout = 5 * time.Second
	// holdFlushTimeout bounds Hold's round trip to the server.
	holdFlushTimeout = 2 * time.Second
	// inboxBacklog is how many answer messages may wait for a forwarder's
	// client; beyond it NATS drops them (a slow consumer) and the gap in
	// their numbers aborts the response.
	inboxBacklog = 256
	// requestBacklog is how many forwarded requests may wait for the
	// holder's dispatcher, which only starts their goroutines.
	requestBacklog = 1024
)

// The wire format. Every message of an exchange carries its number in
// hdrSeq; requests and response heads are JSON in one NATS header, since
// HTTP header names are case-insensitive and NATS's are not.
const (
	hdrSeq     = "Fp-Seq"
	hdrRequest = "Fp-Request" // the request: wireRequest
	hdrControl = "Fp-Control" // on the accept message: where to ping and cancel
	hdrHead    = "Fp-Head"    // status and response headers: wireHead
	hdrEnd     = "Fp-End"     // endDone: the response is complete; endAbort: it never will be
	hdrOp      = "Fp-Op"      // on the control subject: opPing, opCancel or opBody

	endDone  = "1"
	endAbort = "abort"

	opPing   = "ping"
	opCancel = "cancel"
	opBody   = "body"

	pongAlive = "ok"
	pongGone  = "gone"
)

// forwardedHeaders are the request headers the HTTP transports read once a
// request has passed the forwarding replica's guard; nothing else crosses.
var forwardedHeaders = []string{"Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

type wireRequest struct {
	Method   string      `json:"method"`
	URI      string      `json:"uri"` // path and query
	Host     string      `json:"host"`
	Remote   string      `json:"remote,omitempty"`
	Header   http.Header `json:"header,omitempty"`
	Len      int         `json:"len"`      // of the whole body; the request message carries the first part
	Exchange string      `json:"exchange"` // the forwarder's id of the exchange
}

type wireHead struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
}

// RouterOptions configure a Router; zero values take the defaults.
type RouterOptions struct {
	// MaxExchanges bounds the forwarded requests this replica serves at
	// once (an open GET stream is one for its whole life); beyond it they
	// are answered 503 (default DefaultMaxExchanges).
	MaxExchanges int
	// ChunkSize is the most body bytes one message carries (default
	// DefaultChunkSize; never more than half the server's max payload).
	ChunkSize int
	// PingInterval spaces the forwarder's pings of the holder; missedPings
	// of them unanswered end the exchange on both sides (default
	// DefaultPingInterval).
	PingInterval time.Duration
	// MaxBodyBytes refuses forwarded bodies larger than this before
	// collecting them (default DefaultMaxForwardBody); the handler applies
	// its own, smaller cap.
	MaxBodyBytes int
	// WriteTimeout drops a forwarding client that has not taken a write
	// for this long (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Logger gets forwarding failures, never bodies (default: the Node's).
	Logger *slog.Logger
}

// Router carries requests for 2025-era sessions (Streamable HTTP's
// Mcp-Session-Id, the legacy transport's session_id) to the replica that
// holds the session, over NATS request/reply, and serves those that other
// replicas carry here.
//
// Each held session has a subject, Node.Subject("session", id), that only
// its holder subscribes to: a request published there with nobody
// listening gets NATS's "no responders" at once, which is how a forwarder
// learns that no replica holds the session (it ended, or its replica died)
// and answers 404.
//
// NATS is trusted infrastructure: a message on these subjects is executed
// as an HTTP request that has passed the security guard (Host, Origin,
// bearer token) of the replica that published it, and the holder does not
// check those again. Secure the NATS server with credentials and TLS
// (NATS_CREDS, NATS_CA, NATS_CERT) and give only replicas the right to
// publish under the prefix.
//
// An exchange: the forwarder picks a fresh inbox, then publishes the
// request (method, path and query, Host, forwardedHeaders, the body's first
// part) to the session's subject with the inbox as reply. The holder
// answers at once with an accept message naming a control subject, to
// which the forwarder sends the rest of the body and then pings; the
// holder runs the handler and streams its response to the inbox: a head
// (status and headers), body parts on every Flush and every ChunkSize
// bytes, an end. Every message is numbered, so a lost one aborts the
// response rather than corrupting it. Pings answered "gone", or by no
// responders, end the client's response; a holder whose pings stop, or
// that receives cancel (the client went away), cancels the handler's
// context.
//
// Hold, Forward and Connected may be called concurrently. Forward owns
// the ResponseWriter until it returns; the handler given to Serve runs on
// goroutines of the Router, one per exchange, with a ResponseWriter that
// is not safe for concurrent use (as net/http's is not).
type Router struct {
	node *Node
	nc   *nats.Conn
	log  *slog.Logger
	opts RouterOptions

	id        string // of this Router: control subjects are its own
	ctlPrefix string
	handler   atomic.Pointer[http.Handler]
	reqs      chan *nats.Msg // what held sessions' subjects deliver
	ctlSub    *nats.Subscription
	// Answers come to one wildcard inbox, routed by its last token: a
	// subscription per exchange would cost the server a SUB and an UNSUB
	// per request.
	inboxPrefix string
	inboxSub    *nats.Subscription
	waitMu      sync.Mutex
	waiting     map[string]chan *nats.Msg
	sem         chan struct{} // one token per exchange served
	ctx         context.Context
	cancel      context.CancelFunc
	stop        chan struct{}
	wg          sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	holds     map[string]*nats.Subscription
	exchanges map[string]*exchange
}

// NewRouter starts serving forwarded requests on n's connection; the
// caller then gives it the handler (Serve) and the sessions it holds
// (Hold), and closes it before n.
func NewRouter(n *Node, opts RouterOptions) (*Router, error) {
	if opts.MaxExchanges <= 0 {
		opts.MaxExchanges = DefaultMaxExchanges
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxForwardBody
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Logger == nil {
		opts.Logger = n.log
	}
	rt := &Router{node: n, nc: n.nc, log: opts.Logger, opts: opts, id: randomHex(8),
		reqs: make(chan *nats.Msg, requestBacklog), sem: make(chan struct{}, opts.MaxExchanges),
		stop: make(chan struct{}), holds: map[string]*nats.Subscription{}, exchanges: map[string]*exchange{},
		waiting: map[string]chan *nats.Msg{}}
	rt.ctlPrefix = n.Subject("fwd", rt.id) + "."
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	sub, err := rt.nc.Subscribe(rt.ctlPrefix+"*", rt.control)
	if err != nil {
		rt.cancel()
		return nil, fmt.Errorf("cluster: subscribe to forwarding control: %w", err)
	}
	rt.ctlSub = sub
	rt.inboxPrefix = rt.nc.NewInbox() + "."
	if rt.inboxSub, err = rt.nc.Subscribe(rt.inboxPrefix+"*", rt.answer); err != nil {
		_ = sub.Unsubscribe()
		rt.cancel()
		return nil, fmt.Errorf("cluster: subscribe to forwarded answers: %w", err)
	}
	rt.wg.Add(1)
	go rt.dispatch()
	return rt, nil
}

// Serve sets the handler forwarded requests run on: the HTTP surface
// behind its security guard. Call it once, before the first Hold; until
// then forwarded requests are refused with 503.
func (rt *Router) Serve(h http.Handler) {
	if !rt.handler.CompareAndSwap(nil, &h) {
		panic("cluster: Router.Serve called twice")
	}
}

// Connected reports whether the NATS link is up, so that sessions held
// elsewhere can be reached.
func (rt *Router) Connected() bool { return rt.nc.IsConnected() }

// Hold makes the session id reachable from the other replicas until
// release is called, and returns once the NATS server has the
// subscription: a client that learns the id after Hold returns finds it
// wherever its next request lands. With the link down it returns an error
// and, when the subscription could be kept, a release as well: NATS
// renews it on reconnecting, so the session becomes reachable then.
func (rt *Router) Hold(id string) (release func(), err error) {
	if !validToken(id) {
		return nil, fmt.Errorf("cluster: hold session %q: not a subject token", id)
	}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, errors.New("cluster: hold session: the router is closed")
	}
	if _, dup := rt.holds[id]; dup {
		rt.mu.Unlock()
		return nil, fmt.Errorf("cluster: hold session %s: already held", id)
	}
	sub, err := rt.nc.ChanSubscribe(rt.node.Subject("session", id), rt.reqs)
	if err != nil {
		rt.mu.Unlock()
		return nil, fmt.Errorf("cluster: hold session: %w", err)
	}
	rt.holds[id] = sub
	rt.mu.Unlock()
	release = sync.OnceFunc(func() {
		rt.mu.Lock()
		if rt.holds[id] == sub {
			delete(rt.holds, id)
		}
		rt.mu.Unlock()
		_ = sub.Unsubscribe()
	})
	// A flush while reconnecting would wait its whole timeout for a server
	// that is not there.
	if !rt.nc.IsConnected() {
		return release, errors.New("cluster: hold session: NATS is not connected")
	}
	if err := rt.nc.FlushTimeout(holdFlushTimeout); err != nil {
		return release, fmt.Errorf("cluster: hold session: %w", err)
	}
	return release, nil
}

// Close stops serving forwarded requests: it cancels those running, waits
// for their handlers to return, and lets go of every held session. Close
// the Router before its Node.
func (rt *Router) Close() {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return
	}
	rt.closed = true
	holds := rt.holds
	rt.holds = map[string]*nats.Subscription{}
	rt.mu.Unlock()
	for _, sub := range holds {
		_ = sub.Unsubscribe()
	}
	_ = rt.ctlSub.Unsubscribe()
	_ = rt.inboxSub.Unsubscribe()
	close(rt.stop)
	rt.cancel()
	rt.wg.Wait()
}

// dispatch starts an exchange for each request delivered to a held
// session, within the bound.
func (rt *Router) dispatch() {
	defer rt.wg.Done()
	for {
		select {
		case <-rt.stop:
			return
		case m := <-rt.reqs:
			if m.Reply == "" {
				continue
			}
			rt.mu.Lock()
			closed := rt.closed
			if !closed {
				rt.wg.Add(1)
			}
			rt.mu.Unlock()
			if closed {
				return
			}
			select {
			case rt.sem <- struct{}{}:
				go rt.serve(m)
			default:
				rt.wg.Done()
				rt.log.Warn("refused a forwarded request: too many at once", "max", rt.opts.MaxExchanges)
				rt.refuse(m.Reply, http.StatusServiceUnavailable, &fault.Error{Code: fault.Internal,
					What:       "too many forwarded requests",
					Why:        fmt.Sprintf("the replica holding the session already serves its maximum of %d requests from other replicas", rt.opts.MaxExchanges),
					How:        "retry later, or send requests to the replica that holds the session",
					RetryAfter: 5 * time.Second})
			}
		}
	}
}

// refuse answers an exchange it will not run, in one message.
func (rt *Router) refuse(reply string, status int, f *fault.Error) {
	x := &exchange{rt: rt, reply: reply, ctx: context.Background(), cancel: func() {}}
	w := &fwdWriter{x: x, hdr: http.Header{}, chunk: rt.chunkSize()}
	writeError(w, status, f)
	w.finish()
}

// answer hands a message from a holder to the Forward waiting for it.
// It never blocks: a Forward whose client reads too slowly loses the
// message, and the gap in the numbers aborts its response.
func (rt *Router) answer(m *nats.Msg) {
	token := strings.TrimPrefix(m.Subject, rt.inboxPrefix)
	rt.waitMu.Lock()
	ch := rt.waiting[token]
	rt.waitMu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- m:
	default:
		rt.log.Warn("a forwarded answer's client reads too slowly: dropped part of it", "backlog", inboxBacklog)
	}
}

// control serves the control subjects of the exchanges running here.
func (rt *Router) control(m *nats.Msg) {
	xid := strings.TrimPrefix(m.Subject, rt.ctlPrefix)
	rt.mu.Lock()
	x := rt.exchanges[xid]
	rt.mu.Unlock()
	switch m.Header.Get(hdrOp) {
	case opPing:
		if x == nil {
			_ = m.Respond([]byte(pongGone))
			return
		}
		x.lastPing.Store(time.Now().UnixNano())
		_ = m.Respond([]byte(pongAlive))
	case opCancel:
		if x != nil {
			x.cancel()
		}
	case opBody:
		if x == nil {
			return
		}
		select {
		case x.body <- m:
		default:
			// More parts than the announced length: not a forwarder of ours.
			x.cancel()
		}
	}
}

// exchange is one forwarded request served here.
type exchange struct {
	rt       *Router
	reply    string
	ctx      context.Context
	cancel   context.CancelFunc
	body     chan *nats.Msg
	lastPing atomic.Int64 // unix nanoseconds

	mu  sync.Mutex
	seq int
}

// publish sends the exchange's next message to the forwarder.
func (x *exchange) publish(m *nats.Msg) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	m.Subject = x.reply
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header.Set(hdrSeq, strconv.Itoa(x.seq))
	x.seq++
	if err := x.rt.nc.PublishMsg(m); err != nil {
		return fmt.Errorf("cluster: forwarded response: %w", err)
	}
	return nil
}

func (rt *Router) serve(m *nats.Msg) {
	defer func() {
		<-rt.sem
		rt.wg.Done()
	}()
	var req wireRequest
	if err := json.Unmarshal([]byte(m.Header.Get(hdrRequest)), &req); err != nil || !validToken(req.Exchange) ||
		!strings.HasPrefix(req.URI, "/") || req.Len < len(m.Data) {
		rt.log.Warn("dropped a malformed forwarded request", "subject", m.Subject)
		rt.refuse(m.Reply, http.StatusBadGateway, &fault.Error{Code: fault.Internal,
			What: "malformed forwarded request", Why: "the replica that forwarded it speaks another version", How: "run one version on every replica"})
		return
	}
	if req.Len > rt.opts.MaxBodyBytes {
		rt.refuse(m.Reply, http.StatusRequestEntityTooLarge, &fault.Error{Code: mcp.CodeBodyTooLarge,
			What: "request body too large", Why: fmt.Sprintf("a forwarded body may hold at most %d bytes", rt.opts.MaxBodyBytes),
			How: "send smaller arguments"})
		return
	}
	hp := rt.handler.Load()
	if hp == nil {
		rt.refuse(m.Reply, http.StatusServiceUnavailable, &fault.Error{Code: fault.Internal,
			What: "the replica holding the session is not serving yet", Why: "it is starting", How: "retry",
			RetryAfter: time.Second})
		return
	}
	ctx, cancel := context.WithCancel(rt.ctx)
	defer cancel()
	parts := 0
	if rest := req.Len - len(m.Data); rest > 0 && len(m.Data) > 0 {
		parts = (rest + len(m.Data) - 1) / len(m.Data)
	} else if rest > 0 {
		parts = 1 // cannot happen with our forwarders; the length check below catches the rest
	}
	x := &exchange{rt: rt, reply: m.Reply, ctx: ctx, cancel: cancel, body: make(chan *nats.Msg, parts)}
	x.lastPing.Store(time.Now().UnixNano())
	rt.mu.Lock()
	if _, dup := rt.exchanges[req.Exchange]; dup {
		rt.mu.Unlock()
		return
	}
	rt.exchanges[req.Exchange] = x
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.exchanges, req.Exchange)
		rt.mu.Unlock()
	}()
	accept := nats.NewMsg(m.Reply)
	accept.Header.Set(hdrControl, rt.ctlPrefix+req.Exchange)
	if x.publish(accept) != nil {
		return
	}
	body, ok := x.collect(m.Data, req.Len)
	if !ok {
		return
	}
	rt.wg.Add(1)
	go x.watch()

	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URI, bytes.NewReader(body))
	if err != nil {
		rt.log.Warn("dropped a malformed forwarded request", "error", err)
		x.publish(&nats.Msg{Header: nats.Header{hdrEnd: {endAbort}}})
		return
	}
	hr.RequestURI = req.URI
	hr.Host = req.Host
	hr.RemoteAddr = req.Remote
	for _, k := range forwardedHeaders {
		if v := req.Header[k]; len(v) > 0 {
			hr.Header[k] = v
		}
	}
	w := &fwdWriter{x: x, hdr: http.Header{}, chunk: rt.chunkSize()}
	if rt.run(*hp, w, hr) {
		w.finish()
	} else {
		x.publish(&nats.Msg{Header: nats.Header{hdrEnd: {endAbort}}})
	}
}

// run serves hr, reporting false when the handler panicked: net/http would
// have recovered it for a local request, so it must not end the process
// here either.
func (rt *Router) run(h http.Handler, w http.ResponseWriter, hr *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler {
				rt.log.Error("forwarded request: handler panicked", "path", hr.URL.Path, "panic", p)
			}
		}
	}()
	h.ServeHTTP(w, hr)
	return true
}

// collect gathers the body parts that follow the request message.
func (x *exchange) collect(first []byte, n int) ([]byte, bool) {
	if len(first) == n {
		return first, true
	}
	body := make([]byte, 0, n)
	body = append(body, first...)
	timer := time.NewTimer(acceptTimeout)
	defer timer.Stop()
	for next := 1; len(body) < n; next++ {
		select {
		case m := <-x.body:
			if m.Header.Get(hdrSeq) != strconv.Itoa(next) || len(body)+len(m.Data) > n {
				x.rt.log.Warn("forwarded request: lost a part of the body", "exchange", x.reply)
				x.publish(&nats.Msg{Header: nats.Header{hdrEnd: {endAbort}}})
				return nil, false
			}
			body = append(body, m.Data...)
		case <-x.ctx.Done():
			return nil, false
		case <-timer.C:
			x.publish(&nats.Msg{Header: nats.Header{hdrEnd: {endAbort}}})
			return nil, false
		}
	}
	return body, true
}

// watch cancels the exchange when its forwarder's pings stop.
func (x *exchange) watch() {
	defer x.rt.wg.Done()
	every := x.rt.opts.PingInterval
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-x.ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, x.lastPing.Load())) > missedPings*every {
				x.rt.log.Debug("forwarded request: the forwarding replica stopped pinging; cancelled")
				x.cancel()
				return
			}
		}
	}
}

func (rt *Router) chunkSize() int {
	c := rt.opts.ChunkSize
	// Headers ride in the same message as a part: half the max payload
	// leaves them room.
	if mp := int(rt.nc.MaxPayload()); mp > 0 && c > mp/2 {
		c = mp / 2
	}
	return c
}

// fwdWriter is the ResponseWriter of a forwarded request: what the handler
// writes goes to the forwarder in numbered messages, on every Flush and
// every chunk bytes.
type fwdWriter struct {
	x        *exchange
	hdr      http.Header
	chunk    int
	status   int
	headSent bool
	buf      []byte
	err      error
}

var _ http.ResponseWriter = (*fwdWriter)(nil)

func (w *fwdWriter) Header() http.Header { return w.hdr }

func (w *fwdWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
}

func (w *fwdWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n := len(p)
	for len(p) > 0 {
		k := min(w.chunk-len(w.buf), len(p))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) >= w.chunk {
			if err := w.send(false); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// FlushError sends what was written; http.ResponseController finds it.
// It fails once the forwarder is gone, which ends streaming handlers.
func (w *fwdWriter) FlushError() error {
	if w.err != nil {
		return w.err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.send(false)
}

// Flush is FlushError for handlers that use http.Flusher.
func (w *fwdWriter) Flush() { _ = w.FlushError() }

func (w *fwdWriter) finish() {
	if w.err != nil {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = w.send(true)
}

func (w *fwdWriter) send(end bool) error {
	if err := w.x.ctx.Err(); err != nil {
		w.err = fmt.Errorf("cluster: the forwarding replica is gone: %w", err)
		return w.err
	}
	if w.headSent && len(w.buf) == 0 && !end {
		return nil
	}
	m := &nats.Msg{Header: nats.Header{}, Data: w.buf}
	if !w.headSent {
		head, err := json.Marshal(wireHead{Status: w.status, Header: w.hdr})
		if err != nil {
			w.err = fmt.Errorf("cluster: encode response head: %w", err)
			return w.err
		}
		m.Header.Set(hdrHead, string(head))
		w.headSent = true
	}
	if end {
		m.Header.Set(hdrEnd, endDone)
	}
	if err := w.x.publish(m); err != nil {
		w.err = err
		w.x.cancel()
		return err
	}
	// PublishMsg copied the data into the connection's buffer.
	w.buf = w.buf[:0]
	return nil
}

// Forward carries r, whose body the caller has read (bounded) into body,
// to the replica holding session id, and writes its response to w as it
// arrives, flushing as the holder flushes. It reports false, having
// written nothing, when no replica holds the session or NATS is down: the
// caller answers as it does for an unknown session. Otherwise it has
// answered: with the holder's response, or an error when the exchange
// failed before the response began. A response cut off after it began is
// ended as it stands when it is an event stream (the client reconnects),
// and aborted otherwise (panic(http.ErrAbortHandler)), so that a truncated
// body is never taken for a whole one. When r's context ends (the client
// went away) Forward tells the holder, whose handler's context is then
// cancelled, and returns.
func (rt *Router) Forward(w http.ResponseWriter, r *http.Request, id string, body []byte) (held bool) {
	if !validToken(id) || !rt.nc.IsConnected() {
		return false
	}
	chunk := rt.chunkSize()
	xid := randomHex(12)
	inbox := rt.inboxPrefix + xid
	ch := make(chan *nats.Msg, inboxBacklog)
	rt.waitMu.Lock()
	rt.waiting[xid] = ch
	rt.waitMu.Unlock()
	defer func() {
		rt.waitMu.Lock()
		delete(rt.waiting, xid)
		rt.waitMu.Unlock()
	}()
	wr := wireRequest{Method: r.Method, URI: r.URL.RequestURI(), Host: r.Host, Remote: r.RemoteAddr,
		Header: http.Header{}, Len: len(body), Exchange: xid}
	for _, k := range forwardedHeaders {
		if v := r.Header[k]; len(v) > 0 {
			wr.Header[k] = v
		}
	}
	head, err := json.Marshal(wr)
	if err != nil {
		return false
	}
	first := body[:min(len(body), chunk)]
	m := &nats.Msg{Subject: rt.node.Subject("session", id), Reply: inbox, Header: nats.Header{hdrRequest: {string(head)}}, Data: first}
	if err := rt.nc.PublishMsg(m); err != nil {
		rt.log.Warn("cannot forward a session request", "error", err)
		return false
	}
	f := &forwarding{rt: rt, w: w, r: r, rc: http.NewResponseController(w), ch: ch, body: body[len(first):], chunk: chunk}
	return f.run()
}

// forwarding is Forward's side of one exchange.
type forwarding struct {
	rt    *Router
	w     http.ResponseWriter
	r     *http.Request
	rc    *http.ResponseController
	ch    chan *nats.Msg
	body  []byte // still to send
	chunk int

	ctl      string // the holder's control subject, once accepted
	next     int    // the number the next message must carry
	head     bool   // the response's head is written
	stream   bool   // it is an event stream
	deadline bool   // a write deadline is armed
}

// outcome of one message.
type outcome int

const (
	more outcome = iota
	done
	broken
)

func (f *forwarding) run() bool {
	accept := time.NewTimer(acceptTimeout)
	defer accept.Stop()
	defer func() {
		if f.deadline {
			_ = f.rc.SetWriteDeadline(time.Time{})
		}
	}()
	pingCtx, stopPings := context.WithCancel(context.Background())
	gone := make(chan struct{})
	var pinger sync.WaitGroup
	defer func() {
		stopPings()
		pinger.Wait()
	}()
	for {
		select {
		case m := <-f.ch:
			if f.next == 0 && len(m.Data) == 0 && m.Header.Get("Status") == "503" {
				return false // no responders: nobody holds the session
			}
			switch f.handle(m) {
			case done:
				return true
			case broken:
				return f.fail("lost part of the response on the way")
			}
			if f.ctl != "" && f.next == 1 {
				accept.Stop()
				if !f.sendBody() {
					return f.fail("could not send the request body")
				}
				pinger.Add(1)
				go func() {
					defer pinger.Done()
					f.ping(pingCtx, gone)
				}()
			}
		case <-accept.C:
			if f.next == 0 {
				f.rt.log.Warn("a forwarded request was not taken up by the replica holding its session", "within", acceptTimeout)
				f.errorHead(http.StatusGatewayTimeout, "the replica holding the session did not take the request up",
					fmt.Sprintf("no answer within %s: the link between the replicas lost it", acceptTimeout))
				return true
			}
		case <-gone:
			// What the holder sent before it went may still be queued,
			// its end among it.
		drain:
			for {
				select {
				case m := <-f.ch:
					switch f.handle(m) {
					case done:
						return true
					case broken:
						return f.fail("lost part of the response on the way")
					}
				default:
					break drain
				}
			}
			return f.fail("the replica holding the session went away")
		case <-f.r.Context().Done():
			f.cancelHolder()
			return true
		}
	}
}

// handle processes one message from the holder.
func (f *forwarding) handle(m *nats.Msg) outcome {
	if m.Header.Get(hdrSeq) != strconv.Itoa(f.next) {
		return broken
	}
	f.next++
	if c := m.Header.Get(hdrControl); c != "" && f.next == 1 {
		f.ctl = c
		return more
	}
	if h := m.Header.Get(hdrHead); h != "" && !f.head {
		var wh wireHead
		if json.Unmarshal([]byte(h), &wh) != nil || wh.Status < 100 || wh.Status > 999 {
			return broken
		}
		dst := f.w.Header()
		for k, v := range wh.Header {
			dst[k] = v
		}
		f.stream = strings.HasPrefix(dst.Get("Content-Type"), "text/event-stream")
		f.arm()
		f.w.WriteHeader(wh.Status)
		f.head = true
	}
	end := m.Header.Get(hdrEnd)
	if end == endAbort || !f.head {
		return broken
	}
	if len(m.Data) > 0 {
		f.arm()
		if _, err := f.w.Write(m.Data); err != nil {
			f.cancelHolder()
			return done // the client is gone: nobody to tell
		}
	}
	if end == endDone {
		return done
	}
	f.arm()
	if f.rc.Flush() != nil {
		f.cancelHolder()
		return done
	}
	return more
}

func (f *forwarding) arm() {
	f.deadline = true
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.rt.opts.WriteTimeout))
}

// sendBody sends the body's parts after the first to the holder.
func (f *forwarding) sendBody() bool {
	for seq := 1; len(f.body) > 0; seq++ {
		part := f.body[:min(len(f.body), f.chunk)]
		f.body = f.body[len(part):]
		m := &nats.Msg{Subject: f.ctl, Header: nats.Header{hdrOp: {opBody}, hdrSeq: {strconv.Itoa(seq)}}, Data: part}
		if f.rt.nc.PublishMsg(m) != nil {
			return false
		}
	}
	return true
}

// ping asks the holder every interval whether the exchange is alive, and
// closes gone when it is not.
func (f *forwarding) ping(ctx context.Context, gone chan<- struct{}) {
	every := f.rt.opts.PingInterval
	t := time.NewTicker(every)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		resp, err := f.rt.nc.RequestMsgWithContext(pctx, &nats.Msg{Subject: f.ctl, Header: nats.Header{hdrOp: {opPing}}})
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrConnectionClosed),
			err == nil && string(resp.Data) != pongAlive:
			close(gone)
			return
		case err != nil:
			if missed++; missed >= missedPings {
				close(gone)
				return
			}
		default:
			missed = 0
		}
	}
}

// cancelHolder tells the holder its client went away.
func (f *forwarding) cancelHolder() {
	if f.ctl != "" {
		_ = f.rt.nc.PublishMsg(&nats.Msg{Subject: f.ctl, Header: nats.Header{hdrOp: {opCancel}}})
	}
}

// fail ends an exchange that broke: an error when nothing was written yet;
// otherwise an event stream just ends, and anything else is aborted.
func (f *forwarding) fail(why string) bool {
	f.cancelHolder()
	f.rt.log.Warn("a forwarded request failed", "path", f.r.URL.Path, "why", why)
	if !f.head {
		f.errorHead(http.StatusBadGateway, "the forwarded request failed", why)
		return true
	}
	if f.stream {
		return true
	}
	panic(http.ErrAbortHandler)
}

func (f *forwarding) errorHead(status int, what, why string) {
	f.arm()
	writeError(f.w, status, &fault.Error{Code: fault.Internal, What: what, Why: why,
		How: "retry; if it keeps failing, start a new session"})
	f.head = true
}

// writeError writes the JSON-RPC error body the HTTP transports write
// (httpx.WriteError, which this package cannot import).
func writeError(w http.ResponseWriter, status int, f *fault.Error) {
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *struct{}       `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{JSONRPC: "2.0", Error: mcp.ErrorObject(f)})
	if err != nil {
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	h := w.Header()
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds()+0.999)))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
