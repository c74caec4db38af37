package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/nats-io/nats.go"
)

// The forwarder's side of an exchange: a request for a session another
// replica holds, carried there and answered from there.

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
	// Pongs come to an inbox of their own beside the answers': a reply
	// subject the forwarder chooses is one its signature covers.
	pongs := make(chan *nats.Msg, pongBacklog)
	rt.waitMu.Lock()
	rt.waiting[xid] = ch
	rt.waiting[xid+pongSuffix] = pongs
	rt.waitMu.Unlock()
	defer func() {
		rt.waitMu.Lock()
		delete(rt.waiting, xid)
		delete(rt.waiting, xid+pongSuffix)
		rt.waitMu.Unlock()
	}()
	wr := wireRequest{Method: r.Method, URI: r.URL.RequestURI(), Host: r.Host, Remote: r.RemoteAddr,
		Header: http.Header{}, Len: len(body), Exchange: xid, Client: rt.clientKey(r), Member: memberOnWire(auth.MemberOf(r.Context()))}
	for _, k := range forwardedHeaders {
		if v := r.Header[k]; len(v) > 0 {
			wr.Header[k] = v
		}
	}
	first := body[:min(len(body), chunk)]
	m, err := requestMsg(rt.node.Subject("session", id), inbox, wr, first)
	if err != nil {
		// Only a path and query longer than the cap get here.
		rt.log.Warn("cannot forward a session request", "error", err)
		writeError(w, http.StatusRequestHeaderFieldsTooLarge, &fault.Error{Code: mcp.CodeBadRequest,
			What: "request too large to forward", Why: err.Error(),
			How: "shorten the URL's query, or send the session's requests to the replica that holds it"})
		return true
	}
	if err := rt.node.publish(m); err != nil {
		rt.log.Warn("cannot forward a session request", "error", err)
		return false
	}
	f := &forwarding{rt: rt, w: w, r: r, rc: http.NewResponseController(w), ch: ch, body: body[len(first):], chunk: chunk,
		pongs: pongs, pongInbox: inbox + pongSuffix}
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

	pongs     chan *nats.Msg
	pongInbox string

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
				// No responders: nobody holds the session. The NATS
				// server sends it, unsigned; one forged by a stranger on
				// the bus costs the client a new session, no more.
				return false
			}
			if f.rt.node.verify(m) != nil {
				continue // not from a replica: dropped, counted
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
	a, err := decodeAnswer(m.Header, m.Data)
	if err != nil {
		f.rt.log.Warn("a forwarded answer was malformed", "subject", m.Subject, "error", err)
		return broken
	}
	if a.Seq != f.next {
		return broken
	}
	f.next++
	if a.Control != "" {
		f.ctl = a.Control
		return more
	}
	if a.Head != nil && !f.head {
		dst := f.w.Header()
		for k, v := range a.Head.Header {
			dst[k] = v
		}
		f.stream = strings.HasPrefix(dst.Get("Content-Type"), "text/event-stream")
		f.arm()
		f.w.WriteHeader(a.Head.Status)
		f.head = true
	}
	if a.End == endAbort || !f.head {
		return broken
	}
	if len(a.Data) > 0 {
		f.arm()
		if _, err := f.w.Write(a.Data); err != nil {
			f.cancelHolder()
			return done // the client is gone: nobody to tell
		}
	}
	if a.End == endDone {
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
		if f.rt.node.publish(controlFrame{Op: opBody, Seq: seq, Data: part}.msg(f.ctl)) != nil {
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
		ping := controlFrame{Op: opPing}.msg(f.ctl)
		ping.Reply = f.pongInbox
		if err := f.rt.node.publish(ping); errors.Is(err, nats.ErrConnectionClosed) {
			close(gone)
			return
		}
		switch f.pong(ctx, every) {
		case pongAlive:
			missed = 0
		case "":
			if missed++; missed >= missedPings {
				close(gone)
				return
			}
		default:
			if ctx.Err() == nil {
				close(gone)
			}
			return
		}
	}
}

// pong waits up to wait for the answer to a ping: pongAlive, pongGone
// (also when NATS says nobody listens on the control subject), or "" for
// none. A pong that is not from a replica is dropped, and waited past.
func (f *forwarding) pong(ctx context.Context, wait time.Duration) string {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return pongGone
		case <-timer.C:
			return ""
		case m := <-f.pongs:
			switch {
			case len(m.Data) == 0 && m.Header.Get("Status") == "503":
				return pongGone // no responders: the holder is gone
			case f.rt.node.verify(m) != nil:
				continue
			case string(m.Data) == pongAlive:
				return pongAlive
			default:
				return pongGone
			}
		}
	}
}

// cancelHolder tells the holder its client went away.
func (f *forwarding) cancelHolder() {
	if f.ctl != "" {
		_ = f.rt.node.publish(controlFrame{Op: opCancel}.msg(f.ctl))
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
