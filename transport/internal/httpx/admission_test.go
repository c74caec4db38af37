package httpx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

const settle = 5 * time.Second

type nopSink struct{}

func (nopSink) Send([]mcp.Outgoing) error { return nil }
func (nopSink) Close()                    {}

func newTestEngine(t *testing.T) *mcp.Engine {
	t.Helper()
	return mcptest.Engine(t, &mcp.Server{Info: mcp.Implementation{Name: "test", Version: "0"}}, mcp.EngineOptions{})
}

// requestFrom is a request whose client is key.
func requestFrom(key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	return r.WithContext(clientid.With(r.Context(), key))
}

// open opens a session for client and returns it, or nil with the
// refusal's status and data code.
func open(t *testing.T, g *Gate, e *mcp.Engine, client string) (s *mcp.Session, status int, code string, retryAfter string) {
	t.Helper()
	w := httptest.NewRecorder()
	s = g.OpenSession(w, requestFrom(client), e, nopSink{})
	if s != nil {
		return s, http.StatusOK, "", ""
	}
	var body struct {
		Error struct{ Data mcp.ErrorData } `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("refusal body %q: %v", w.Body, err)
	}
	d := body.Error.Data
	if d.What == "" || d.Why == "" || d.How == "" {
		t.Errorf("refusal %+v does not say what, why and how", d)
	}
	return nil, w.Code, d.Code, w.Header().Get("Retry-After")
}

func closed(s *mcp.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// TestGatePerClient: a client at its cap is refused with 429, whatever the
// server's room and whoever else connects, sessions and listen streams
// alike; what it ends gives its place back.
func TestGatePerClient(t *testing.T) {
	e := newTestEngine(t)
	g := NewGate(Limits{Max: 100, PerClient: 2})
	a1, _, _, _ := open(t, g, e, "a")
	releaseListen, status, err := g.AdmitListen("a")
	if err != nil {
		t.Fatalf("a's listen stream: %d %v", status, err)
	}
	if s, status, code, _ := open(t, g, e, "a"); s != nil || status != http.StatusTooManyRequests || code != mcp.CodeClientLimit {
		t.Fatalf("a's third: session %v, %d %s; want 429 %s", s != nil, status, code, mcp.CodeClientLimit)
	}
	if _, status, err := g.AdmitListen("a"); err == nil || status != http.StatusTooManyRequests {
		t.Fatalf("a's second listen stream: %d %v, want 429", status, err)
	}
	if s, status, _, _ := open(t, g, e, "b"); s == nil {
		t.Fatalf("b, another client: %d", status)
	}
	if got, want := g.Counts(), (Counts{Total: 3, Listens: 1, Clients: 2}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	releaseListen()
	releaseListen() // twice: the place is given back once
	a1.Close()
	transporttest.Settle(t, settle, "a's places given back", func() bool { return g.Counts() == Counts{Total: 1, Clients: 1} })
	for range 2 {
		if s, status, code, _ := open(t, g, e, "a"); s == nil {
			t.Fatalf("a after ending its own: %d %s", status, code)
		}
	}
}

// TestGateStream: another stream (the preview page's) takes a place of
// the client's cap and the server's, is not counted as a listen stream,
// names itself when refused, and gives its place back once.
func TestGateStream(t *testing.T) {
	g := NewGate(Limits{Max: 100, PerClient: 1})
	release, status, err := g.AdmitStream("a", "new page stream")
	if err != nil {
		t.Fatalf("a's stream: %d %v", status, err)
	}
	if got, want := g.Counts(), (Counts{Total: 1, Clients: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if _, status, err := g.AdmitListen("a"); err == nil || status != http.StatusTooManyRequests {
		t.Fatalf("a's listen stream beside its page stream: %d %v, want 429", status, err)
	}
	if _, status, err := g.AdmitStream("a", "new page stream"); err == nil || status != http.StatusTooManyRequests ||
		!strings.Contains(err.Error(), "no new page stream") {
		t.Fatalf("a's second page stream: %d %v, want 429 naming it", status, err)
	}
	release()
	release() // twice: the place is given back once
	if got := g.Counts(); got != (Counts{}) {
		t.Errorf("counts %+v after the release, want none", got)
	}
}

// TestGateReclaimsLeastRecentlyUsedIdle: at the server's cap a newcomer
// gets the place of the idle session used longest ago; sessions a stream
// holds are never taken, and with nothing idle the answer is 503 with
// Retry-After.
func TestGateReclaimsLeastRecentlyUsedIdle(t *testing.T) {
	e := newTestEngine(t)
	g := NewGate(Limits{Max: 3})
	held, _, _, _ := open(t, g, e, "a") // the oldest, but connected to its stream
	defer held.Hold()()
	older, _, _, _ := open(t, g, e, "a")
	newer, _, _, _ := open(t, g, e, "a")
	older.Touch() // now used after newer
	c, status, _, _ := open(t, g, e, "b")
	if c == nil {
		t.Fatalf("b at the cap with idle sessions: %d", status)
	}
	if !closed(newer) || closed(older) || closed(held) {
		t.Fatalf("reclaimed: newer %v older %v held %v; want only newer, the least recently used idle", closed(newer), closed(older), closed(held))
	}
	c.Touch()
	d, _, _, _ := open(t, g, e, "b")
	if d == nil || !closed(older) || closed(c) {
		t.Fatalf("second newcomer: opened %v, older reclaimed %v, c reclaimed %v", d != nil, closed(older), closed(c))
	}
	// A listen stream reclaims as a session does, and holds its place.
	release, status, err := g.AdmitListen("c")
	if err != nil || !closed(c) {
		t.Fatalf("listen at the cap: %d %v; c reclaimed %v", status, err, closed(c))
	}
	defer release()
	defer d.Hold()()
	if s, status, code, retry := open(t, g, e, "d"); s != nil || status != http.StatusServiceUnavailable || code != mcp.CodeTooManySessions || retry == "" {
		t.Fatalf("full, nothing idle: %v %d %s Retry-After %q; want 503 %s with Retry-After", s != nil, status, code, retry, mcp.CodeTooManySessions)
	}
	if _, status, err := g.AdmitListen("d"); err == nil || status != http.StatusServiceUnavailable {
		t.Fatalf("listen, full, nothing idle: %d %v; want 503", status, err)
	}
	if got, want := g.Counts(), (Counts{Total: 3, Listens: 1, Clients: 3}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}

// TestGateForgetsEndedSessions: sessions that end on their own leave no
// more than a bounded trace in the order of last use.
func TestGateForgetsEndedSessions(t *testing.T) {
	e := newTestEngine(t)
	g := NewGate(Limits{Max: 1000})
	keep, _, _, _ := open(t, g, e, "a")
	for range 500 {
		s, _, _, _ := open(t, g, e, "a")
		s.Close()
		transporttest.Settle(t, settle, "the ended session given back", func() bool { return g.Counts().Total == 1 })
	}
	g.mu.Lock()
	n := len(g.lru)
	g.mu.Unlock()
	if n > 2+64+1 {
		t.Errorf("%d entries in the order of last use for one live session", n)
	}
	if closed(keep) {
		t.Error("the live session ended")
	}
}

// BenchmarkGateReclaim is a session opened at a full server of 10,000
// idle sessions: the cost of finding the least recently used one.
func BenchmarkGateReclaim(b *testing.B) {
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "test", Version: "0"}}, mcp.EngineOptions{})
	defer e.Shutdown(context.Background())
	const full = 10000
	g := NewGate(Limits{Max: full})
	r := requestFrom("a")
	for range full {
		if g.OpenSession(httptest.NewRecorder(), r, e, nopSink{}) == nil {
			b.Fatal("refused below the cap")
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if g.OpenSession(httptest.NewRecorder(), r, e, nopSink{}) == nil {
			b.Fatal("refused with idle sessions to reclaim")
		}
	}
}
