package templates

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// refreshTimeout bounds a shared refresh: it runs detached from the caller
// that started it (others may be waiting on it), so it needs its own limit.
const refreshTimeout = 2 * time.Minute

// Library holds the catalog handlers read. Readers call Catalog, which is a
// lock-free atomic load; a load or refresh builds a whole new catalog and
// swaps it in, so a reader never sees a half-updated set.
type Library struct {
	src    Source
	logger *slog.Logger
	cur    atomic.Pointer[Catalog]
	group  singleflight.Group

	swapMu sync.Mutex // orders swaps and their notifications

	listenMu  sync.Mutex
	listeners []listener
	nextID    int

	// joined, when set (tests), runs after a Refresh caller has joined
	// the shared load.
	joined func()
}

type listener struct {
	id int
	fn func(old, new *Catalog, ch Changes)
}

// NewLibrary returns a library over src; call Load before serving. A nil
// logger means slog.Default().
func NewLibrary(src Source, logger *slog.Logger) *Library {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Library{src: src, logger: logger}
	l.cur.Store(&Catalog{byName: map[string]*Entry{}, info: src.Info()})
	return l
}

// Source returns the library's source.
func (l *Library) Source() Source { return l.src }

// Catalog returns the current catalog: never nil (empty before Load).
func (l *Library) Catalog() *Catalog { return l.cur.Load() }

// Load loads the catalog for the first time. On error the library keeps
// what it had (an empty catalog before the first success).
func (l *Library) Load(ctx context.Context) error {
	c, err := l.src.Load(ctx)
	if err != nil {
		return err
	}
	l.swap(c)
	return nil
}

// Refresher is implemented by sources whose Load may answer from a cache
// (the GitHub source): Refresh goes to the origin now.
type Refresher interface {
	Refresh(ctx context.Context) (*Catalog, error)
}

// Refresh reloads from the source now (Refresher.Refresh when the source
// has it), swaps the catalog in and notifies
// listeners when templates changed. Concurrent calls share one load; a
// caller whose ctx ends stops waiting, but the shared load goes on (under
// its own timeout) for the others. On error the current catalog stays.
func (l *Library) Refresh(ctx context.Context) (Changes, error) {
	ch := l.group.DoChan("refresh", func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
		defer cancel()
		// Report changes against the catalog from before the load: a
		// watching source may swap the new catalog in on its own while
		// Refresh runs, and the caller still wants to hear what changed.
		before := l.cur.Load()
		load := l.src.Load
		if r, ok := l.src.(Refresher); ok {
			load = r.Refresh
		}
		c, err := load(lctx)
		if err != nil {
			// A source that kept serving (marked stale) still hands us
			// that catalog, so the stale mark reaches clients.
			if c != nil {
				l.swap(c)
			}
			return Changes{}, err
		}
		l.swap(c)
		return Diff(before, c), nil
	})
	if l.joined != nil {
		l.joined()
	}
	select {
	case <-ctx.Done():
		return Changes{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Changes{}, r.Err
		}
		return r.Val.(Changes), nil
	}
}

// OnChange registers fn to run after each swap of a new catalog. ch says
// which templates were added, changed or removed; it is empty when only what
// the catalog reports changed (invalid files, staleness), which listeners
// may still want to pass on; a catalog identical in every respect is
// swapped in silently. Calls are serialised, in swap order; fn must be
// quick and must not call Load or Refresh itself. remove unregisters it.
func (l *Library) OnChange(fn func(old, new *Catalog, ch Changes)) (remove func()) {
	l.listenMu.Lock()
	id := l.nextID
	l.nextID++
	l.listeners = append(l.listeners, listener{id, fn})
	l.listenMu.Unlock()
	return func() {
		l.listenMu.Lock()
		l.listeners = slices.DeleteFunc(slices.Clone(l.listeners), func(x listener) bool { return x.id == id })
		l.listenMu.Unlock()
	}
}

// Run runs the source's watcher, if it has one, swapping in each catalog it
// produces, until ctx ends. Without a watcher it returns nil at once.
func (l *Library) Run(ctx context.Context) error {
	w, ok := l.src.(Watcher)
	if !ok {
		return nil
	}
	return w.Watch(ctx, func(c *Catalog) { l.swap(c) })
}

// swap installs c and notifies listeners when templates changed. A catalog
// that differs only in what it reports (invalid files, staleness) is
// installed silently: clients have nothing new to list. Its lines are
// written before it is installed, so whoever sees it (Catalog) finds
// them in the log; swapMu makes the read of the old catalog and the
// store of the new one a swap.
func (l *Library) swap(c *Catalog) Changes {
	if c == nil {
		return Changes{}
	}
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	old := l.cur.Load()
	if old == c {
		return Changes{}
	}
	LogProblems(l.logger, old, c)
	ch := Diff(old, c)
	if ch.Empty() && !reportChanged(old, c) {
		l.cur.Store(c)
		return ch
	}
	switch {
	case old == nil || old.Len() == 0 && len(old.Invalid()) == 0:
		l.logger.Debug("templates loaded", "source", c.Info().Kind, "count", c.Len(), "invalid", len(c.Invalid()))
	case !ch.Empty():
		attrs := []any{"added", ch.Added, "changed", ch.Changed, "removed", ch.Removed, "source", c.Info().Kind, "count", c.Len()}
		if !ch.Flows.Empty() {
			attrs = append(attrs, slog.Group("flows", "added", ch.Flows.Added, "changed", ch.Flows.Changed, "removed", ch.Flows.Removed))
		}
		l.logger.Info("templates changed", attrs...)
	}
	l.cur.Store(c)
	l.listenMu.Lock()
	ls := l.listeners
	l.listenMu.Unlock()
	for _, x := range ls {
		x.fn(old, c, ch)
	}
	return ch
}

// reportChanged tells whether what a catalog reports besides its templates
// (invalid files and their reasons, staleness) differs.
func reportChanged(old, cur *Catalog) bool {
	if old == nil {
		return true
	}
	oi, ci := old.Invalid(), cur.Invalid()
	if len(oi) != len(ci) || !slices.EqualFunc(old.Conflicts(), cur.Conflicts(), func(a, b Conflict) bool { return a.Error() == b.Error() }) {
		return true
	}
	for i := range oi {
		if oi[i].Path != ci[i].Path || oi[i].Err.Error() != ci[i].Err.Error() {
			return true
		}
	}
	os, cs := old.Stale(), cur.Stale()
	if (os == nil) != (cs == nil) {
		return true
	}
	return os != nil && (os.Code != cs.Code || os.Reason != cs.Reason)
}
