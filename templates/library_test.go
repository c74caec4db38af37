package templates

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSource hands out catalogs built from the files set last; gate, when
// set, holds every Load until it is closed.
type fakeSource struct {
	mu      sync.Mutex
	files   []File
	err     error
	gate    chan struct{}
	calls   atomic.Int32
	entered chan struct{}
}

func (s *fakeSource) Info() SourceInfo { return SourceInfo{Kind: "fake", Location: "memory"} }

func (s *fakeSource) FreshFor() time.Duration { return 0 }

func (s *fakeSource) set(err error, files ...File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files, s.err = files, err
}

func (s *fakeSource) Load(ctx context.Context) (*Catalog, error) {
	s.calls.Add(1)
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.gate != nil {
		<-s.gate
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return Build(s.files, BuildOptions{Logger: quiet, Info: s.Info()}), nil
}

type notification struct {
	old, new []string
	ch       Changes
}

func record(l *Library) (*[]notification, *sync.Mutex) {
	var mu sync.Mutex
	var got []notification
	l.OnChange(func(old, new *Catalog, ch Changes) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, notification{names(old.Templates()), names(new.Templates()), ch})
	})
	return &got, &mu
}

func TestLibraryLoad(t *testing.T) {
	src := &fakeSource{}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	l := NewLibrary(src, quiet)
	if l.Source() != src {
		t.Error("Source() is not the source")
	}
	before := l.Catalog()
	if before == nil || before.Len() != 0 || before.Info().Kind != "fake" {
		t.Fatalf("catalog before Load = %+v", before)
	}
	got, mu := record(l)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, names(l.Catalog().Templates())); diff != "" {
		t.Errorf("catalog mismatch (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []notification{{old: []string{}, new: []string{"a"}, ch: Changes{Added: []string{"a"}, Changed: []string{}, Removed: []string{}}}}
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported(notification{})); diff != "" {
		t.Errorf("notifications mismatch (-want +got):\n%s", diff)
	}
}

func TestLibraryLoadErrorKeepsCatalog(t *testing.T) {
	boom := errors.New("boom")
	src := &fakeSource{}
	src.set(boom)
	l := NewLibrary(src, quiet)
	if err := l.Load(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Load = %v", err)
	}
	if l.Catalog() == nil || l.Catalog().Len() != 0 {
		t.Fatal("failed Load left no empty catalog")
	}

	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	if _, err := l.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.set(boom)
	if _, err := l.Refresh(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Refresh = %v", err)
	}
	if l.Catalog().Len() != 1 {
		t.Error("a failed refresh dropped the catalog")
	}
}

func TestLibraryRefreshReportsChanges(t *testing.T) {
	src := &fakeSource{}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")}, File{Path: "b.json", Data: tmpl("b", "1")})
	l := NewLibrary(src, quiet)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, mu := record(l)

	// Same contents in a new catalog: swapped in, nobody notified.
	ch, err := l.Refresh(context.Background())
	if err != nil || !ch.Empty() {
		t.Fatalf("Refresh = %+v, %v", ch, err)
	}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "2")}, File{Path: "c.json", Data: tmpl("c", "1")})
	ch, err = l.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{Added: []string{"c"}, Changed: []string{"a"}, Removed: []string{"b"}}
	if diff := cmp.Diff(want, ch); diff != "" {
		t.Errorf("changes mismatch (-want +got):\n%s", diff)
	}
	mu.Lock()
	if diff := cmp.Diff([]notification{{old: []string{"a", "b"}, new: []string{"a", "c"}, ch: want}}, *got, cmp.AllowUnexported(notification{})); diff != "" {
		t.Errorf("notifications mismatch (-want +got):\n%s", diff)
	}
	mu.Unlock()
}

func TestLibraryRefreshSharesOneLoad(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	l := NewLibrary(src, quiet)
	var joined sync.WaitGroup
	joined.Add(3)
	l.joined = joined.Done

	type result struct {
		ch  Changes
		err error
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			ch, err := l.Refresh(context.Background())
			results <- result{ch, err}
		}()
	}
	joined.Wait() // all three are waiting on the same load
	close(src.gate)
	want := Changes{Added: []string{"a"}, Changed: []string{}, Removed: []string{}}
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if diff := cmp.Diff(want, r.ch); diff != "" {
			t.Errorf("changes mismatch (-want +got):\n%s", diff)
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Errorf("%d loads, want 1 shared", n)
	}
}

func TestLibraryRefreshCallerGivesUp(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	l := NewLibrary(src, quiet)
	swapped := make(chan Changes, 1)
	l.OnChange(func(_, _ *Catalog, ch Changes) { swapped <- ch })

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := l.Refresh(ctx)
		errc <- err
	}()
	<-src.entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Refresh = %v, want context.Canceled", err)
	}
	// The shared load was not cancelled with its first caller.
	close(src.gate)
	if ch := <-swapped; len(ch.Added) != 1 {
		t.Errorf("changes = %+v", ch)
	}
	if l.Catalog().Len() != 1 {
		t.Error("the detached load was not swapped in")
	}
}

func TestLibraryOnChangeRemove(t *testing.T) {
	src := &fakeSource{}
	l := NewLibrary(src, quiet)
	var a, b atomic.Int32
	removeA := l.OnChange(func(_, _ *Catalog, _ Changes) { a.Add(1) })
	l.OnChange(func(_, _ *Catalog, _ Changes) { b.Add(1) })

	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	if _, err := l.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	removeA()
	removeA() // twice is harmless
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "2")})
	if _, err := l.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.Load() != 1 || b.Load() != 2 {
		t.Errorf("calls a=%d b=%d, want 1 and 2", a.Load(), b.Load())
	}
}

// watchSource delivers the catalogs sent on feed, as a Watcher.
type watchSource struct {
	fakeSource
	feed chan *Catalog
}

func (s *watchSource) Watch(ctx context.Context, onChange func(*Catalog)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-s.feed:
			onChange(c)
		}
	}
}

func TestLibraryRun(t *testing.T) {
	src := &watchSource{feed: make(chan *Catalog)}
	l := NewLibrary(src, quiet)
	changes := make(chan Changes, 10)
	l.OnChange(func(_, _ *Catalog, ch Changes) { changes <- ch })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()

	c1 := Build([]File{{Path: "a.json", Data: tmpl("a", "1")}}, BuildOptions{Logger: quiet})
	src.feed <- c1
	if ch := <-changes; len(ch.Added) != 1 {
		t.Errorf("changes = %+v", ch)
	}
	// A catalog whose templates are the same but which reports something
	// new (here: it is stale) notifies with empty changes, so listeners can
	// warn clients without announcing a list change.
	stale := c1.WithStale(&Staleness{Reason: "offline"})
	src.feed <- stale
	if ch := <-changes; !ch.Empty() || l.Catalog().Stale() == nil {
		t.Errorf("stale swap: changes = %+v, stale = %v", ch, l.Catalog().Stale())
	}
	// The same catalog again is swapped in silently.
	src.feed <- stale.WithStale(&Staleness{Reason: "offline"})
	c2 := Build([]File{{Path: "a.json", Data: tmpl("a", "2")}}, BuildOptions{Logger: quiet})
	src.feed <- c2
	if ch := <-changes; len(ch.Changed) != 1 {
		t.Errorf("changes = %+v, want a changed", ch)
	}
	if l.Catalog() != c2 {
		t.Error("Run did not swap in the watcher's catalog")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}

	// Without a watcher, Run returns at once.
	if err := NewLibrary(&fakeSource{}, quiet).Run(context.Background()); err != nil {
		t.Errorf("Run without watcher = %v", err)
	}
}

// refreshingSource is a Refresher whose Refresh, like the GitHub source,
// also hands the new catalog to its watcher before returning it.
type refreshingSource struct {
	fakeSource
	onWatch func(*Catalog)
}

func (s *refreshingSource) Refresh(ctx context.Context) (*Catalog, error) {
	c, err := s.Load(ctx)
	if err == nil && s.onWatch != nil {
		s.onWatch(c)
	}
	return c, err
}

// TestLibraryRefreshReportsChangesSwappedByWatcher: when the source's
// watcher swaps the new catalog in during Refresh, Refresh still reports
// what changed.
func TestLibraryRefreshReportsChangesSwappedByWatcher(t *testing.T) {
	src := &refreshingSource{}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	l := NewLibrary(src, quiet)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.onWatch = func(c *Catalog) { l.swap(c) }
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "2")})
	ch, err := l.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Changed) != 1 || ch.Changed[0] != "a" {
		t.Fatalf("Refresh reported %+v, want a changed", ch)
	}
}

// catalogAtLine is a log handler that notes, for each line, the catalog
// its library served when the line was written.
type catalogAtLine struct {
	lib  *Library
	mu   sync.Mutex
	seen map[string]*Catalog // by message
}

func (h *catalogAtLine) Enabled(context.Context, slog.Level) bool { return true }
func (h *catalogAtLine) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *catalogAtLine) WithGroup(string) slog.Handler            { return h }

func (h *catalogAtLine) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen[r.Message] = h.lib.Catalog()
	return nil
}

// TestLibraryLogsBeforeSwap: the lines about a new catalog (what changed,
// its problems) are written before it is swapped in, so whoever sees it
// through Catalog finds them in the log.
func TestLibraryLogsBeforeSwap(t *testing.T) {
	src := &fakeSource{}
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "1")})
	h := &catalogAtLine{seen: map[string]*Catalog{}}
	l := NewLibrary(src, slog.New(h))
	h.lib = l
	if err := l.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := l.Catalog()
	src.set(nil, File{Path: "a.json", Data: tmpl("a", "2")}, File{Path: "bad.json", Data: []byte(`{"metadata":`)})
	if _, err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, msg := range []string{"templates changed", "invalid template left out"} {
		at, ok := h.seen[msg]
		switch {
		case !ok:
			t.Errorf("no line %q; lines: %v", msg, h.seen)
		case at != before:
			t.Errorf("%q was written after the new catalog was swapped in", msg)
		}
	}
	if l.Catalog() == before {
		t.Error("the new catalog was not swapped in")
	}
}
