// Package labelset holds the libraries of a server's labels (package
// label): the default label's, and each other one's, opened on first use
// and revalidated from then on.
package labelset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/flowyprompt/flowyprompt/templates"
)

// Open builds the library of one label that is not the default, loaded
// (Library.Load has succeeded). It is called at most once per label at a
// time, and again only after a failure.
type Open func(ctx context.Context, label string) (*templates.Library, error)

// Set holds the libraries of a server's labels: the default label's,
// given, and each other one's, opened on first use. At most one library
// per label is ever open, so the number of libraries is bounded by the
// labels configured. A library once open is kept, and runs (revalidates,
// Library.Run) until the Set is closed. Every method is safe for
// concurrent use.
type Set struct {
	names []string
	open  Open
	log   *slog.Logger
	group singleflight.Group

	mu       sync.Mutex
	libs     map[string]*templates.Library
	watchers map[int]func(string, *templates.Library)
	nextID   int
	ctx      context.Context // the libraries' Run
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// NewSet returns the set of the labels names (the default first, whose
// library is def), opening the others with open. A nil logger discards.
func NewSet(names []string, def *templates.Library, open Open, log *slog.Logger) *Set {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Set{names: slices.Clone(names), open: open, log: log, ctx: ctx, cancel: cancel,
		libs: map[string]*templates.Library{names[0]: def}, watchers: map[int]func(string, *templates.Library){}}
}

// Names lists the labels, the default first.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Library is the library serving label, one of Names, opened on its first
// use: callers asking at once share one opening. A failure is returned to
// the callers of that opening, and the next call tries again. ctx bounds
// the wait, not the opening, which others may share.
func (s *Set) Library(ctx context.Context, name string) (*templates.Library, error) {
	if !slices.Contains(s.names, name) {
		return nil, fmt.Errorf("label %q is not one of %v", name, s.names)
	}
	s.mu.Lock()
	lib := s.libs[name]
	s.mu.Unlock()
	if lib != nil {
		return lib, nil
	}
	ch := s.group.DoChan(name, func() (any, error) {
		s.mu.Lock()
		if lib := s.libs[name]; lib != nil {
			s.mu.Unlock()
			return lib, nil
		}
		runCtx := s.ctx
		s.mu.Unlock()
		if runCtx.Err() != nil {
			return nil, errors.New("the server is shutting down")
		}
		lib, err := s.open(context.WithoutCancel(ctx), name)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.libs[name] = lib
		watchers := make([]func(string, *templates.Library), 0, len(s.watchers))
		for _, w := range s.watchers {
			watchers = append(watchers, w)
		}
		s.wg.Add(1)
		s.mu.Unlock()
		for _, w := range watchers {
			w(name, lib)
		}
		go func() {
			defer s.wg.Done()
			if err := lib.Run(runCtx); err != nil && runCtx.Err() == nil {
				s.log.Warn("watching a label's templates stopped", "label", name, "err", err)
			}
		}()
		s.log.Info("label opened", "label", name, "templates", lib.Catalog().Len())
		return lib, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*templates.Library), nil
	}
}

// Opened calls fn with the library of each label as it is opened, after
// calling it at once with those open already, the default's among them;
// fn must be quick. stop ends the calls.
func (s *Set) Opened(fn func(label string, lib *templates.Library)) (stop func()) {
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	s.watchers[id] = fn
	open := make(map[string]*templates.Library, len(s.libs))
	for k, v := range s.libs {
		open[k] = v
	}
	s.mu.Unlock()
	for _, name := range s.names {
		if lib := open[name]; lib != nil {
			fn(name, lib)
		}
	}
	return func() {
		s.mu.Lock()
		delete(s.watchers, id)
		s.mu.Unlock()
	}
}

// Close stops the revalidation of the libraries the set opened and waits
// for it to end. The default library is its owner's to stop.
func (s *Set) Close() {
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
}
