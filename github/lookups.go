package github

import (
	"container/list"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// DefaultVersionLookups is how many GitHub requests version lookups
// (FileHistory, FileAt) may make a minute per source: a client asking for
// random versions must not spend the token's hourly budget (5,000) that
// syncs need. 20 a minute is at most 1,200 an hour.
const DefaultVersionLookups = 20

// maxRemembered bounds each of the lookups' memories (histories per
// commit, versions known missing): entries past it drop the oldest first.
const maxRemembered = 1024

// lookups are what version lookups share within a source: the budget of
// GitHub requests, the histories already listed at a commit and the
// versions known not to exist at it. A commit never changes, so what is
// remembered about one stays true; a new commit is a new key.
type lookups struct {
	budget  *rate.Limiter
	perMin  int
	mu      sync.Mutex
	history *bounded[templates.Revisions] // commit + path → the history at that commit
	missing *bounded[error]               // commit + path + rev → the not-found answer
}

func newLookups(perMinute int) *lookups {
	return &lookups{
		budget:  rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), perMinute),
		perMin:  perMinute,
		history: newBounded[templates.Revisions](maxRemembered),
		missing: newBounded[error](maxRemembered),
	}
}

// spend takes one request from the budget at now, or returns the
// RATE_LIMITED fault saying when the next one is available.
func (l *lookups) spend(now time.Time, what string) error {
	r := l.budget.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		wait := time.Duration(math.Ceil(d.Seconds())) * time.Second
		return &fault.Error{Code: fault.RateLimited, What: what,
			Why:        fmt.Sprintf("version lookups of this source may make %d GitHub requests a minute, and they are spent", l.perMin),
			How:        fmt.Sprintf("retry in %d s, ask for a version already read, or raise --github-version-lookups (env GITHUB_VERSION_LOOKUPS)", int(wait.Seconds())),
			RetryAfter: wait, Details: map[string]any{"limit_per_minute": l.perMin}}
	}
	return nil
}

func (l *lookups) historyAt(commit, p string) (templates.Revisions, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.history.get(commit + "\x00" + p)
}

func (l *lookups) rememberHistory(commit, p string, revs templates.Revisions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history.put(commit+"\x00"+p, revs)
}

// missingAt is the not-found answer GitHub gave for p at rev when the
// source was at commit, or nil.
func (l *lookups) missingAt(commit, p, rev string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err, _ := l.missing.get(commit + "\x00" + p + "\x00" + rev)
	return err
}

func (l *lookups) rememberMissing(commit, p, rev string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.missing.put(commit+"\x00"+p+"\x00"+rev, err)
}

// bounded is a map holding at most max entries, the oldest put dropped
// first. Not safe for concurrent use.
type bounded[V any] struct {
	max   int
	order *list.List // of keys, oldest first
	items map[string]boundedItem[V]
}

type boundedItem[V any] struct {
	v V
	e *list.Element
}

func newBounded[V any](maxEntries int) *bounded[V] {
	return &bounded[V]{max: maxEntries, order: list.New(), items: map[string]boundedItem[V]{}}
}

func (b *bounded[V]) get(k string) (V, bool) {
	it, ok := b.items[k]
	return it.v, ok
}

func (b *bounded[V]) put(k string, v V) {
	if it, ok := b.items[k]; ok {
		b.items[k] = boundedItem[V]{v: v, e: it.e}
		return
	}
	for b.order.Len() >= b.max {
		delete(b.items, b.order.Remove(b.order.Front()).(string))
	}
	b.items[k] = boundedItem[V]{v: v, e: b.order.PushBack(k)}
}
