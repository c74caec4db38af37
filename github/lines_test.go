package github

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/templates"
)

// stateAtLine is a log handler that notes, for the first line of each
// message it watches, what its source served and said when the line was
// written. Those lines are written holding the source's mu, by the
// goroutine that makes the change, so the fields read there are what
// that goroutine last made them; other lines, which other goroutines
// may write without mu, are not looked at.
type stateAtLine struct {
	s     atomic.Pointer[Source]
	watch []string // the messages watched
	mu    sync.Mutex
	seen  map[string]lineState // by message
}

// lineState is what a source served and said as a line was written.
type lineState struct {
	current *templates.Catalog
	alone   bool
}

func newStateAtLine(watch ...string) *stateAtLine {
	return &stateAtLine{watch: watch, seen: map[string]lineState{}}
}

func (h *stateAtLine) Enabled(context.Context, slog.Level) bool { return true }
func (h *stateAtLine) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stateAtLine) WithGroup(string) slog.Handler            { return h }

func (h *stateAtLine) Handle(_ context.Context, r slog.Record) error {
	s := h.s.Load()
	if s == nil || !slices.Contains(h.watch, r.Message) {
		return nil // a line written before the test looks, or not watched
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.seen[r.Message]; !ok {
		h.seen[r.Message] = lineState{current: s.current, alone: s.alone}
	}
	return nil
}

// state returns what the source served and said at msg's first line.
func (h *stateAtLine) state(t *testing.T, msg string) lineState {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.seen[msg]
	if !ok {
		t.Fatalf("no line %q; lines: %v", msg, h.seen)
	}
	return st
}

// TestLinesBeforeTheCatalog: the lines saying the templates were loaded,
// that GitHub cannot be reached and that it is reachable again are each
// written before the catalog they tell of is served, so whoever sees that
// catalog (Load, /healthz) finds the line in the log.
func TestLinesBeforeTheCatalog(t *testing.T) {
	h := newHarness(t, standardLibrary())
	const (
		loaded      = "GitHub templates loaded"
		unavailable = "cannot revalidate GitHub templates; serving the cached ones"
		back        = "GitHub is reachable again; templates are fresh"
	)
	lines := newStateAtLine(loaded, unavailable, back)
	s := h.source(func(c *Config) { c.Logger = slog.New(lines) })
	lines.s.Store(s)
	good, err := s.Load(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	h.fake.SetFault(500)
	h.clock.Add(DefaultTTL + time.Second)
	if stale, err := s.Refresh(ctxT(t)); err == nil || stale.Stale() == nil {
		t.Fatalf("Refresh with GitHub failing: %v, stale %v; want an error and a stale catalog", err, stale.Stale())
	}
	h.fake.SetFault(0)
	if fresh, err := s.Refresh(ctxT(t)); err != nil || fresh.Stale() != nil {
		t.Fatalf("Refresh with GitHub back: %v, stale %v; want a fresh catalog", err, fresh.Stale())
	}

	if at := lines.state(t, loaded).current; at == good {
		t.Errorf("%q was written after its catalog was served", loaded)
	}
	if at := lines.state(t, unavailable).current; at == nil || at.Stale() != nil {
		t.Errorf("%q was written after the catalog was marked stale", unavailable)
	}
	if at := lines.state(t, back).current; at == nil || at.Stale() == nil {
		t.Errorf("%q was written after the fresh catalog was served", back)
	}
}

// TestAloneLinesBeforeTheStatus: the lines saying a replica revalidates
// alone, its cluster unreachable, and that it shares again are written
// before SharedStatus (/healthz) says so.
func TestAloneLinesBeforeTheStatus(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t, true)
	const (
		alone = "revalidating GitHub alone: the cluster is unreachable"
		again = "sharing GitHub revalidation with the cluster again"
	)
	lines := newStateAtLine(alone, again)
	s := c.replica("a", "", func(cfg *Config) { cfg.Logger = slog.New(lines) })
	lines.s.Store(s)
	loadAll(t, s)
	watching(t, s)
	c.srv.Stop()
	c.connected(false)
	c.settle(s)
	c.advance(DefaultTTL)
	c.settle(s)
	if st, _ := s.SharedStatus(); !st.Alone {
		t.Fatalf("status %+v with NATS down, want alone", st)
	}
	c.srv.Restart()
	c.connected(true)
	c.settle(s)
	c.advance(DefaultTTL)
	c.settle(s)
	if st, _ := s.SharedStatus(); st.Alone {
		t.Fatalf("status %+v with NATS back, want shared", st)
	}

	if lines.state(t, alone).alone {
		t.Errorf("%q was written after the status said alone", alone)
	}
	if !lines.state(t, again).alone {
		t.Errorf("%q was written after the status said shared again", again)
	}
}
