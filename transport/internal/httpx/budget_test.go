package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
)

// post is one message of size bytes, from client, for session.
type post struct {
	client, session string
	size            int
	unknownLength   bool // sent without Content-Length
}

// send reads p under st's budget, as a transport does; the lease, when
// the budget had room, is held until the test lets it go.
func send(st *Settings, p post) (*httptest.ResponseRecorder, *mcp.Lease) {
	var body io.Reader = bytes.NewReader(bytes.Repeat([]byte{'x'}, p.size))
	if p.unknownLength {
		body = io.MultiReader(body) // hides the length
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", body)
	r = r.WithContext(clientid.With(r.Context(), p.client))
	w := httptest.NewRecorder()
	got, lease, ok := st.ReadHeld(w, r, p.session)
	if ok && len(got) != p.size {
		panic(fmt.Sprintf("read %d bytes of %d", len(got), p.size))
	}
	return w, lease
}

// TestBudgetRefusesPastItsShares: messages held at once (their leases
// not let go) fit the server's, the client's and the session's shares;
// the one that would go over is refused, naming its share and the flag,
// with Retry-After, and fits once the others have been let go.
func TestBudgetRefusesPastItsShares(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name   string
		lim    BudgetLimits
		held   []post // taken and held, each fits
		over   post   // refused while they are held
		status int
		share  string
	}{
		{name: "the server's budget", lim: BudgetLimits{Total: 4 * mib},
			held:   []post{{"a", "", mib, false}, {"b", "", mib, false}, {"c", "s1", mib, false}, {"d", "s2", mib, false}},
			over:   post{"e", "s3", mib, false},
			status: http.StatusServiceUnavailable, share: "server"},
		{name: "a client's share", lim: BudgetLimits{Total: 8 * mib, PerClient: 2 * mib},
			held:   []post{{"a", "s1", mib, false}, {"a", "s2", mib, false}, {"b", "s3", 2 * mib, false}},
			over:   post{"a", "s4", 1, false},
			status: http.StatusTooManyRequests, share: "client"},
		{name: "a session's share", lim: BudgetLimits{Total: 8 * mib, PerClient: 4 * mib, PerSession: 2 * mib},
			held:   []post{{"a", "s1", mib, false}, {"a", "s1", mib, false}, {"a", "s2", 2 * mib, false}},
			over:   post{"a", "s1", 1, false},
			status: http.StatusTooManyRequests, share: "session"},
		{name: "an unknown length claims the message cap", lim: BudgetLimits{Total: 8 * mib, PerClient: 4 * mib},
			held:   []post{{"a", "", 3 * mib, false}},
			over:   post{"a", "", 1, true},
			status: http.StatusTooManyRequests, share: "client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := Settings{MaxBodyBytes: 4 * mib, Budget: NewBudget(tc.lim)}
				st.Fill(newTestEngine(t))
				// Sent at once, as a flood would: each fits.
				leases := make([]*mcp.Lease, len(tc.held))
				var wg sync.WaitGroup
				for i, p := range tc.held {
					wg.Go(func() {
						w, lease := send(&st, p)
						if lease == nil {
							t.Errorf("message %d of %d bytes was refused: %d %s", i, p.size, w.Code, w.Body)
						}
						leases[i] = lease
					})
				}
				wg.Wait()
				var sum int64
				for _, p := range tc.held {
					sum += int64(p.size)
				}
				if got := st.Budget.Held(); got != sum {
					t.Errorf("Held() = %d with the messages held, want %d", got, sum)
				}

				w, lease := send(&st, tc.over)
				if lease != nil || w.Code != tc.status {
					t.Fatalf("the message over the %s got %d, want %d: %s", tc.share, w.Code, tc.status, w.Body)
				}
				if got := w.Header().Get("Retry-After"); got != "1" {
					t.Errorf("Retry-After = %q, want 1", got)
				}
				var body struct {
					Error struct {
						Data struct {
							Code    string         `json:"code"`
							How     string         `json:"how"`
							Details map[string]any `json:"details"`
						} `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
					t.Fatal(err)
				}
				d := body.Error.Data
				if d.Details["share"] != tc.share || d.Details["limit"] != "max-inflight-bytes" || !bytes.Contains([]byte(d.How), []byte("--max-inflight-bytes")) {
					t.Errorf("the refusal does not name the %s's share and how to raise it: %+v", tc.share, d)
				}

				for _, l := range leases {
					l.Release()
				}
				if w, lease := send(&st, tc.over); lease == nil {
					t.Errorf("the message was refused once the others were let go: %d %s", w.Code, w.Body)
				} else {
					lease.Release()
				}
				b := st.Budget
				if len(b.clients) != 0 || len(b.sessions) != 0 || b.Held() != 0 {
					t.Errorf("the budget still counts clients %v, sessions %v, %d bytes", b.clients, b.sessions, b.Held())
				}
			})
		})
	}
}

// TestBudgetWaitsBriefly: a message over the server's budget waits up to
// budgetWait for it, and is read once a message in flight is let go.
func TestBudgetWaitsBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := Settings{MaxBodyBytes: 1 << 20, Budget: NewBudget(BudgetLimits{Total: 1 << 20})}
		st.Fill(newTestEngine(t))
		_, first := send(&st, post{"a", "", 1 << 20, false})
		done := make(chan *mcp.Lease)
		go func() {
			_, l := send(&st, post{"b", "", 1 << 20, false})
			done <- l
		}()
		synctest.Wait() // the second is waiting for the budget
		// What /healthz shows counts only what was let in, never a
		// message still waiting for its turn.
		if held := st.Budget.Held(); held != 1<<20 {
			t.Errorf("held %d bytes while the second waits, want the first's %d", held, 1<<20)
		}
		first.Release()
		if l := <-done; l == nil {
			t.Fatal("the second message was refused though the first was let go within the wait")
		} else {
			l.Release()
		}
	})
}

// TestBudgetLetsInWhatFitsWhateverTheClock: a message that fits the
// server's budget is let in even when its wait's deadline has passed
// before it asks, as under a CPU-bound load, where a goroutine may wait
// for the CPU longer than budgetWait between the two. Before, 114-byte
// messages were refused as over a 256 MiB budget holding a few
// kilobytes (TestLoad under make test).
func TestBudgetLetsInWhatFitsWhateverTheClock(t *testing.T) {
	b := NewBudget(BudgetLimits{Total: 1 << 20})
	late, cancel := context.WithDeadline(context.Background(), time.Now().Add(-budgetWait))
	defer cancel()
	res, ref := b.reserve(late, "a", "", 114)
	if ref != nil {
		t.Fatalf("a 114-byte message refused by an empty 1 MiB budget: %v", ref.err)
	}
	if held := b.Held(); held != 114 {
		t.Errorf("held %d bytes, want 114", held)
	}
	res.release()
	if held := b.Held(); held != 0 {
		t.Errorf("held %d bytes after the release, want 0", held)
	}
	// One that does not fit still waits, and is refused once the wait
	// is over.
	full, ref := b.reserve(context.Background(), "a", "", 1<<20)
	if ref != nil {
		t.Fatalf("a message of the whole budget refused by an empty budget: %v", ref.err)
	}
	if _, ref := b.reserve(late, "b", "", 1); ref == nil || ref.status != http.StatusServiceUnavailable {
		t.Errorf("a message over a full budget was not refused with 503: %+v", ref)
	}
	full.release()
}
