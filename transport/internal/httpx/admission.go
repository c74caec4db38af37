package httpx

import (
	"container/heap"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
)

// What a client can hold open on the server, 2025-era sessions (GET /sse,
// initialize on /mcp) and 2026-era subscriptions/listen streams alike, is
// admitted by one Gate: both cost a stream's worth of memory and a slot of
// the same budget, so an operator sizes one number, and a client moving
// between the eras needs no other. The preview page's event streams
// (serve --ui) hold the same and take places of the same caps.

// Limits are a Gate's caps (0: none).
type Limits struct {
	// Max caps the sessions and listen streams the server holds
	// (--max-sessions). At the cap, the least recently used idle session
	// is ended to make room; only when none is idle is a client refused.
	Max int
	// PerClient caps those one client holds (--max-sessions-per-client);
	// a client (clientid) at its cap is refused, whatever the server's
	// room.
	PerClient int
}

// retryFull is the Retry-After of a refusal at the server's cap: sessions
// end all the time, and a client that waits a little usually gets in.
const retryFull = 10 * time.Second

// Gate admits sessions and listen streams under Limits. It is safe for
// concurrent use; one Gate serves both HTTP transports.
type Gate struct {
	lim Limits

	mu      sync.Mutex
	total   int
	listens int
	held    map[string]int          // by client key: what each holds
	owner   map[*mcp.Session]string // sessions admitted, with their client
	// lru orders the sessions by their last use as last seen (see
	// leastRecentlyUsedIdle); an ended session's entry stays until popped
	// or compacted away.
	lru lruHeap
	// noneIdleUntil: the last search found every session in use; until
	// then, a newcomer is refused without searching again.
	noneIdleUntil time.Time
}

// noneIdleFor is how long a search that found no idle session is
// trusted: a server full of sessions in use costs one search per this
// long, however many newcomers it refuses meanwhile.
const noneIdleFor = 100 * time.Millisecond

// NewGate returns a gate with the caps lim.
func NewGate(lim Limits) *Gate {
	return &Gate{lim: lim, held: make(map[string]int), owner: make(map[*mcp.Session]string)}
}

// Counts are what a gate holds, for /healthz.
type Counts struct {
	Total   int // sessions and listen streams
	Listens int // listen streams
	Clients int // clients holding at least one
}

// Counts returns what the gate holds now.
func (g *Gate) Counts() Counts {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Counts{Total: g.total, Listens: g.listens, Clients: len(g.held)}
}

// refusal is why a gate said no, and the HTTP status that says it.
type refusal struct {
	status int
	err    *fault.Error
}

// take reserves one place for client, ending the least recently used idle
// session when the server is full.
func (g *Gate) take(client, what string, listen bool) *refusal {
	g.mu.Lock()
	if g.lim.PerClient > 0 && g.held[client] >= g.lim.PerClient {
		n := g.held[client]
		g.mu.Unlock()
		return &refusal{http.StatusTooManyRequests, &fault.Error{Code: mcp.CodeClientLimit,
			What:    fmt.Sprintf("this client already holds %d sessions and listen streams, its maximum: no %s", n, what),
			Why:     fmt.Sprintf("each client (one access token, or one address when the server has none) may hold at most %d sessions and subscriptions/listen streams at once, so that no client can take the whole server", g.lim.PerClient),
			How:     "end what you no longer use (DELETE /mcp, close a GET /sse or subscriptions/listen stream, or a tab of the preview page), or ask the operator to raise --max-sessions-per-client",
			Details: map[string]any{"limit": "max-sessions-per-client", "max": g.lim.PerClient}}}
	}
	var victim *mcp.Session
	if g.lim.Max > 0 && g.total >= g.lim.Max {
		if victim = g.leastRecentlyUsedIdle(); victim == nil {
			g.mu.Unlock()
			return &refusal{http.StatusServiceUnavailable, &fault.Error{Code: mcp.CodeTooManySessions,
				What:       fmt.Sprintf("the server holds its maximum of %d sessions and listen streams: no %s", g.lim.Max, what),
				Why:        "every one of them is in use (a request in flight or a stream open), so none could be ended to make room",
				How:        "retry later, end sessions you no longer use, or ask the operator to raise --max-sessions",
				RetryAfter: retryFull, Details: map[string]any{"limit": "max-sessions", "max": g.lim.Max}}}
		}
		// Its place is this client's from now on, whenever its end is
		// noticed.
		g.forget(victim)
	}
	g.total++
	g.held[client]++
	if listen {
		g.listens++
	}
	g.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
	return nil
}

// give returns a place client held.
func (g *Gate) give(client string) {
	g.total--
	if g.held[client]--; g.held[client] <= 0 {
		delete(g.held, client)
	}
}

// forget drops s, a session the gate admitted, and gives its place back;
// g.mu is held.
func (g *Gate) forget(s *mcp.Session) {
	if client, ok := g.owner[s]; ok {
		delete(g.owner, s)
		g.give(client)
	}
}

// leastRecentlyUsedIdle returns the idle session used longest ago, or nil
// when every session is in use; g.mu is held.
//
// The heap holds each session under its last use as last seen. A session's
// last use only moves forward, so an entry whose session has not been used
// since it was pushed is truly the oldest, and one that has is pushed
// again under its new time: at a server full of idle sessions, finding the
// oldest costs a few heap operations, not a pass over every session. A
// session in use is set aside and put back after the search.
func (g *Gate) leastRecentlyUsedIdle() *mcp.Session {
	now := time.Now()
	if now.Before(g.noneIdleUntil) {
		return nil
	}
	var inUse []lruEntry
	defer func() {
		for _, en := range inUse {
			heap.Push(&g.lru, en)
		}
	}()
	for g.lru.Len() > 0 {
		en := heap.Pop(&g.lru).(lruEntry)
		if _, live := g.owner[en.s]; !live {
			continue // ended: its entry goes
		}
		used, idle := en.s.Idle()
		switch {
		case used.UnixNano() != en.used:
			en.used = used.UnixNano()
			heap.Push(&g.lru, en)
		case !idle:
			inUse = append(inUse, en)
		default:
			return en.s
		}
	}
	g.noneIdleUntil = now.Add(noneIdleFor)
	return nil
}

// track adds s to the heap, first dropping the entries of ended sessions
// when they have come to outnumber the live ones; g.mu is held.
func (g *Gate) track(s *mcp.Session) {
	if len(g.lru) > 2*len(g.owner)+64 {
		live := g.lru[:0]
		for _, en := range g.lru {
			if _, ok := g.owner[en.s]; ok {
				live = append(live, en)
			}
		}
		clear(g.lru[len(live):])
		g.lru = live
		heap.Init(&g.lru)
	}
	used, _ := s.Idle()
	heap.Push(&g.lru, lruEntry{s: s, used: used.UnixNano()})
}

// lruEntry is a session under its last use, as last seen.
type lruEntry struct {
	s    *mcp.Session
	used int64 // unix nanoseconds
}

// lruHeap is a container/heap of sessions, least recently used first.
type lruHeap []lruEntry

func (h lruHeap) Len() int           { return len(h) }
func (h lruHeap) Less(i, j int) bool { return h[i].used < h[j].used }
func (h lruHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lruHeap) Push(x any)        { *h = append(*h, x.(lruEntry)) }
func (h *lruHeap) Pop() any {
	old := *h
	en := old[len(old)-1]
	old[len(old)-1] = lruEntry{}
	*h = old[:len(old)-1]
	return en
}

// OpenSession starts a session on e for sink, for r's
// client (clientid.Of). When a cap refuses it, it answers r (429 at the
// client's cap, 503 with Retry-After at the server's with nothing idle to
// reclaim) and returns nil.
func (g *Gate) OpenSession(w http.ResponseWriter, r *http.Request, e *mcp.Engine, sink mcp.Sink) *mcp.Session {
	client := clientid.Of(r)
	if no := g.take(client, "new session", false); no != nil {
		WriteError(w, r, no.status, no.err)
		return nil
	}
	s, err := e.NewSession(r.Context(), sink, 0)
	if err != nil {
		// The engine's own cap is not used (0), so this cannot happen;
		// the place is given back all the same.
		g.mu.Lock()
		g.give(client)
		g.mu.Unlock()
		WriteError(w, r, http.StatusServiceUnavailable, &fault.Error{Code: mcp.CodeTooManySessions,
			What: "no new session", Why: err.Error(), How: "retry later", RetryAfter: retryFull, Err: err})
		return nil
	}
	s.SetTransport(mcp.TransportTCP)
	g.mu.Lock()
	g.owner[s] = client
	g.track(s)
	g.mu.Unlock()
	// However it ends, its place is given back as it ends (once: a
	// reclaimed session was forgotten already).
	s.OnClose(func() {
		g.mu.Lock()
		g.forget(s)
		g.mu.Unlock()
	})
	return s
}

// AdmitListen admits one subscriptions/listen stream for client, to be
// released when the stream ends. Refused, it returns the error to answer
// with and its HTTP status (429 or 503, as OpenSession).
func (g *Gate) AdmitListen(client string) (release func(), status int, err error) {
	return g.admit(client, "new subscriptions/listen stream", true)
}

// AdmitStream admits for client one other stream a request holds open
// for as long as it lasts (the preview page's event stream), what naming
// it in a refusal: it takes a place of the same caps as a listen stream,
// though it is not counted as one. Refused, it returns the error to
// answer with and its HTTP status (429 or 503, as OpenSession).
func (g *Gate) AdmitStream(client, what string) (release func(), status int, err error) {
	return g.admit(client, what, false)
}

// admit takes a place for client, to be given back by release.
func (g *Gate) admit(client, what string, listen bool) (release func(), status int, err error) {
	if no := g.take(client, what, listen); no != nil {
		return nil, no.status, no.err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if listen {
				g.listens--
			}
			g.give(client)
			g.mu.Unlock()
		})
	}, http.StatusOK, nil
}
