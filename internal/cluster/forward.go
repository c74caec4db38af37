package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/nats-io/nats.go"
	"github.com/sourcegraph/jsonrpc2"
)

// Defaults of RouterOptions.
const (
	DefaultMaxExchanges = 1024
	// DefaultMaxExchangesPerSession and DefaultMaxExchangesPerClient
	// bound one session's and one client's share of them, so that one
	// client cannot take them all.
	DefaultMaxExchangesPerSession = 64
	DefaultMaxExchangesPerClient  = 256
	DefaultChunkSize              = 64 << 10
	DefaultPingInterval           = 2 * time.Second
	DefaultMaxForwardBody         = mcp.DefaultMaxMessageSize
	DefaultWriteTimeout           = 30 * time.Second
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
	// pongBacklog is how many answers to pings may wait: one is due per
	// interval.
	pongBacklog = 4
	// pongSuffix ends the token of an exchange's pong inbox.
	pongSuffix = "-p"
)

// forwardedHeaders are the request headers the HTTP transports read once a
// request has passed the forwarding replica's guard; nothing else crosses.
var forwardedHeaders = []string{"Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

// RouterOptions configure a Router; zero values take the defaults.
type RouterOptions struct {
	// MaxExchanges bounds the forwarded requests this replica serves at
	// once (an open GET stream is one for its whole life); beyond it they
	// are answered 503 (default DefaultMaxExchanges).
	MaxExchanges int
	// MaxExchangesPerSession and MaxExchangesPerClient bound those of one
	// session and of one client (as ClientKey names it on the forwarding
	// replica), within MaxExchanges; beyond them, 503 as well (defaults
	// DefaultMaxExchangesPerSession, DefaultMaxExchangesPerClient). Give
	// every replica the same: the holder applies its own.
	MaxExchangesPerSession, MaxExchangesPerClient int
	// ClientKey names the client of a request this replica forwards, for
	// the holder's per-client bound: the same string for the same client
	// (a credential's hash, an address). Default: the remote address
	// without its port. A key longer than 72 bytes is sent as its hash.
	ClientKey func(*http.Request) string
	// ChunkSize is the most body bytes one message carries (default
	// DefaultChunkSize; never more than half the server's max payload).
	ChunkSize int
	// PingInterval spaces the forwarder's pings of the holder; missedPings
	// of them unanswered end the exchange on both sides (default
	// DefaultPingInterval).
	PingInterval time.Duration
	// MaxBodyBytes caps the body a forwarded request may declare: one
	// over it is answered 413 before anything is sized by it. Give it the
	// HTTP transport's body cap (--max-message-size), the same on every
	// replica (default DefaultMaxForwardBody, mcp's default message size).
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
// A message on these subjects is executed as an HTTP request that has
// passed the security guard (Host, Origin, bearer token) of the replica
// that published it, and the holder does not check those again: so every
// message of an exchange is signed with the replicas' keys (bus.go) and
// one that is not, or is stale or replayed, is dropped unread and counted.
// The signature does not hide the traffic: secure the NATS server with
// credentials and TLS (NATS_CREDS, NATS_CA, NATS_CERT) as well and give
// only replicas the right to use the prefix's subjects.
//
// An exchange: the forwarder picks a fresh inbox, then publishes the
// request (method, path and query, Host, forwardedHeaders, the body's first
// part) to the session's subject with the inbox as reply. The holder
// answers at once with an accept message naming a control subject, to
// which the forwarder sends the rest of the body and then pings; the
// holder runs the handler and streams its response to the inbox: a head
// (status and headers), body parts on every Flush and every ChunkSize
// bytes, an end. Every message is numbered, so a lost one aborts the
// response rather than corrupting it (wire.go has the frames, and
// docs/scale-out.md the whole protocol). Pings answered "gone", or by no
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
	// Exchanges served now, per session and per client, within sem.
	perSession, perClient map[string]int
}

// NewRouter starts serving forwarded requests on n's connection; the
// caller then gives it the handler (Serve) and the sessions it holds
// (Hold), and closes it before n.
func NewRouter(n *Node, opts RouterOptions) (*Router, error) {
	if opts.MaxExchanges <= 0 {
		opts.MaxExchanges = DefaultMaxExchanges
	}
	if opts.MaxExchangesPerSession <= 0 {
		opts.MaxExchangesPerSession = DefaultMaxExchangesPerSession
	}
	if opts.MaxExchangesPerClient <= 0 {
		opts.MaxExchangesPerClient = DefaultMaxExchangesPerClient
	}
	if opts.ClientKey == nil {
		opts.ClientKey = remoteHost
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
		waiting: map[string]chan *nats.Msg{}, perSession: map[string]int{}, perClient: map[string]int{}}
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
		return nil, errors.New("cluster: hold session: its id is not a subject token")
	}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, errors.New("cluster: hold session: the router is closed")
	}
	if _, dup := rt.holds[id]; dup {
		rt.mu.Unlock()
		return nil, fmt.Errorf("cluster: hold session %s: already held", logid.Digest(id))
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

func (rt *Router) chunkSize() int {
	c := rt.opts.ChunkSize
	// Headers ride in the same message as a part: half the max payload
	// leaves them room.
	if mp := int(rt.nc.MaxPayload()); mp > 0 && c > mp/2 {
		c = mp / 2
	}
	return c
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

// remoteHost is the default ClientKey: the client's address without its
// port.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// clientKey is what a forwarded request names its client by: ClientKey's
// answer, hashed when long, so the holder keeps a few bytes per client.
func (rt *Router) clientKey(r *http.Request) string {
	k := rt.opts.ClientKey(r)
	if len(k) > maxClientBytes {
		sum := sha256.Sum256([]byte(k))
		k = "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
