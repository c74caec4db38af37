package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// healthEvery is how often each replica's /healthz is read: a dead
	// replica stops getting requests within about this long, and a
	// request that reaches it meanwhile is retried elsewhere.
	healthEvery = 200 * time.Millisecond
	// healthTimeout bounds one read of /healthz. A dead replica refuses
	// the connection at once, so only a hung one runs it out; a replica
	// that answers slowly on a loaded machine (a CI runner running other
	// tests) must not be taken for one, or the requests it should get go
	// elsewhere and the share each replica gets is skewed.
	healthTimeout = 5 * time.Second
	// replayLimit is the largest body kept to send again to another
	// replica; MCP requests are far smaller.
	replayLimit = 1 << 20
	// sessionHeader names a 2025-era Streamable HTTP session.
	sessionHeader = "Mcp-Session-Id"
)

// proxy is a round-robin reverse proxy in front of the replicas, like a
// load balancer without sticky sessions: most requests of a session land
// on a replica that does not hold it. It counts, per replica, the requests
// it sent there and how many of them named a session another replica
// opened, which is the traffic the cluster forwards.
type proxy struct {
	ln   net.Listener
	srv  *http.Server
	rt   *http.Transport
	next atomic.Uint64
	// sticky sends a request naming a session to the replica that opened
	// it, as a load balancer hashing on the session does, saving the hop
	// through NATS.
	sticky atomic.Bool
	stopH  chan struct{}
	wg     sync.WaitGroup

	mu       sync.RWMutex
	backends []*backend
	// owners maps a session id to the replica that opened it, learned
	// from the responses that created the session.
	owners map[string]string
}

type backend struct {
	id     string
	target atomic.Pointer[url.URL]
	live   atomic.Bool

	requests atomic.Int64 // sent to this replica
	session  atomic.Int64 // ... naming a session
	crossed  atomic.Int64 // ... naming a session another replica opened
	retried  atomic.Int64 // failed to connect here and went to the next
}

func newProxy(sticky bool) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &proxy{ln: ln, owners: map[string]string{}, stopH: make(chan struct{}),
		rt: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
		}}
	p.sticky.Store(sticky)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The target is chosen per attempt in RoundTrip; the Host the
			// client used is passed on, as a load balancer does, so the
			// replicas' Host check (--allowed-hosts) is what is exercised.
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica.invalid"
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport: p,
		// Streams (GET /sse, GET /mcp, event-stream answers) must reach
		// the client as they are written.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "no replica answered: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// host is the proxy's host:port, the name clients reach it by.
func (p *proxy) host() string { return p.ln.Addr().String() }

func (p *proxy) url() string { return "http://" + p.host() }

func (p *proxy) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append(p.backends, &backend{id: id})
}

func (p *proxy) backend(id string) *backend {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, b := range p.backends {
		if b.id == id {
			return b
		}
	}
	return nil
}

// setTarget is called when a replica serves (again): it takes requests
// at once rather than after the next health check.
func (p *proxy) setTarget(id, rawURL string) {
	u, err := url.Parse(rawURL)
	if b := p.backend(id); b != nil && err == nil {
		b.target.Store(u)
		b.live.Store(true)
	}
}

func (p *proxy) startHealthChecks() {
	p.mu.RLock()
	bs := append([]*backend(nil), p.backends...)
	p.mu.RUnlock()
	for _, b := range bs {
		p.wg.Add(1)
		go p.check(b)
	}
}

// check reads b's /healthz every healthEvery. Any 200 counts as live:
// "degraded" (serving without NATS) still answers every request right.
func (p *proxy) check(b *backend) {
	defer p.wg.Done()
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stopH:
			return
		case <-t.C:
		}
		u := b.target.Load()
		if u == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/healthz", nil)
		resp, err := healthClient.Do(req)
		live := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		b.live.Store(live)
	}
}

func (p *proxy) close() {
	close(p.stopH)
	p.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		p.srv.Close()
	}
	p.rt.CloseIdleConnections()
}

// sessionOf returns the session a request names: the Streamable HTTP
// header, or the legacy SSE transport's query parameter.
func sessionOf(r *http.Request) string {
	if s := r.Header.Get(sessionHeader); s != "" {
		return s
	}
	if r.URL.Path == "/sse/message" {
		return r.URL.Query().Get("session_id")
	}
	return ""
}

// RoundTrip sends r to the next live replica in turn. When a replica
// cannot be reached (it died before the health check noticed) and the
// request can be sent again, the next one gets it; once a response has
// begun nothing is retried, since part of it may have reached the client.
func (p *proxy) RoundTrip(r *http.Request) (*http.Response, error) {
	body, replayable, err := bufferBody(r)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	bs := p.backends
	p.mu.RUnlock()
	n := uint64(len(bs))
	start := p.next.Add(1)
	sid := sessionOf(r)
	if p.sticky.Load() && sid != "" {
		p.mu.RLock()
		owner := p.owners[sid]
		p.mu.RUnlock()
		for i, b := range bs {
			if b.id == owner {
				start = uint64(i)
			}
		}
	}
	var lastErr error
	tried := 0
	// Two rounds: the first skips replicas marked down, the second tries
	// them too, since a mark may be older than a restart.
	for round := 0; round < 2; round++ {
		for i := uint64(0); i < n; i++ {
			b := bs[(start+i)%n]
			u := b.target.Load()
			if u == nil || (round == 0 && !b.live.Load()) || (round == 1 && b.live.Load()) {
				continue
			}
			out := r.Clone(r.Context())
			out.URL.Scheme, out.URL.Host = u.Scheme, u.Host
			if body != nil {
				out.Body = io.NopCloser(bytes.NewReader(body))
				out.ContentLength = int64(len(body))
			}
			tried++
			resp, err := p.rt.RoundTrip(out)
			if err == nil {
				p.count(b, r, sid, resp)
				return resp, nil
			}
			lastErr = err
			if !replayable || r.Context().Err() != nil {
				return nil, err
			}
			b.live.Store(false)
			b.retried.Add(1)
		}
	}
	if tried == 0 {
		return nil, errors.New("no replica is up")
	}
	return nil, lastErr
}

// bufferBody reads a small body so it can be sent again. A large one is
// left streaming, and the request is then not replayable.
func bufferBody(r *http.Request) (body []byte, replayable bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true, nil
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, replayLimit+1))
	if err != nil {
		return nil, false, fmt.Errorf("read request body: %w", err)
	}
	if len(buf) > replayLimit {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
		return nil, false, nil
	}
	r.Body.Close()
	return buf, true, nil
}

var endpointRe = regexp.MustCompile(`session_id=([A-Za-z0-9_\-]+)`)

// count records where r went and learns which replica opened a session.
func (p *proxy) count(b *backend, r *http.Request, sid string, resp *http.Response) {
	b.requests.Add(1)
	if sid != "" {
		b.session.Add(1)
		p.mu.RLock()
		owner, ok := p.owners[sid]
		p.mu.RUnlock()
		if ok && owner != b.id {
			b.crossed.Add(1)
		}
		return
	}
	if resp.StatusCode/100 != 2 {
		return
	}
	if s := resp.Header.Get(sessionHeader); s != "" {
		p.own(s, b.id)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/sse" {
		// The session id arrives in the stream's first event: read it as
		// it passes through.
		resp.Body = &sniffer{ReadCloser: resp.Body, found: func(s string) { p.own(s, b.id) }}
	}
}

func (p *proxy) own(sid, replica string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owners[sid] = replica
}

// sniffer looks for the session id in the first bytes of an SSE stream.
type sniffer struct {
	io.ReadCloser
	seen  []byte
	done  bool
	found func(string)
}

func (s *sniffer) Read(b []byte) (int, error) {
	n, err := s.ReadCloser.Read(b)
	if !s.done && n > 0 {
		s.seen = append(s.seen, b[:n]...)
		if m := endpointRe.FindSubmatch(s.seen); m != nil {
			s.found(string(m[1]))
			s.done, s.seen = true, nil
		} else if len(s.seen) > 8<<10 {
			s.done, s.seen = true, nil
		}
	}
	return n, err
}

// replicaStats is what GET /stats reports per replica.
type replicaStats struct {
	Live     bool  `json:"live"`
	Requests int64 `json:"requests"`
	Session  int64 `json:"session"`
	Crossed  int64 `json:"crossed"`
	Retried  int64 `json:"retried"`
}

func (p *proxy) stats() map[string]any {
	p.mu.RLock()
	defer p.mu.RUnlock()
	per := map[string]replicaStats{}
	var total replicaStats
	for _, b := range p.backends {
		s := replicaStats{Live: b.live.Load(), Requests: b.requests.Load(), Session: b.session.Load(),
			Crossed: b.crossed.Load(), Retried: b.retried.Load()}
		per[b.id] = s
		total.Requests += s.Requests
		total.Session += s.Session
		total.Crossed += s.Crossed
		total.Retried += s.Retried
	}
	return map[string]any{"replicas": per, "requests": total.Requests, "session": total.Session,
		"crossed": total.Crossed, "retried": total.Retried, "sessions_seen": len(p.owners)}
}

func (p *proxy) resetStats() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, b := range p.backends {
		b.requests.Store(0)
		b.session.Store(0)
		b.crossed.Store(0)
		b.retried.Store(0)
	}
}

// sessions returns which replica opened each session the proxy saw open.
func (p *proxy) sessions() map[string]string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return maps.Clone(p.owners)
}
