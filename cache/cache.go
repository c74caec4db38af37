// Package cache is a small TTL + ETag entry store: entries keyed in the
// seed's format (`template-list:{ref}`, plus content-addressed blobs) with
// the revalidation state they need (an ETag and an expiry), single-flight
// loading (Load), an injectable clock, a byte bound with
// least-recently-used eviction, and optional persistence to one file
// written atomically.
//
// An expired entry is not deleted: it is stale, and its ETag is exactly what
// a conditional request needs (Peek returns it, Get does not). Entries whose
// ExpiresAt is zero never expire; content-addressed data (git blobs) is stored
// that way because a blob SHA can never point at other bytes.
//
// The cache knows nothing about GitHub; package github decides what to store.
package cache

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Kinds of entries: the seed's template list, and blobs.
const (
	KindTemplateList = "template-list" // template-list:{ref}
	KindBlob         = "blob"          // blob:{sha}, content-addressed
	// A file's history (github.Source.FileHistory): the commits list of
	// history:{path}:{ref}, revalidated with its ETag; the blob SHA of a
	// path at a commit, file-at:{path}:{commit}, which never changes; and
	// the bytes of such blobs, history-blob:{sha}, kept apart from KindBlob
	// because a sync prunes the blobs its commit no longer uses.
	KindHistory     = "history"
	KindFileAt      = "file-at"
	KindHistoryBlob = "history-blob"
)

// Defaults used when Options leaves a field zero.
const (
	DefaultTTL         = 15 * time.Minute
	DefaultMaxBytes    = 64 << 20
	DefaultLoadTimeout = 2 * time.Minute
)

// ErrNotModified is what a Loader returns when its source answered "not
// modified" (HTTP 304): Load then refreshes the stale entry's TTL instead of
// replacing it.
var ErrNotModified = errors.New("cache: not modified")

// Clock returns the current time. Tests inject one to move past a TTL without
// sleeping.
type Clock func() time.Time

// Entry is one cached value with what revalidation needs.
type Entry struct {
	Key       string    `json:"key"`
	ETag      string    `json:"etag,omitempty"` // verbatim, quotes included
	Value     []byte    `json:"value"`
	CachedAt  time.Time `json:"cachedAt"`
	ExpiresAt time.Time `json:"expiresAt"` // zero: never expires
}

// Fresh reports whether e can be used at now without revalidation.
func (e Entry) Fresh(now time.Time) bool {
	return e.ExpiresAt.IsZero() || now.Before(e.ExpiresAt)
}

// size is what an entry costs against MaxBytes; keys and ETags count because
// thousands of small entries are as real a cost as one large one.
func (e Entry) size() int64 {
	return int64(len(e.Key) + len(e.ETag) + len(e.Value))
}

// Loader produces a new entry for a key. stale is the expired entry, if any,
// so the loader can send its ETag; returning ErrNotModified keeps it.
type Loader func(ctx context.Context, stale *Entry) (Entry, error)

// Options configures a Cache. The zero value is usable.
type Options struct {
	TTL         time.Duration // lifetime given by Touch and Load; default DefaultTTL
	MaxBytes    int64         // bound on the sum of entry sizes; default DefaultMaxBytes
	Now         Clock         // default time.Now
	LoadTimeout time.Duration // bound on one shared Load; default DefaultLoadTimeout
	Logger      *slog.Logger  // warnings (corrupt file); default slog.Default()
}

// Cache is safe for concurrent use.
type Cache struct {
	ttl         time.Duration
	maxBytes    int64
	now         Clock
	loadTimeout time.Duration
	logger      *slog.Logger

	group singleflight.Group
	// joined, when set (tests), runs once a Load has joined or started the
	// shared load for its key.
	joined func()

	mu    sync.Mutex
	items map[string]*list.Element // of *Entry
	lru   *list.List               // front: most recently used
	bytes int64
	// gen counts changes to the entries (added, replaced, touched,
	// removed), so that SaveIfChanged can tell that nothing changed.
	gen uint64

	// saveMu makes Saves one at a time, so the last to start is the last
	// written; savedGen and savedPath describe the last file written
	// (or opened), under saveMu.
	saveMu    sync.Mutex
	savedGen  uint64
	savedPath string
	// encoding, when set (tests), runs between a Save's snapshot and its
	// encoding.
	encoding func()
}

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = DefaultLoadTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Cache{
		ttl:         opts.TTL,
		maxBytes:    opts.MaxBytes,
		now:         opts.Now,
		loadTimeout: opts.LoadTimeout,
		logger:      opts.Logger,
		items:       make(map[string]*list.Element),
		lru:         list.New(),
	}
}

// KeyFor builds a key in the seed's format, namespaced so two repositories
// (or two servers sharing one cache) never collide: KeyFor("github.com/o/r",
// KindTemplateList, "templates", "main") is
// "github.com/o/r|template-list:templates:main". Empty parts are left out,
// so KeyFor(ns, KindTemplateList, "", "main") is "ns|template-list:main" and
// KeyFor(ns, KindBlob, sha, "") is "ns|blob:SHA".
func KeyFor(namespace, kind, name, ref string) string {
	parts := make([]string, 0, 3)
	for _, p := range []string{kind, name, ref} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return namespace + "|" + strings.Join(parts, ":")
}

// Get returns the entry for key if it is fresh.
func (c *Cache) Get(key string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return Entry{}, false
	}
	e := el.Value.(*Entry)
	if !e.Fresh(c.now()) {
		return Entry{}, false
	}
	c.lru.MoveToFront(el)
	return clone(e), true
}

// Peek returns the entry for key, fresh or stale; the caller checks Fresh.
func (c *Cache) Peek(key string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return Entry{}, false
	}
	c.lru.MoveToFront(el)
	return clone(el.Value.(*Entry)), true
}

// View returns the value stored for key, fresh or stale, without the copy
// Peek makes. The bytes are shared with the cache and with every other
// viewer: the caller must never modify them. It is for values kept as long
// as the cache keeps its own (templates built from cached blobs), which a
// copy would hold twice; the cache never modifies a value in place, as Put
// replaces the entry instead.
func (c *Cache) View(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	v := el.Value.(*Entry).Value
	return v[:len(v):len(v)], true // an append must not write into the shared array
}

// Put stores e as given (a zero ExpiresAt never expires; a zero CachedAt
// becomes now). An entry larger than MaxBytes is not kept.
func (c *Cache) Put(e Entry) {
	if e.CachedAt.IsZero() {
		e.CachedAt = c.now()
	}
	e.Value = append([]byte(nil), e.Value...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(&e)
}

func (c *Cache) put(e *Entry) {
	c.gen++
	if el, ok := c.items[e.Key]; ok {
		c.remove(el)
	}
	if e.size() > c.maxBytes {
		return
	}
	c.items[e.Key] = c.lru.PushFront(e)
	c.bytes += e.size()
	for c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*Entry)
	delete(c.items, e.Key)
	c.bytes -= e.size()
	c.gen++
}

// Touch gives an entry a new TTL from now, as a 304 revalidation does, and
// reports whether the entry exists. Entries that never expire stay so.
func (c *Cache) Touch(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return false
	}
	e := el.Value.(*Entry)
	if !e.ExpiresAt.IsZero() {
		e.ExpiresAt = c.now().Add(c.ttl)
		c.gen++
	}
	c.lru.MoveToFront(el)
	return true
}

// Invalidate removes key.
func (c *Cache) Invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
}

// Keys returns the keys that start with prefix, most recently used first.
func (c *Cache) Keys(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if k := el.Value.(*Entry).Key; strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Load returns the fresh entry for key, or runs load once for all concurrent
// callers and stores what it returns. The shared load runs detached from any
// one caller's context (one caller giving up must not fail the others) under
// its own timeout; each caller still returns when its own ctx ends. A
// loader's entry with a zero ExpiresAt gets the cache's TTL (use Put for
// entries that never expire).
func (c *Cache) Load(ctx context.Context, key string, load Loader) (Entry, error) {
	if e, ok := c.Get(key); ok {
		return e, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
		defer cancel()
		var stale *Entry
		if e, ok := c.Peek(key); ok {
			stale = &e
		}
		e, err := load(lctx, stale)
		if errors.Is(err, ErrNotModified) && stale != nil {
			c.Touch(key)
			if e, ok := c.Peek(key); ok {
				return e, nil
			}
			// Evicted between the two calls: the stale copy is still right.
			stale.ExpiresAt = c.now().Add(c.ttl)
			return *stale, nil
		}
		if err != nil {
			return Entry{}, err
		}
		now := c.now()
		e.Key = key
		if e.CachedAt.IsZero() {
			e.CachedAt = now
		}
		if e.ExpiresAt.IsZero() {
			e.ExpiresAt = now.Add(c.ttl)
		}
		c.Put(e)
		return clone(&e), nil
	})
	if c.joined != nil {
		c.joined()
	}
	select {
	case <-ctx.Done():
		return Entry{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Entry{}, r.Err
		}
		// Callers sharing one load each get their own bytes, as Get gives.
		e := r.Val.(Entry)
		return clone(&e), nil
	}
}

func clone(e *Entry) Entry {
	out := *e
	out.Value = append([]byte(nil), e.Value...)
	return out
}
