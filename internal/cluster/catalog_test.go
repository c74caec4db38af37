package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// catalogServerEnv names an external NATS server for the catalog tests
// that need no restart, e.g. an installed NATS 2.9 to check that the
// catalog uses nothing newer:
//
//	FLOWYPROMPT_TEST_NATS_URL=nats://127.0.0.1:4222 go test -run Catalog ./internal/cluster/
//
// Unset, they run against the embedded server like the others.
const catalogServerEnv = "FLOWYPROMPT_TEST_NATS_URL"

func catalogServerURL(t *testing.T) string {
	t.Helper()
	if u := os.Getenv(catalogServerEnv); u != "" {
		t.Logf("catalog test against the external NATS server %s", u)
		return u
	}
	return natstest.Start(t).URL()
}

// joinFresh joins with a prefix of its own, so that runs against an
// external server never see another run's bucket.
func joinFresh(t *testing.T, url, id, prefix string) *Node {
	t.Helper()
	n, err := Join(Options{URL: url, Replica: id, Prefix: prefix, Keys: testKeys})
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	t.Cleanup(n.Close)
	waitFor(t, id+" connected", n.changes, n.Connected)
	return n
}

func testPrefix(t *testing.T) string {
	var b [4]byte
	rand.Read(b[:])
	return "fpt" + hex.EncodeToString(b[:])
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCatalogCompareAndSet(t *testing.T) {
	url, prefix := catalogServerURL(t), testPrefix(t)
	a := NewCatalog(joinFresh(t, url, "a", prefix))
	b := NewCatalog(joinFresh(t, url, "b", prefix))
	ctx := ctxFor(t)
	const key = "src-0123456789.state"

	v, rev, err := a.Get(ctx, key)
	if err != nil || v != nil || rev != 0 {
		t.Fatalf("Get of an absent key = %q, %d, %v; want nil, 0, nil", v, rev, err)
	}
	r1, ok, err := a.Create(ctx, key, []byte("one"))
	if err != nil || !ok || r1 == 0 {
		t.Fatalf("first Create = %d, %v, %v; want a revision, true, nil", r1, ok, err)
	}
	steps := []struct {
		name    string
		do      func() (uint64, bool, error)
		wantOK  bool
		wantVal string
	}{
		{"create over an existing key", func() (uint64, bool, error) { return b.Create(ctx, key, []byte("two")) }, false, "one"},
		{"update at the current revision", func() (uint64, bool, error) { return b.Update(ctx, key, []byte("two"), r1) }, true, "two"},
		{"update at a stale revision", func() (uint64, bool, error) { return a.Update(ctx, key, []byte("three"), r1) }, false, "two"},
	}
	for _, st := range steps {
		rev, ok, err := st.do()
		if err != nil || ok != st.wantOK {
			t.Errorf("%s = %d, %v, %v; want ok %v and no error", st.name, rev, ok, err, st.wantOK)
		}
		got, grev, err := a.Get(ctx, key)
		if err != nil || string(got) != st.wantVal {
			t.Errorf("after %s: Get = %q, %v; want %q", st.name, got, err, st.wantVal)
		}
		if st.wantOK && grev != rev {
			t.Errorf("after %s: Get's revision %d, the write returned %d", st.name, grev, rev)
		}
	}

	blob := bytes.Repeat([]byte("x"), 100<<10)
	if err := a.Put(ctx, "src-0123456789.blob.abc", blob); err != nil {
		t.Fatalf("Put of a 100 KB value: %v", err)
	}
	if got, _, err := b.Get(ctx, "src-0123456789.blob.abc"); err != nil || !bytes.Equal(got, blob) {
		t.Errorf("Get of the 100 KB value = %d bytes, %v", len(got), err)
	}
	for i := range 2 { // the second deletes an absent key
		if err := b.Delete(ctx, "src-0123456789.blob.abc"); err != nil {
			t.Errorf("Delete %d: %v", i, err)
		}
	}
	if got, rev, err := a.Get(ctx, "src-0123456789.blob.abc"); err != nil || got != nil || rev != 0 {
		t.Errorf("Get after Delete = %d bytes, %d, %v; want absent", len(got), rev, err)
	}
	// Nothing stays behind: no delete marker for the key in the stream.
	st, err := a.node.JetStream().Stream(ctx, "KV_"+a.bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("$KV."+a.bucket+".src-0123456789.blob.abc"))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects["$KV."+a.bucket+".src-0123456789.blob.abc"]; n != 0 {
		t.Errorf("%d messages left for the deleted key, want none", n)
	}
	if max := a.MaxValueSize(); max < 100<<10 || max > 64<<20 {
		t.Errorf("MaxValueSize = %d, want the server's max payload less headroom", max)
	}
	if err := a.Put(ctx, "src-0123456789.big", make([]byte, a.MaxValueSize()+2*payloadHeadroom)); err == nil {
		t.Error("Put of a value over the max payload succeeded; want an error")
	}
}

// recorder collects what a Watch reports.
type recorder struct {
	mu      sync.Mutex
	vals    []string
	changed chan struct{} // closed and replaced at each value
}

func (r *recorder) add(v []byte, _ uint64) {
	r.mu.Lock()
	r.vals = append(r.vals, string(v))
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// changes returns a channel closed at the next value reported.
func (r *recorder) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.vals) == 0 {
		return ""
	}
	return r.vals[len(r.vals)-1]
}

// all is every value reported, in order.
func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vals)
}

func watch(t *testing.T, c *Catalog, key string) *recorder {
	t.Helper()
	r := &recorder{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Watch(ctx, key, r.add) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	})
	return r
}

func TestCatalogWatch(t *testing.T) {
	url, prefix := catalogServerURL(t), testPrefix(t)
	a := NewCatalog(joinFresh(t, url, "a", prefix))
	b := NewCatalog(joinFresh(t, url, "b", prefix))
	ctx := ctxFor(t)
	const key = "src-watch.state"
	rev, _, err := a.Create(ctx, key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	r := watch(t, b, key)
	waitFor(t, "the current value on arming", r.changes, func() bool { return r.last() == "v1" })
	for i, v := range []string{"v2", "v3"} {
		var ok bool
		if rev, ok, err = a.Update(ctx, key, []byte(v), rev); err != nil || !ok {
			t.Fatalf("update %d: %v, %v", i, ok, err)
		}
		waitFor(t, "watch sees "+v, r.changes, func() bool { return r.last() == v })
	}
	if err := a.Put(ctx, "src-watch.other", []byte("ignored")); err != nil {
		t.Fatal(err)
	}
	// Values arrive in order: once a later write to key is seen, another
	// key's value would have been reported before it.
	if _, ok, err := a.Update(ctx, key, []byte("v4"), rev); err != nil || !ok {
		t.Fatalf("update after the other key's put: %v, %v", ok, err)
	}
	waitFor(t, "watch sees v4", r.changes, func() bool { return r.last() == "v4" })
	if err := b.Watch(ctx, "bad key with spaces", func([]byte, uint64) {}); !errors.Is(err, jetstream.ErrInvalidKey) {
		t.Errorf("Watch of an invalid key = %v, want an invalid-key error", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.vals {
		if v == "ignored" {
			t.Error("a watch of one key reported another key's value")
		}
	}
}

// TestCatalogAcrossServerRestart: while NATS is down every call fails at
// once (the source then works alone); when it is back the store works
// again and the watch, armed again, reports what changed meanwhile.
func TestCatalogAcrossServerRestart(t *testing.T) {
	srv := natstest.Start(t)
	prefix := testPrefix(t)
	na, nb := joinFresh(t, srv.URL(), "a", prefix), joinFresh(t, srv.URL(), "b", prefix)
	a, b := NewCatalog(na), NewCatalog(nb)
	ctx := ctxFor(t)
	const key = "src-restart.state"
	if _, _, err := a.Create(ctx, key, []byte("before")); err != nil {
		t.Fatal(err)
	}
	r := watch(t, b, key)
	waitFor(t, "the value before the outage", r.changes, func() bool { return r.last() == "before" })

	srv.Stop()
	waitFor(t, "a disconnected", na.changes, func() bool { return !na.Connected() })
	if _, _, err := a.Get(ctx, key); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get while NATS is down = %v, want ErrUnavailable", err)
	}
	if _, ok, err := a.Update(ctx, key, []byte("x"), 1); err == nil || ok {
		t.Errorf("Update while NATS is down = %v, %v; want an error", ok, err)
	}

	srv.Restart()
	waitFor(t, "a reconnected", na.changes, na.Connected)
	waitFor(t, "b reconnected", nb.changes, nb.Connected)
	var v []byte
	var rev uint64
	// JetStream may need a moment after the reconnection: checked again
	// at each heartbeat a hears.
	waitFor(t, "the value kept across the restart", na.changes, func() bool {
		var err error
		v, rev, err = a.Get(ctx, key)
		return err == nil && string(v) == "before"
	})
	if _, ok, err := a.Update(ctx, key, []byte("after"), rev); err != nil || !ok {
		t.Fatalf("Update after the restart = %v, %v", ok, err)
	}
	waitFor(t, "the watch sees the value written after the restart", r.changes, func() bool { return r.last() == "after" })
}
