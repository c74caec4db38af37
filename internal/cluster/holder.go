package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
