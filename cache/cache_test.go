package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/testclock"
	"github.com/google/go-cmp/cmp"
)

func newClock() *testclock.Clock {
	return testclock.New(time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC))
}

func TestKeyFor(t *testing.T) {
	tests := []struct {
		ns, kind, name, ref string
		want                string
	}{
		{"github.com/o/r", KindTemplateList, "templates", "main", "github.com/o/r|template-list:templates:main"},
		{"github.com/o/r", KindTemplateList, "", "main", "github.com/o/r|template-list:main"},
		{"github.com/o/r", KindBlob, "abc123", "", "github.com/o/r|blob:abc123"},
		{"github.com/o/r", KindTemplateList, "", "feature/x", "github.com/o/r|template-list:feature/x"},
		{"", KindTemplateList, "A", "v1.0.0", "|template-list:A:v1.0.0"},
	}
	for _, tt := range tests {
		if got := KeyFor(tt.ns, tt.kind, tt.name, tt.ref); got != tt.want {
			t.Errorf("KeyFor(%q, %q, %q, %q) = %q, want %q", tt.ns, tt.kind, tt.name, tt.ref, got, tt.want)
		}
	}
	// Different repositories never share a key.
	if KeyFor("github.com/a/b", KindTemplateList, "", "main") == KeyFor("github.com/a/c", KindTemplateList, "", "main") {
		t.Error("keys for different repositories collide")
	}
}

func TestExpiryAndTouch(t *testing.T) {
	clk := newClock()
	c := New(Options{TTL: time.Minute, Now: clk.Now})
	set(c, "k", []byte("v1"), `"e1"`)
	c.Put(Entry{Key: "forever", Value: []byte("blob")})

	steps := []struct {
		name      string
		advance   time.Duration
		touch     bool
		wantGet   bool
		wantPeek  bool
		wantFresh bool
	}{
		{name: "just set", wantGet: true, wantPeek: true, wantFresh: true},
		{name: "one second before expiry", advance: 59 * time.Second, wantGet: true, wantPeek: true, wantFresh: true},
		{name: "at expiry the entry is stale", advance: time.Second, wantGet: false, wantPeek: true, wantFresh: false},
		{name: "touch revalidates", touch: true, wantGet: true, wantPeek: true, wantFresh: true},
		{name: "stale again after another ttl", advance: time.Minute, wantGet: false, wantPeek: true, wantFresh: false},
	}
	for _, st := range steps {
		clk.Add(st.advance)
		if st.touch && !c.Touch("k") {
			t.Fatalf("%s: Touch reported a missing entry", st.name)
		}
		_, gotGet := c.Get("k")
		e, gotPeek := c.Peek("k")
		if gotGet != st.wantGet || gotPeek != st.wantPeek || e.Fresh(clk.Now()) != st.wantFresh {
			t.Errorf("%s: Get ok=%v Peek ok=%v fresh=%v, want %v %v %v", st.name, gotGet, gotPeek, e.Fresh(clk.Now()), st.wantGet, st.wantPeek, st.wantFresh)
		}
		if gotPeek && (e.ETag != `"e1"` || string(e.Value) != "v1") {
			t.Errorf("%s: entry = %+v, want the stored value and ETag", st.name, e)
		}
	}
	clk.Add(24 * 365 * time.Hour)
	if e, ok := c.Get("forever"); !ok || string(e.Value) != "blob" {
		t.Errorf("entry with zero ExpiresAt: Get = %+v, %v; want it forever", e, ok)
	}
	if c.Touch("forever"); !mustPeek(t, c, "forever").ExpiresAt.IsZero() {
		t.Error("Touch gave a never-expiring entry an expiry")
	}
	if c.Touch("missing") {
		t.Error("Touch of a missing key reported true")
	}
}

// set stores value under key with the cache's TTL, as a revalidated entry
// is stored.
func set(c *Cache, key string, value []byte, etag string) {
	now := c.now()
	c.Put(Entry{Key: key, ETag: etag, Value: value, CachedAt: now, ExpiresAt: now.Add(c.ttl)})
}

// occupancy is how many entries c holds and what they cost.
func occupancy(c *Cache) (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes
}

func mustPeek(t *testing.T, c *Cache, key string) Entry {
	t.Helper()
	e, ok := c.Peek(key)
	if !ok {
		t.Fatalf("Peek(%q): missing", key)
	}
	return e
}

func TestValuesAreCopied(t *testing.T) {
	c := New(Options{})
	v := []byte("abc")
	set(c, "k", v, "")
	v[0] = 'X'
	e, _ := c.Get("k")
	e.Value[1] = 'Y'
	if got := mustPeek(t, c, "k").Value; string(got) != "abc" {
		t.Errorf("stored value changed through a caller's slice: %q", got)
	}
}

func TestInvalidateKeys(t *testing.T) {
	c := New(Options{})
	for _, k := range []string{"ns|blob:1", "ns|blob:2", "ns|template-list:main", "other|blob:1"} {
		set(c, k, []byte("x"), "")
	}
	c.Invalidate("ns|blob:1")
	c.Invalidate("never-there")
	if diff := cmp.Diff([]string{"ns|blob:2"}, c.Keys("ns|blob:")); diff != "" {
		t.Errorf("Keys after Invalidate (-want +got):\n%s", diff)
	}
	for _, k := range c.Keys("") {
		c.Invalidate(k)
	}
	if n, b := occupancy(c); n != 0 || b != 0 {
		t.Errorf("after invalidating every key: %d entries, %d bytes; want none", n, b)
	}
}

func TestLRUEviction(t *testing.T) {
	// Each entry costs len(key)+len(value) = 1+9 = 10 bytes.
	val := []byte("123456789")
	tests := []struct {
		name     string
		ops      func(c *Cache)
		wantKeys []string
	}{
		{
			name: "oldest goes first",
			ops: func(c *Cache) {
				for _, k := range []string{"a", "b", "c", "d"} {
					set(c, k, val, "")
				}
			},
			wantKeys: []string{"d", "c", "b"},
		},
		{
			name: "a read makes an entry recent",
			ops: func(c *Cache) {
				set(c, "a", val, "")
				set(c, "b", val, "")
				set(c, "c", val, "")
				c.Get("a")
				set(c, "d", val, "")
			},
			wantKeys: []string{"d", "a", "c"},
		},
		{
			name: "touch makes an entry recent",
			ops: func(c *Cache) {
				set(c, "a", val, "")
				set(c, "b", val, "")
				set(c, "c", val, "")
				c.Touch("a")
				set(c, "d", val, "")
				set(c, "e", val, "")
			},
			wantKeys: []string{"e", "d", "a"},
		},
		{
			name: "an entry larger than the bound is not kept",
			ops: func(c *Cache) {
				set(c, "a", val, "")
				set(c, "huge", bytes.Repeat([]byte("x"), 100), "")
			},
			wantKeys: []string{"a"},
		},
		{
			name: "replacing an entry does not count twice",
			ops: func(c *Cache) {
				for range 10 {
					set(c, "a", val, "")
				}
				set(c, "b", val, "")
			},
			wantKeys: []string{"b", "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{MaxBytes: 30})
			tt.ops(c)
			if diff := cmp.Diff(tt.wantKeys, c.Keys("")); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if n, b := occupancy(c); n != len(tt.wantKeys) || b != int64(10*len(tt.wantKeys)) {
				t.Errorf("%d entries, %d bytes; want %d and %d", n, b, len(tt.wantKeys), 10*len(tt.wantKeys))
			}
		})
	}
}

func TestLoad(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name      string
		seed      *Entry // stored before Load; CachedAt/ExpiresAt relative to the clock
		fresh     bool
		result    Entry
		err       error
		wantCalls int
		wantStale string // ETag the loader must see, "" for none
		wantValue string
		wantErr   error
		wantFresh bool
	}{
		{name: "miss loads", result: Entry{Value: []byte("new"), ETag: `"n"`}, wantCalls: 1, wantValue: "new", wantFresh: true},
		{name: "fresh hit does not load", seed: &Entry{Value: []byte("old"), ETag: `"o"`}, fresh: true, wantCalls: 0, wantValue: "old", wantFresh: true},
		{name: "stale entry is revalidated with its etag", seed: &Entry{Value: []byte("old"), ETag: `"o"`}, result: Entry{Value: []byte("new"), ETag: `"n"`}, wantCalls: 1, wantStale: `"o"`, wantValue: "new", wantFresh: true},
		{name: "not modified keeps the value and refreshes the ttl", seed: &Entry{Value: []byte("old"), ETag: `"o"`}, err: fmt.Errorf("304: %w", ErrNotModified), wantCalls: 1, wantStale: `"o"`, wantValue: "old", wantFresh: true},
		{name: "failure keeps the stale entry", seed: &Entry{Value: []byte("old"), ETag: `"o"`}, err: errBoom, wantCalls: 1, wantStale: `"o"`, wantErr: errBoom, wantValue: "old", wantFresh: false},
		{name: "not modified without an entry is an error", err: ErrNotModified, wantCalls: 1, wantErr: ErrNotModified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := New(Options{TTL: time.Minute, Now: clk.Now})
			if tt.seed != nil {
				set(c, "k", tt.seed.Value, tt.seed.ETag)
				if !tt.fresh {
					clk.Add(2 * time.Minute)
				}
			}
			calls := 0
			gotStale := ""
			e, err := c.Load(context.Background(), "k", func(ctx context.Context, stale *Entry) (Entry, error) {
				calls++
				if stale != nil {
					gotStale = stale.ETag
				}
				return tt.result, tt.err
			})
			if calls != tt.wantCalls || gotStale != tt.wantStale {
				t.Errorf("loader calls = %d (stale ETag %q), want %d (%q)", calls, gotStale, tt.wantCalls, tt.wantStale)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(e.Value) != tt.wantValue {
				t.Errorf("Load value = %q, want %q", e.Value, tt.wantValue)
			}
			if tt.wantValue == "" {
				return
			}
			stored := mustPeek(t, c, "k")
			if string(stored.Value) != tt.wantValue || stored.Fresh(clk.Now()) != tt.wantFresh {
				t.Errorf("stored %q fresh=%v, want %q fresh=%v", stored.Value, stored.Fresh(clk.Now()), tt.wantValue, tt.wantFresh)
			}
		})
	}
}

func TestLoadSingleFlight(t *testing.T) {
	c := New(Options{})
	joined := make(chan struct{}, 32)
	c.joined = func() { joined <- struct{}{} }
	var calls atomic.Int32
	started := make(chan struct{})
	release := make(chan struct{})
	var loaderCtxErr error
	load := func(ctx context.Context, _ *Entry) (Entry, error) {
		calls.Add(1)
		close(started)
		<-release
		loaderCtxErr = ctx.Err()
		return Entry{Value: []byte("v")}, nil
	}

	// The first caller gives up while the load runs: that must not cancel
	// the shared load the others wait for.
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Load(firstCtx, "k", load)
		firstErr <- err
	}()
	<-started
	<-joined
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: err = %v, want context.Canceled", err)
	}

	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.Load(context.Background(), "k", load)
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = string(e.Value)
		}()
	}
	// Release the load only once every caller has joined it: a caller
	// arriving after it finished would start a second one.
	for range results {
		<-joined
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("loader ran %d times for concurrent callers, want 1", n)
	}
	if loaderCtxErr != nil {
		t.Errorf("shared load saw ctx error %v after its first caller gave up", loaderCtxErr)
	}
	for i, r := range results {
		if r != "v" {
			t.Errorf("caller %d got %q, want v", i, r)
		}
	}
}

func TestSaveOpen(t *testing.T) {
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "flowyprompt", "github")
	path := filepath.Join(dir, FileName("https://api.github.com/", "o/r", "main"))
	c := New(Options{TTL: time.Minute, Now: clk.Now})
	set(c, "ns|template-list:main", []byte(`{"commit":"abc"}`), `"etag-1"`)
	c.Put(Entry{Key: "ns|blob:1", Value: []byte{0, 1, 2, 255}})
	set(c, "ns|blob:2", []byte("two"), "")
	c.Get("ns|template-list:main") // most recent

	if err := c.Save(path); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if err := c.Save(path); err != nil { // over an existing file
		t.Fatalf("second Save: %v", err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("cache dir holds %d files, want only the cache (no temporary files left)", len(ents))
	}

	got, err := Open(path, Options{TTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if diff := cmp.Diff(c.Keys(""), got.Keys("")); diff != "" {
		t.Errorf("recency order after Open (-saved +opened):\n%s", diff)
	}
	for _, k := range c.Keys("") {
		if diff := cmp.Diff(mustPeek(t, c, k), mustPeek(t, got, k)); diff != "" {
			t.Errorf("entry %q after Open (-saved +opened):\n%s", k, diff)
		}
	}
}

func TestSaveIfChanged(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	seed := New(Options{TTL: time.Minute, Now: clk.Now})
	set(seed, "list", []byte("l"), `"e"`)
	seed.Put(Entry{Key: "blob", Value: []byte("b")})
	if err := seed.Save(path); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path, Options{TTL: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	// Each step runs on the cache as the steps before left it; the file is
	// removed first, so a write that should not happen shows.
	steps := []struct {
		name      string
		change    func()
		path      string
		wantWrite bool
	}{
		{name: "just opened", change: func() {}},
		{name: "an entry added", change: func() { c.Put(Entry{Key: "blob2", Value: []byte("c")}) }, wantWrite: true},
		{name: "nothing since", change: func() {}},
		{name: "reads change nothing", change: func() { c.Peek("list"); c.Get("blob"); c.Keys("") }},
		{name: "an expiry moved", change: func() { clk.Add(time.Second); c.Touch("list") }, wantWrite: true},
		{name: "touching what never expires changes nothing", change: func() { c.Touch("blob") }},
		{name: "removing what is not there changes nothing", change: func() { c.Invalidate("nope") }},
		{name: "an entry removed", change: func() { c.Invalidate("blob2") }, wantWrite: true},
		{name: "an entry replaced", change: func() { set(c, "list", []byte("l2"), `"e2"`) }, wantWrite: true},
		{name: "another file", change: func() {}, path: filepath.Join(dir, "other.json"), wantWrite: true},
		{name: "back to the first file", change: func() {}, wantWrite: true},
	}
	for _, st := range steps {
		p := path
		if st.path != "" {
			p = st.path
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		st.change()
		written, err := c.SaveIfChanged(p)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		_, statErr := os.Stat(p)
		if written != st.wantWrite || (statErr == nil) != st.wantWrite {
			t.Errorf("%s: written = %v, file exists = %v; want %v", st.name, written, statErr == nil, st.wantWrite)
		}
		if !st.wantWrite {
			continue
		}
		got, err := Open(p, Options{TTL: time.Minute, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range c.Keys("") {
			if diff := cmp.Diff(mustPeek(t, c, k), mustPeek(t, got, k)); diff != "" {
				t.Errorf("%s: %q on disk (-memory +disk):\n%s", st.name, k, diff)
			}
		}
	}
}

func TestSaveEncodesOutsideTheLock(t *testing.T) {
	// Encoding a large cache takes a while: readers and writers of the
	// cache must not wait for it.
	c := New(Options{})
	c.Put(Entry{Key: "a", Value: []byte("a")})
	put := make(chan struct{})
	c.encoding = func() {
		go func() {
			c.Put(Entry{Key: "b", Value: []byte("b")})
			c.Peek("a")
			close(put)
		}()
		select {
		case <-put:
		case <-time.After(10 * time.Second):
			t.Error("Put and Peek waited for the encoding of a Save")
		}
	}
	path := filepath.Join(t.TempDir(), "c.json")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	// What a Save writes is the snapshot it took: the entry put while it
	// encoded is saved by the next one.
	got, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, got.Keys("")); diff != "" {
		t.Errorf("saved keys (-want +got):\n%s", diff)
	}
	c.encoding = nil
	if written, err := c.SaveIfChanged(path); err != nil || !written {
		t.Errorf("SaveIfChanged after a change made during a Save = %v, %v; want it written", written, err)
	}
}

// TestOpenShorterTTL: entries saved under a longer TTL than the one the
// cache is opened with are fresh for at most the new TTL; shorter expiries
// and entries that never expire are kept as they are.
func TestOpenShorterTTL(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "cache.json")
	c := New(Options{TTL: time.Hour, Now: clk.Now})
	set(c, "long", []byte("1"), "")
	c.Put(Entry{Key: "soon", Value: []byte("2"), ExpiresAt: clk.Now().Add(time.Minute)})
	c.Put(Entry{Key: "blob", Value: []byte("3")})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Open(path, Options{TTL: 15 * time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]time.Time{
		"long": clk.Now().Add(15 * time.Minute),
		"soon": clk.Now().Add(time.Minute),
		"blob": {},
	} {
		if e := mustPeek(t, got, key); !e.ExpiresAt.Equal(want) {
			t.Errorf("%s expires at %v, want %v", key, e.ExpiresAt, want)
		}
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode = %v, want %v", path, got, want)
	}
}

func TestOpenBadFiles(t *testing.T) {
	tests := []struct {
		name     string
		content  *string // nil: no file
		asDir    bool
		wantErr  bool
		wantWarn bool
	}{
		{name: "missing file is an empty cache"},
		{name: "corrupt json is ignored with a warning", content: ptr(`{"version":1,"entries":[{"key":`), wantWarn: true},
		{name: "not json at all", content: ptr("\x00\x01garbage"), wantWarn: true},
		{name: "another version is ignored", content: ptr(`{"version":99,"entries":[]}`), wantWarn: true},
		{name: "unreadable path is reported", asDir: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.asDir {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			c, err := Open(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if (err != nil) != tt.wantErr {
				t.Errorf("Open error = %v, want error: %v", err, tt.wantErr)
			}
			if c == nil {
				t.Fatal("Open returned no cache")
			}
			if n, _ := occupancy(c); n != 0 {
				t.Fatalf("Open returned %v, want a usable empty cache", c)
			}
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != tt.wantWarn {
				t.Errorf("warning logged = %v, want %v; log: %s", warned, tt.wantWarn, logs.String())
			}
			// A usable cache is one that can be saved over the bad file.
			if !tt.asDir {
				set(c, "k", []byte("v"), "")
				if err := c.Save(path); err != nil {
					t.Errorf("Save over the bad file: %v", err)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestFileName(t *testing.T) {
	a := FileName("https://api.github.com/", "o/r", "main")
	if a != FileName("https://api.github.com/", "o/r", "main") {
		t.Error("FileName is not stable")
	}
	for _, other := range [][]string{
		{"https://api.github.com/", "o/r", "dev"},
		{"https://ghe.example.com/api/v3/", "o/r", "main"},
		{"https://api.github.com/", "o/r2", "main"},
		{"https://api.github.com/", "o", "/rmain"}, // parts are separated, not concatenated
	} {
		if FileName(other...) == a {
			t.Errorf("FileName(%q) collides with the main branch's", other)
		}
	}
	if strings.ContainsAny(a, "/:") || !strings.HasSuffix(a, ".json") {
		t.Errorf("FileName = %q, want a plain .json name", a)
	}
}

func FuzzOpen(f *testing.F) {
	c := New(Options{})
	set(c, "ns|template-list:main", []byte(`{"commit":"abc"}`), `"e"`)
	c.Put(Entry{Key: "ns|blob:1", Value: []byte{0, 255}})
	seedPath := filepath.Join(f.TempDir(), "seed.json")
	if err := c.Save(seedPath); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":1,"entries":null}`))
	f.Add([]byte(`{"version":1,"entries":[{"key":""}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"key":"a","value":"!!"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{MaxBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)}
		c, err := Open(path, opts)
		if err != nil {
			t.Fatalf("Open of a readable file failed: %v", err)
		}
		if _, b := occupancy(c); b > opts.MaxBytes {
			t.Fatalf("opened cache holds %d bytes, over its bound of %d", b, opts.MaxBytes)
		}
		// Whatever was accepted must survive a round trip unchanged.
		if err := c.Save(path); err != nil {
			t.Fatalf("Save: %v", err)
		}
		again, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.Keys(""), again.Keys("")); diff != "" {
			t.Fatalf("round trip changed keys:\n%s", diff)
		}
	})
}

func BenchmarkGet(b *testing.B) {
	c := New(Options{})
	v := bytes.Repeat([]byte("x"), 4096)
	for i := range 1000 {
		set(c, fmt.Sprintf("ns|blob:%d", i), v, "")
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c.Get("ns|blob:" + fmt.Sprint(i%1000))
		i++
	}
}

func BenchmarkSaveOpen(b *testing.B) {
	c := New(Options{})
	v := bytes.Repeat([]byte("x"), 4096)
	for i := range 150 {
		c.Put(Entry{Key: fmt.Sprintf("ns|blob:%d", i), Value: v})
	}
	path := filepath.Join(b.TempDir(), "c.json")
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Save(path); err != nil {
			b.Fatal(err)
		}
		if _, err := Open(path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSaveWritesWhatMarshalWould: the file written entry by entry is the
// one json.Marshal of the whole cache gave, so files written before and
// after read alike; an empty cache included.
func TestSaveWritesWhatMarshalWould(t *testing.T) {
	clk := newClock()
	for _, n := range []int{0, 1, 3} {
		c := New(Options{TTL: time.Minute, Now: clk.Now})
		for i := range n {
			set(c, fmt.Sprintf("ns|blob:%d", i), []byte{byte(i), '<', 255}, fmt.Sprintf(`"e%d"`, i))
		}
		path := filepath.Join(t.TempDir(), "c.json")
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := file{Version: fileVersion, Entries: []Entry{}}
		for _, k := range c.Keys("") {
			f.Entries = append(f.Entries, mustPeek(t, c, k))
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%d entries: file\n%s\nwant\n%s", n, got, want)
		}
	}
}

// TestSaveEncodingErrorLeavesNoFile: an entry that cannot be encoded (a
// time past year 9999) fails the save, keeps the last file and leaves no
// temporary file behind.
func TestSaveEncodingErrorLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	c := New(Options{TTL: time.Minute})
	c.Put(Entry{Key: "good", Value: []byte("g")})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	c.Put(Entry{Key: "bad", Value: []byte("b"), CachedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	err := c.Save(path)
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Save = %v, want an error naming the entry", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("cache dir holds %d files, want only the last good file", len(ents))
	}
	if got, err := Open(path, Options{}); err != nil || len(got.Keys("")) != 1 {
		t.Errorf("the last good file: %v, %v", got.Keys(""), err)
	}
}

// TestViewShares: View returns the stored bytes themselves, which Peek
// copies, and nothing for a missing key.
func TestViewShares(t *testing.T) {
	c := New(Options{})
	c.Put(Entry{Key: "k", Value: []byte("value")})
	a, ok1 := c.View("k")
	b, ok2 := c.View("k")
	if !ok1 || !ok2 || string(a) != "value" || &a[0] != &b[0] {
		t.Fatalf("View = %q %v, %q %v; want the same stored bytes twice", a, ok1, b, ok2)
	}
	if p := mustPeek(t, c, "k"); &p.Value[0] == &a[0] {
		t.Error("Peek shares the stored bytes; it must copy them")
	}
	if v, ok := c.View("missing"); ok || v != nil {
		t.Errorf("View(missing) = %q, %v", v, ok)
	}
}
