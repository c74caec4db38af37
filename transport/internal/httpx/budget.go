package httpx

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
	"golang.org/x/sync/semaphore"
)

// The bytes of posted messages the server holds at once, from the moment
// a body is about to be read until the request it became has run, are
// bounded by one Budget for both HTTP transports: a session may have
// hundreds of requests in flight, each holding its message, and without a
// budget the most a server could be made to hold would be every session's
// requests times the message cap. The share a message takes is claimed
// before a byte of it is read (its Content-Length, or the message cap when
// the length is unknown), trued up to what arrived, and handed over with
// the message as an mcp.Lease.

// DefaultMaxInflightBytes is the server's budget of posted messages in
// flight (--max-inflight-bytes): 64 messages of the largest size at once,
// thousands of the usual few-kilobyte ones.
const DefaultMaxInflightBytes = 256 << 20

// A client's share is a quarter of the budget and a session's a
// sixteenth, each at least one message of the largest size: no client
// takes the whole budget, and no session its client's.
const (
	clientShare  = 4
	sessionShare = 16
)

// budgetWait is how long a message waits for the server's budget before
// it is refused: requests end all the time, so a burst over the budget is
// smoothed rather than refused, but no handler waits for long.
const budgetWait = time.Second

// retryBudget is the Retry-After of a refusal for want of budget.
const retryBudget = time.Second

// BudgetLimits are a Budget's bounds, in bytes (0: none).
type BudgetLimits struct {
	Total      int64 // the server's (--max-inflight-bytes)
	PerClient  int64 // one client's (clientid)
	PerSession int64 // one session's
}

// Budgets returns the limits of a server whose budget is total bytes and
// whose messages are at most message bytes: a client's share a quarter of
// total, a session's a sixteenth, each at least message (total too).
func Budgets(total, message int64) BudgetLimits {
	total = max(total, message)
	return BudgetLimits{Total: total, PerClient: max(total/clientShare, message),
		PerSession: max(total/sessionShare, message)}
}

// Budget counts the bytes of messages in flight, the server's, each
// client's and each session's. It is safe for concurrent use.
type Budget struct {
	lim   BudgetLimits
	total *semaphore.Weighted // nil: no server-wide bound

	mu       sync.Mutex
	held     int64 // by all messages
	clients  map[string]int64
	sessions map[string]int64
}

// NewBudget returns a budget with the bounds lim.
func NewBudget(lim BudgetLimits) *Budget {
	b := &Budget{lim: lim, clients: make(map[string]int64), sessions: make(map[string]int64)}
	if lim.Total > 0 {
		b.total = semaphore.NewWeighted(lim.Total)
	}
	return b
}

// Held returns the bytes messages in flight hold now, for /healthz.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// reservation is what one message holds of a budget.
type reservation struct {
	b               *Budget
	client, session string
	n               int64
}

// reserve claims n bytes for a message of client in session ("": none),
// the client's and session's shares at once, the server's within
// budgetWait and ctx. The refusal names the bound that said no.
func (b *Budget) reserve(ctx context.Context, client, session string, n int64) (*reservation, *refusal) {
	b.mu.Lock()
	if b.lim.PerSession > 0 && session != "" && b.sessions[session]+n > b.lim.PerSession {
		held := b.sessions[session]
		b.mu.Unlock()
		return nil, b.refuse(http.StatusTooManyRequests, "session", "this session's", held, n, b.lim.PerSession,
			"a sixteenth of --max-inflight-bytes, or one message of the largest size")
	}
	if b.lim.PerClient > 0 && b.clients[client]+n > b.lim.PerClient {
		held := b.clients[client]
		b.mu.Unlock()
		return nil, b.refuse(http.StatusTooManyRequests, "client", "this client's", held, n, b.lim.PerClient,
			"a quarter of --max-inflight-bytes, or one message of the largest size; a client is its access token, else its address")
	}
	// The shares are taken at once, under mu with their checks; the
	// server's bytes only once the server's bound let the message in, so
	// that held (what /healthz shows) never counts one still waiting.
	b.clients[client] += n
	if session != "" {
		b.sessions[session] += n
	}
	b.mu.Unlock()
	res := &reservation{b: b, client: client, session: session, n: n}
	if b.total != nil && (n > b.lim.Total || !b.total.TryAcquire(n) && !b.acquire(ctx, n)) {
		res.giveShares(n)
		return nil, b.refuse(http.StatusServiceUnavailable, "server", "the server's", -1, n, b.lim.Total, "--max-inflight-bytes")
	}
	b.mu.Lock()
	b.held += n
	b.mu.Unlock()
	return res, nil
}

// acquire waits, at most budgetWait, for n bytes of the server's budget
// to come free. Only a message that does not fit at once waits: under a
// CPU-bound load a goroutine may wait for the CPU longer than budgetWait
// between taking the time and asking, and a message that fits must not be
// refused for that.
func (b *Budget) acquire(ctx context.Context, n int64) bool {
	ctx, cancel := context.WithTimeout(ctx, budgetWait)
	defer cancel()
	return b.total.Acquire(ctx, n) == nil
}

// refuse is the error of a message that does not fit share (held bytes
// already taken, -1 when unknown).
func (b *Budget) refuse(status int, share, whose string, held, n, limit int64, bound string) *refusal {
	code := mcp.CodeClientLimit
	how := "wait for the answers of the requests in flight before sending more, or ask the operator to raise --max-inflight-bytes"
	if status == http.StatusServiceUnavailable {
		code = mcp.CodeServerBusy
		how = "retry after the Retry-After delay, or ask the operator to raise --max-inflight-bytes"
	}
	what := fmt.Sprintf("a message of %d bytes would take %s messages in flight over their limit of %d bytes", n, whose, limit)
	if held >= 0 {
		what = fmt.Sprintf("a message of %d bytes would take %s messages in flight from %d bytes over their limit of %d", n, whose, held, limit)
	}
	return &refusal{status, &fault.Error{Code: code, What: what,
		Why:        fmt.Sprintf("the server holds each posted message until its request has run, and at most %d bytes of them for %s (%s)", limit, shareNames[share], bound),
		How:        how,
		RetryAfter: retryBudget,
		Details:    map[string]any{"limit": "max-inflight-bytes", "share": share, "max": limit, "size": n}}}
}

// shareNames say whose share a refusal is about.
var shareNames = map[string]string{"server": "all clients together", "client": "one client", "session": "one session"}

// give returns n of the reservation's bytes to the budget, the client's
// and session's shares.
func (r *reservation) give(n int64) {
	r.b.mu.Lock()
	r.b.held -= n
	r.b.mu.Unlock()
	r.giveShares(n)
}

// giveShares returns n of the reservation's bytes to the client's and
// session's shares alone: those of a message the server's bound did not
// let in, which never counted in held.
func (r *reservation) giveShares(n int64) {
	b := r.b
	b.mu.Lock()
	if b.clients[r.client] -= n; b.clients[r.client] <= 0 {
		delete(b.clients, r.client)
	}
	if r.session != "" {
		if b.sessions[r.session] -= n; b.sessions[r.session] <= 0 {
			delete(b.sessions, r.session)
		}
	}
	b.mu.Unlock()
	r.n -= n
}

// release returns the whole reservation.
func (r *reservation) release() {
	n := r.n
	if r.b.total != nil {
		r.b.total.Release(n)
	}
	r.give(n)
}

// shrink trues the reservation up to n bytes, what arrived.
func (r *reservation) shrink(n int64) {
	if d := r.n - n; d > 0 {
		if r.b.total != nil {
			r.b.total.Release(d)
		}
		r.give(d)
	}
}

// ReadHeld is ReadBody under the settings' Budget: the body's share is
// claimed before a byte of it is read (Content-Length, or the message cap
// when the length is unknown) and trued up to what arrived. The lease
// holds it until the message is done with: hand it over with the message
// (mcp.Inbound.Keep) and call its Release once the message is delivered,
// or when it is not. session is the id of the session the message is for
// ("" for none). On failure it has already answered: 429 when the
// client's or the session's share is spent, 503 when the server's is,
// both with Retry-After, and ReadBody's answers.
func (st *Settings) ReadHeld(w http.ResponseWriter, r *http.Request, session string) ([]byte, *mcp.Lease, bool) {
	n := r.ContentLength
	if n > st.MaxBodyBytes {
		ReadBody(w, r, st.MaxBodyBytes, st.BodyTimeout) // refuses it unread
		return nil, nil, false
	}
	if n < 0 {
		n = st.MaxBodyBytes
	}
	res, ref := st.Budget.reserve(r.Context(), clientid.Of(r), session, n)
	if ref != nil {
		st.Logger.Debug("refused a message for want of budget", "share", ref.err.Details["share"], "bytes", n)
		WriteError(w, r, ref.status, ref.err)
		return nil, nil, false
	}
	// The body's length is granted: it is taken in one allocation of
	// that length, so that what it holds is what the budget counts (a
	// buffer grown as bytes arrive may hold up to twice as much).
	body, ok := readBody(w, r, st.MaxBodyBytes, st.BodyTimeout, n)
	if !ok {
		res.release()
		return nil, nil, false
	}
	res.shrink(int64(len(body)))
	return body, mcp.NewLease(res.release), true
}
