package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/nats-io/nats.go"
)

// The holder's side of an exchange: the requests other replicas forward
// to the sessions held here, run on the handler and answered in parts.

// dispatch starts an exchange for each request delivered to a held
// session, within the bound.
func (rt *Router) dispatch() {
	defer rt.wg.Done()
	for {
		select {
		case <-rt.stop:
			return
		case m := <-rt.reqs:
			// A message no replica signed takes no slot and gets no
			// answer: it is dropped here, unread, and counted.
			if m.Reply == "" || rt.node.verify(m) != nil {
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
					How:        "retry later, or send requests to the replica that holds the session; an operator raises the bound with --max-forwarded on every replica",
					RetryAfter: 5 * time.Second})
			}
		}
	}
}

// overForwardBound is the refusal of an exchange over the bound of one
// session or one client (whose is "session" or "client", as its flag
// --max-forwarded-per-WHOSE names it).
func overForwardBound(whose string, most int, free string) *fault.Error {
	flag := "max-forwarded-per-" + whose
	return &fault.Error{Code: fault.RateLimited,
		What: "too many forwarded requests for this " + whose,
		Why: fmt.Sprintf("the replica holding the session serves at most %d requests of one %s forwarded from other replicas at once "+
			"(an open event stream counts for as long as it is open), and this %s has that many", most, whose, whose),
		How:        free + "; an operator raises the bound with --" + flag + " on every replica",
		RetryAfter: 5 * time.Second,
		Details:    map[string]any{"limit": flag, "max": most}}
}

// take counts an exchange against its session's and its client's bounds,
// or says which one it is over.
func (rt *Router) take(session, client string) (release func(), refused *fault.Error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case rt.perSession[session] >= rt.opts.MaxExchangesPerSession:
		return nil, overForwardBound("session", rt.opts.MaxExchangesPerSession,
			"close the streams this session no longer reads and retry")
	case rt.perClient[client] >= rt.opts.MaxExchangesPerClient:
		return nil, overForwardBound("client", rt.opts.MaxExchangesPerClient,
			"close the streams and sessions no longer used and retry")
	}
	rt.perSession[session]++
	rt.perClient[client]++
	return func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.perSession[session]--; rt.perSession[session] == 0 {
			delete(rt.perSession, session)
		}
		if rt.perClient[client]--; rt.perClient[client] == 0 {
			delete(rt.perClient, client)
		}
	}, nil
}

// refuse answers an exchange it will not run, in one message.
func (rt *Router) refuse(reply string, status int, f *fault.Error) {
	x := &exchange{rt: rt, reply: reply, ctx: context.Background(), cancel: func() {}}
	w := &fwdWriter{x: x, hdr: http.Header{}, chunk: rt.chunkSize()}
	writeError(w, status, f)
	w.finish()
}

// control serves the control subjects of the exchanges running here.
func (rt *Router) control(m *nats.Msg) {
	xid := strings.TrimPrefix(m.Subject, rt.ctlPrefix)
	if rt.node.verify(m) != nil {
		return
	}
	rt.mu.Lock()
	x := rt.exchanges[xid]
	rt.mu.Unlock()
	c, err := decodeControl(m.Header, m.Data)
	if err != nil {
		rt.log.Warn("refused a malformed forwarding control message", "subject", m.Subject, "error", err)
		if x != nil {
			x.bodyFailed(err)
		}
		return
	}
	switch c.Op {
	case opPing:
		pong := pongGone
		if x != nil {
			x.lastPing.Store(time.Now().UnixNano())
			pong = pongAlive
		}
		if m.Reply != "" {
			_ = rt.node.publish(&nats.Msg{Subject: m.Reply, Data: []byte(pong)})
		}
	case opCancel:
		if x != nil {
			x.cancel()
		}
	case opBody:
		if x != nil {
			x.addBody(m.Subject, c.Seq, c.Data)
		}
	}
}

// exchange is one forwarded request served here.
type exchange struct {
	rt       *Router
	reply    string
	ctx      context.Context
	cancel   context.CancelFunc
	lastPing atomic.Int64 // unix nanoseconds

	// The body's parts arrive on the control subject's goroutine and are
	// reassembled there; collect waits for the one result.
	bodyMu   sync.Mutex
	body     *bodyParts // nil once the result is sent
	bodyDone chan bodyResult

	mu  sync.Mutex
	seq int
}

type bodyResult struct {
	body []byte
	err  error
}

// publish sends a as the exchange's next message to the forwarder. A
// frame that cannot be encoded (a head over the cap) goes as an abort, so
// the forwarder is told at once rather than by its pings.
func (x *exchange) publish(a answerFrame) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	a.Seq = x.seq
	m, err := a.msg(x.reply)
	if err != nil {
		x.rt.log.Warn("aborted a forwarded response", "subject", x.reply, "error", err)
		m, _ = answerFrame{Seq: a.Seq, End: endAbort}.msg(x.reply)
	}
	x.seq++
	if perr := x.rt.node.publish(m); perr != nil {
		return fmt.Errorf("cluster: forwarded response: %w", perr)
	}
	return err
}

// addBody adds a body part that arrived on subject.
func (x *exchange) addBody(subject string, seq int, data []byte) {
	x.bodyMu.Lock()
	defer x.bodyMu.Unlock()
	if x.body == nil {
		// More parts than the declared length: not a forwarder of ours.
		x.rt.log.Warn("refused a forwarded body part: the body is complete", "subject", subject)
		x.cancel()
		return
	}
	if err := x.body.add(seq, data); err != nil {
		x.rt.log.Warn("refused a forwarded body part", "subject", subject, "error", err)
		x.body = nil
		x.bodyDone <- bodyResult{err: err}
		return
	}
	if x.body.complete() {
		x.bodyDone <- bodyResult{body: x.body.buf}
		x.body = nil
	}
}

// bodyFailed ends the body's collection with err, if it is still under way.
func (x *exchange) bodyFailed(err error) {
	x.bodyMu.Lock()
	defer x.bodyMu.Unlock()
	if x.body != nil {
		x.body = nil
		x.bodyDone <- bodyResult{err: err}
	}
}

func (rt *Router) serve(m *nats.Msg) {
	defer func() {
		<-rt.sem
		rt.wg.Done()
	}()
	req, err := decodeRequest(m.Header, m.Data, rt.opts.MaxBodyBytes)
	switch {
	case errors.Is(err, errBodyTooLarge):
		rt.log.Warn("refused a forwarded request", "subject", m.Subject, "error", err)
		rt.refuse(m.Reply, http.StatusRequestEntityTooLarge, &fault.Error{Code: mcp.CodeBodyTooLarge,
			What: "request body too large",
			Why: fmt.Sprintf("the replica holding the session takes forwarded bodies of at most %d bytes, and this one declares %d",
				rt.opts.MaxBodyBytes, req.Len),
			How:     "send smaller arguments, or give every replica the same --max-message-size",
			Details: map[string]any{"size": req.Len, "max": rt.opts.MaxBodyBytes}})
		return
	case err != nil:
		rt.log.Warn("refused a malformed forwarded request", "subject", m.Subject, "error", err)
		rt.refuse(m.Reply, http.StatusBadGateway, &fault.Error{Code: fault.Internal,
			What: "malformed forwarded request", Why: "the replica that forwarded it speaks another version", How: "run one version on every replica"})
		return
	}
	release, refusal := rt.take(strings.TrimPrefix(m.Subject, rt.node.Subject("session")+"."), req.Client)
	if refusal != nil {
		rt.log.Warn("refused a forwarded request: "+refusal.What, "subject", m.Subject, "client", req.Client)
		rt.refuse(m.Reply, http.StatusServiceUnavailable, refusal)
		return
	}
	defer release()
	hp := rt.handler.Load()
	if hp == nil {
		rt.refuse(m.Reply, http.StatusServiceUnavailable, &fault.Error{Code: fault.Internal,
			What: "the replica holding the session is not serving yet", Why: "it is starting", How: "retry",
			RetryAfter: time.Second})
		return
	}
	ctx := rt.ctx
	if m := req.Member.member(); m != nil {
		// Who asked reaches the handler as it would on the forwarder: the
		// HTTP surface binds it to the session's owner (a session of
		// another member, or of none, is not found) and the engine hands
		// it to the request's handler and to the audit log.
		ctx = auth.WithMember(ctx, m)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x := &exchange{rt: rt, reply: m.Reply, ctx: ctx, cancel: cancel}
	body := m.Data
	if parts := newBodyParts(m.Data, req.Len); !parts.complete() {
		x.body, x.bodyDone = parts, make(chan bodyResult, 1)
	}
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
	if x.publish(answerFrame{Control: rt.ctlPrefix + req.Exchange}) != nil {
		return
	}
	if x.bodyDone != nil {
		var ok bool
		if body, ok = x.collect(); !ok {
			return
		}
	}
	rt.wg.Add(1)
	go x.watch()

	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URI, bytes.NewReader(body))
	if err != nil {
		rt.log.Warn("dropped a malformed forwarded request", "error", err)
		x.publish(answerFrame{End: endAbort})
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
		x.publish(answerFrame{End: endAbort})
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

// collect waits for the body parts that follow the request message.
func (x *exchange) collect() ([]byte, bool) {
	timer := time.NewTimer(acceptTimeout)
	defer timer.Stop()
	select {
	case r := <-x.bodyDone:
		if r.err != nil {
			x.publish(answerFrame{End: endAbort})
			return nil, false
		}
		return r.body, true
	case <-x.ctx.Done():
		return nil, false
	case <-timer.C:
		x.rt.log.Warn("forwarded request: the rest of its body did not arrive", "subject", x.reply, "within", acceptTimeout)
		x.bodyFailed(errors.New("timed out"))
		x.publish(answerFrame{End: endAbort})
		return nil, false
	}
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
	a := answerFrame{Data: w.buf}
	if !w.headSent {
		a.Head = &wireHead{Status: w.status, Header: w.hdr}
		w.headSent = true
	}
	if end {
		a.End = endDone
	}
	if err := w.x.publish(a); err != nil {
		w.err = err
		w.x.cancel()
		return err
	}
	// PublishMsg copied the data into the connection's buffer.
	w.buf = w.buf[:0]
	return nil
}
