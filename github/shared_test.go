package github

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flowyprompt/flowyprompt/internal/cluster"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/templates"
)

// clusterKeys are the state keys the replicas of the tests share: the
// cluster signs its messages with keys derived from them.
var clusterKeys = [][]byte{bytes.Repeat([]byte{0x5a}, 32)}

// clusterHarness is a fake GitHub and a real NATS server shared by
// replicas, each a Source with its own node, cache directory and store.
// The tests wait for events, never for time: each thing a test may wait for
// (a node's link going up or down, a replica's timer armed or ended, a
// call to a replica's store returning, the clock moving) wakes the waiters
// of await, which look again.
type clusterHarness struct {
	*harness
	srv     *natstest.Server // nil on an external server
	url     string
	prefix  string
	nodes   map[string]*cluster.Node
	stores  map[*Source]*observedStore
	changed *broadcast

	mu     sync.Mutex
	timers []*clockTimer   // armed, not yet fired or stopped
	live   map[*Source]int // of timers, per source
}

// clusterServerEnv names an external NATS server (e.g. an installed NATS
// 2.9) for the cluster tests that do not stop and restart the server;
// unset, every test runs an embedded one.
const clusterServerEnv = "FLOWYPROMPT_TEST_NATS_URL"

// newClusterHarness starts the replicas' NATS server: embedded when the
// test stops and restarts it (restartable) or clusterServerEnv is unset.
func newClusterHarness(t *testing.T, restartable ...bool) *clusterHarness {
	t.Helper()
	c := &clusterHarness{harness: newHarness(t, standardLibrary()), nodes: map[string]*cluster.Node{},
		stores: map[*Source]*observedStore{}, changed: newBroadcast(), live: map[*Source]int{}}
	c.url = os.Getenv(clusterServerEnv)
	if c.url == "" || len(restartable) > 0 {
		c.srv = natstest.Start(t)
		c.url = c.srv.URL()
	} else {
		// A bucket of this test's own on the shared server.
		c.prefix = fmt.Sprintf("fpt%d", time.Now().UnixNano())
		t.Logf("against the external NATS server %s", c.url)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", c.logs.String())
		}
	})
	return c
}

// replica starts replica id on cacheDir ("" for a directory of its own).
func (c *clusterHarness) replica(id, cacheDir string, edit ...func(*Config)) *Source {
	c.t.Helper()
	// The node logs each change of its link while it makes it, holding
	// the lock Connected takes: its records are the events after which
	// Connected may say something new, and says it once asked.
	logger := slog.New(notifyHandler{c.changed})
	n, err := cluster.Join(cluster.Options{URL: c.url, Prefix: c.prefix, Replica: id, Logger: logger, Keys: clusterKeys})
	if err != nil {
		c.t.Fatalf("join %s: %v", id, err)
	}
	c.t.Cleanup(n.Close)
	c.nodes[id] = n
	c.await(id+" connected", n.Connected)
	if cacheDir == "" {
		cacheDir = c.t.TempDir()
	}
	store := &observedStore{Shared: cluster.NewCatalog(n), changed: c.changed}
	s := c.source(append([]func(*Config){func(cfg *Config) {
		cfg.CacheDir, cfg.Shared, cfg.Replica = cacheDir, store, id
	}}, edit...)...)
	c.stores[s] = store
	s.newTimer = func(d time.Duration) (<-chan time.Time, func()) { return c.arm(s, d) }
	return s
}

// clockTimer is a timer of Watch that fires when advance moves the test
// clock to its deadline.
type clockTimer struct {
	src      *Source
	deadline time.Time
	fire     chan time.Time
}

// arm stands in for Watch's timer, so that tests move time with the
// clock alone (advance).
func (c *clusterHarness) arm(s *Source, d time.Duration) (<-chan time.Time, func()) {
	tm := &clockTimer{src: s, deadline: c.clock.Now().Add(d), fire: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, tm)
	c.live[s]++
	c.mu.Unlock()
	c.changed.notify()
	stop := func() {
		c.mu.Lock()
		i := slices.Index(c.timers, tm)
		if i >= 0 {
			c.timers = slices.Delete(c.timers, i, i+1)
			c.live[s]--
		}
		c.mu.Unlock()
		if i >= 0 {
			c.changed.notify()
		}
	}
	return tm.fire, stop
}

// advance moves the clock by d and fires the timers it reaches. A test
// moves the clock once Watch waits (settle), since a timer armed after the
// move would wait for the next.
func (c *clusterHarness) advance(d time.Duration) {
	c.clock.Add(d)
	now := c.clock.Now()
	c.mu.Lock()
	c.timers = slices.DeleteFunc(c.timers, func(tm *clockTimer) bool {
		if now.Before(tm.deadline) {
			return false
		}
		c.live[tm.src]--
		tm.fire <- now
		return true
	})
	c.mu.Unlock()
	c.changed.notify()
}

// await returns once cond holds, looking again after each event of the
// harness; it fails the test after 30 s. cond must not itself call a
// replica's store, whose every call is an event.
func (c *clusterHarness) await(what string, cond func() bool) {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		next := c.changed.next() // before looking, so no event is missed
		if cond() {
			return
		}
		select {
		case <-next:
		case <-timeout:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stateOf reads s's shared state past its observed store (a look of the
// test's own, which is no event).
func (c *clusterHarness) stateOf(s *Source) (sharedState, error) {
	v, _, err := c.stores[s].Shared.Get(ctxT(c.t), s.stateKey())
	if err != nil || v == nil {
		return sharedState{}, err
	}
	return decodeState(v)
}

// looks counts a replica's looks at its shared state from now on.
type looks struct {
	c     *clusterHarness
	s     *Source
	start int64
}

func (c *clusterHarness) looksAt(s *Source) looks {
	return looks{c: c, s: s, start: c.stores[s].stateReads.Load()}
}

// await waits for the replica's n-th look since looksAt. A replica
// waiting for another's claim looks again each sharedPoll, and stops
// looking once it returns or claims the check itself (to ask GitHub): its
// n-th look proves that it did neither before its (n-1)-th.
func (l looks) await(n int64) {
	l.c.t.Helper()
	l.c.await(fmt.Sprintf("%d looks of replica %s at the shared state", n, l.s.replica), func() bool {
		return l.c.stores[l.s].stateReads.Load()-l.start >= n
	})
}

// broadcast wakes every waiter on each notify: next returns a channel
// that the next notify closes.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// notifyHandler drops every record and notifies a broadcast of it.
type notifyHandler struct{ changed *broadcast }

func (notifyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h notifyHandler) Handle(context.Context, slog.Record) error {
	h.changed.notify()
	return nil
}
func (h notifyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h notifyHandler) WithGroup(string) slog.Handler      { return h }

// observedStore is a replica's store that notifies a broadcast once each
// call has returned (and each value its Watch delivered has been handled),
// and counts the replica's looks at its state key.
type observedStore struct {
	Shared
	changed    *broadcast
	stateReads atomic.Int64
}

func (o *observedStore) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	defer o.changed.notify()
	if strings.HasSuffix(key, ".state") {
		defer o.stateReads.Add(1)
	}
	return o.Shared.Get(ctx, key)
}

func (o *observedStore) Create(ctx context.Context, key string, value []byte) (uint64, bool, error) {
	defer o.changed.notify()
	return o.Shared.Create(ctx, key, value)
}

func (o *observedStore) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, bool, error) {
	defer o.changed.notify()
	return o.Shared.Update(ctx, key, value, rev)
}

func (o *observedStore) Put(ctx context.Context, key string, value []byte) error {
	defer o.changed.notify()
	return o.Shared.Put(ctx, key, value)
}

func (o *observedStore) Delete(ctx context.Context, key string) error {
	defer o.changed.notify()
	return o.Shared.Delete(ctx, key)
}

func (o *observedStore) Watch(ctx context.Context, key string, fn func([]byte, uint64)) error {
	return o.Shared.Watch(ctx, key, func(v []byte, rev uint64) {
		defer o.changed.notify()
		fn(v, rev)
	})
}

// watching runs Watch on s until the test ends and returns the catalogs
// its callback got.
func watching(t *testing.T, s *Source) <-chan *templates.Catalog {
	got := make(chan *templates.Catalog, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func(c *templates.Catalog) { got <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	})
	return got
}

func loadAll(t *testing.T, srcs ...*Source) []*templates.Catalog {
	t.Helper()
	cats := make([]*templates.Catalog, len(srcs))
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Go(func() { cats[i], errs[i] = s.Load(ctxT(t)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cats
}

// settle waits until every source is fresh and its Watch waits on its
// timer: then the clock may move.
func (c *clusterHarness) settle(srcs ...*Source) {
	c.t.Helper()
	c.await("every replica fresh and waiting", func() bool {
		for _, s := range srcs {
			c.mu.Lock()
			armed := c.live[s] > 0
			c.mu.Unlock()
			if !armed || s.FreshFor() <= 0 {
				return false
			}
		}
		return true
	})
}

// connected waits until every node's link is up (or, with up false, down).
func (c *clusterHarness) connected(up bool) {
	c.t.Helper()
	c.await(fmt.Sprintf("every node's link up: %v", up), func() bool {
		for _, n := range c.nodes {
			if n.Connected() != up {
				return false
			}
		}
		return true
	})
}

// TestClusterColdStart: three replicas starting together cost about what
// one does; the others take the catalog from the cluster.
func TestClusterColdStart(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	alone := c.source(func(cfg *Config) { cfg.CacheDir = t.TempDir() })
	if _, err := alone.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	one := c.costs()
	c.fake.Reset()

	srcs := []*Source{c.replica("a", ""), c.replica("b", ""), c.replica("c", "")}
	cats := loadAll(t, srcs...)
	three := c.costs()
	t.Logf("cold start: one replica alone %v; three replicas on a cluster %v", one, three)
	if three.Total > one.Total+2 {
		t.Errorf("three replicas cost %d requests, one alone %d: want at most %d", three.Total, one.Total, one.Total+2)
	}
	if three.Total > 152+2 {
		t.Errorf("three replicas cost %d requests, want at most 154", three.Total)
	}
	for i, cat := range cats {
		if cat.Info().Revision != c.fake.Head() || !slices.Equal(names(cat), c.lib.Valid) {
			t.Errorf("replica %d serves commit %s with %d templates; want %s with %d", i, cat.Info().Revision, cat.Len(), c.fake.Head(), len(c.lib.Valid))
		}
		if !slices.Equal(invalidPaths(cat), invalidPaths(cats[0])) {
			t.Errorf("replica %d reports other invalid files than replica 0", i)
		}
	}
}

// TestClusterSteadyState: with every replica watching, the cluster asks
// GitHub about once per TTL, not once per replica.
func TestClusterSteadyState(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	const ttl = time.Minute
	withTTL := func(cfg *Config) { cfg.TTL = ttl }
	srcs := []*Source{c.replica("a", "", withTTL), c.replica("b", "", withTTL), c.replica("c", "", withTTL)}
	loadAll(t, srcs...)
	for _, s := range srcs {
		watching(t, s)
	}
	c.fake.Reset()
	const rounds = 4
	for range rounds {
		c.settle(srcs...)
		c.advance(ttl)
	}
	c.settle(srcs...)
	got := c.fake.Count(fakegithub.RouteCommit)
	t.Logf("steady state over %d TTLs with 3 replicas watching: %v", rounds, c.costs())
	if got > rounds+1 || got < rounds {
		t.Errorf("%d commit checks over %d TTLs; want about one per TTL for the cluster (%d to %d)", got, rounds, rounds, rounds+1)
	}
	if c.costs().Total != got {
		t.Errorf("nothing changed, yet more than the commit was asked: %v", c.costs())
	}
	for _, s := range srcs {
		st, _ := s.SharedStatus()
		if !st.CheckedAt.Equal(c.clock.Now()) || st.Alone {
			t.Errorf("replica %s status %+v, want the check made at %v", s.replica, st, c.clock.Now())
		}
	}
}

// TestClusterChangeReachesEveryReplica: a commit one replica notices
// reaches the others' watchers without them asking GitHub.
func TestClusterChangeReachesEveryReplica(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	a, b, d := c.replica("a", ""), c.replica("b", ""), c.replica("c", "")
	first := loadAll(t, a, b, d)
	watches := []<-chan *templates.Catalog{watching(t, a), watching(t, b), watching(t, d)}
	before := c.fake.Head()
	oldBlob := fakegithub.BlobSHA(c.lib.Files["templates/Generated_010.json"])
	keptBlob := fakegithub.BlobSHA(c.lib.Files["templates/Generated_011.json"])
	head := c.fake.PutFile("templates/Generated_010.json", fakegithub.ValidTemplate("Generated_010", "new text {{subject}}"))
	c.fake.Reset()

	if _, err := a.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		select {
		case cat := <-w:
			e, ok := cat.Lookup("Generated_010")
			if cat == first[i] || cat.Info().Revision != head || !ok || !bytes.Contains(e.Raw, []byte("new text")) {
				t.Errorf("replica %d was told of commit %s without the new text; want %s", i, cat.Info().Revision, head)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("replica %d's watcher never heard of the new commit", i)
		}
	}
	cost := c.costs()
	t.Logf("one upstream change, three replicas: %v", cost)
	if cost.Total != 3 || cost.ByRoute["commit"] != 1 || cost.ByRoute["tree"] != 1 || cost.ByRoute["blob"] != 1 {
		t.Errorf("the change cost %v; want the noticing replica's 3 requests and none from the others", cost)
	}

	// The bucket keeps the new commit's files and drops what only the
	// old one used.
	for _, k := range []struct {
		key     string
		present bool
	}{
		{a.treeKey(head), true},
		{a.blobKey(keptBlob), true},
		{a.treeKey(before), false},
		{a.blobKey(oldBlob), false},
	} {
		v, _, err := a.store.Get(ctxT(t), k.key)
		if err != nil || (v != nil) != k.present {
			t.Errorf("%s: present %v (%v), want %v", k.key, v != nil, err, k.present)
		}
	}
}

// TestClusterJoinAndRestart: a replica joining a warm cluster asks GitHub
// nothing; a replica restarted on its disk cache after the TTL neither,
// when another replica checked meanwhile.
func TestClusterJoinAndRestart(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	dirA := t.TempDir()
	a := c.replica("a", dirA)
	b := c.replica("b", "")
	loadAll(t, a, b)
	c.fake.Reset()

	joiner := c.replica("d", "")
	cat, err := joiner.Load(ctxT(t))
	if err != nil || cat.Info().Revision != c.fake.Head() || cat.Len() != len(c.lib.Valid) {
		t.Fatalf("joiner: %v, %v", cat, err)
	}
	if cost := c.costs(); cost.Total != 0 {
		t.Errorf("joining a warm cluster cost %v, want nothing", cost)
	}

	c.advance(DefaultTTL + time.Second)
	if _, err := b.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.fake.Reset()
	restarted := c.replica("a2", dirA)
	done := watchBackground(restarted)
	cat, err = restarted.Load(ctxT(t))
	if err != nil || cat.Info().Revision != c.fake.Head() {
		t.Fatalf("restarted: %v", err)
	}
	// Restored from disk, its own check is past the TTL: Load serves it
	// and checks in the background.
	waitFor(t, done, "the restarted replica's background check")
	if cost := c.costs(); cost.Total != 0 {
		t.Errorf("restart on a warm disk cache and a warm cluster cost %v, want nothing", cost)
	}
	if st, _ := restarted.SharedStatus(); st.CheckedBy != "b" {
		t.Errorf("restarted replica's status %+v, want b's check adopted", st)
	}
}

// TestClusterNATSDown: without NATS each replica keeps serving and
// revalidates alone, saying so once; with NATS back they share again.
func TestClusterNATSDown(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t, true)
	srcs := []*Source{c.replica("a", ""), c.replica("b", ""), c.replica("c", "")}
	loadAll(t, srcs...)
	watches := make([]<-chan *templates.Catalog, len(srcs))
	for i, s := range srcs {
		watches[i] = watching(t, s)
	}
	c.srv.Stop()
	c.connected(false)
	c.fake.Reset()
	for range 2 {
		c.settle(srcs...)
		c.advance(DefaultTTL)
	}
	c.settle(srcs...)
	if got := c.fake.Count(fakegithub.RouteCommit); got != 6 {
		t.Errorf("two TTLs with NATS down: %d commit checks, want 6 (each replica alone)", got)
	}
	if n := c.logs.count("WARN", "revalidating GitHub alone: the cluster is unreachable"); n != 3 {
		t.Errorf("logged %d times that a replica revalidates alone, want once per replica (3)", n)
	}
	for _, s := range srcs {
		cat, err := s.Load(ctxT(t))
		if err != nil || cat.Len() != len(c.lib.Valid) || cat.Stale() != nil {
			t.Errorf("replica %s while NATS is down: %v", s.replica, err)
		}
		if st, _ := s.SharedStatus(); !st.Alone {
			t.Errorf("replica %s status %+v, want alone", s.replica, st)
		}
	}

	c.srv.Restart()
	c.connected(true)
	c.fake.Reset()
	c.settle(srcs...)
	c.advance(DefaultTTL)
	c.settle(srcs...)
	if got := c.fake.Count(fakegithub.RouteCommit); got != 1 {
		t.Errorf("first TTL with NATS back: %d commit checks, want 1 for the cluster", got)
	}
	for _, s := range srcs {
		if st, _ := s.SharedStatus(); st.Alone {
			t.Errorf("replica %s still alone after NATS came back: %+v", s.replica, st)
		}
	}

	// The watches were armed again: a change one replica notices reaches
	// the others.
	head := c.fake.PutFile("templates/Generated_010.json", fakegithub.ValidTemplate("Generated_010", "after the outage {{subject}}"))
	if _, err := srcs[0].Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		awaitCatalog(t, w, "replica "+srcs[i].replica+" told of "+head, func(cat *templates.Catalog) bool {
			return cat.Info().Revision == head
		})
	}
}

// awaitCatalog waits for a Watch callback whose catalog satisfies ok.
func awaitCatalog(t *testing.T, w <-chan *templates.Catalog, what string, ok func(*templates.Catalog) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case cat := <-w:
			if ok(cat) {
				return
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestClusterDeadClaim: a claim whose replica died is taken over once it
// is older than claimExpiry; until then a cold replica waits instead of
// asking GitHub.
func TestClusterDeadClaim(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	a := c.replica("a", "")
	ghost := sharedState{Claim: &claim{By: "ghost", At: c.clock.Now()}}
	if _, ok, err := a.writeState(ctxT(t), ghost, 0); err != nil || !ok {
		t.Fatalf("write the ghost's claim: %v, %v", ok, err)
	}
	type result struct {
		cat *templates.Catalog
		err error
	}
	done := make(chan result, 1)
	looks := c.looksAt(a)
	go func() {
		cat, err := a.Load(ctxT(t))
		done <- result{cat, err}
	}()
	looks.await(3)
	select {
	case r := <-done:
		t.Fatalf("Load returned while another replica held a live claim: %v", r.err)
	default:
	}
	if st, err := c.stateOf(a); err != nil || st.Claim == nil || st.Claim.By != "ghost" {
		t.Errorf("state while the ghost's claim lives = %+v, %v; want the ghost's claim untouched", st, err)
	}
	if n := c.fake.Total(); n != 0 {
		t.Errorf("%d GitHub requests while another replica held a live claim, want 0", n)
	}
	c.advance(claimExpiry)
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the expired claim was never taken over")
	}
	if r.err != nil || r.cat.Info().Revision != c.fake.Head() {
		t.Fatalf("Load after the claim expired: %v", r.err)
	}
	st, _, err := a.readState(ctxT(t))
	if err != nil || st.CheckedBy != "a" || st.Claim != nil || st.Commit != c.fake.Head() {
		t.Errorf("state after the takeover = %+v, %v; want a's check, no claim", st, err)
	}
}

// TestClusterClaimRenewed: a replica whose check outlasts claimExpiry
// keeps its claim by renewing it, so the others go on waiting for its
// answer rather than take the check over; and its answer is still written
// over the renewed claim.
func TestClusterClaimRenewed(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	a := c.replica("a", "")
	a.claimRenew = 20 * time.Millisecond
	held := sharedState{Claim: &claim{By: "a", At: c.clock.Now()}}
	rev, ok, err := a.writeState(ctxT(t), held, 0)
	if err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	cl := &claimed{rev: rev}
	stop := a.renewClaim(cl, held)
	defer stop()

	// Past the first claim's expiry, the renewals carry the clock's time.
	c.advance(claimExpiry + time.Second)
	renewedAt := c.clock.Now()
	c.await("a renewal at the clock's time", func() bool {
		st, err := c.stateOf(a)
		return err == nil && st.Claim != nil && st.Claim.At.Equal(renewedAt)
	})

	b := c.replica("b", "")
	done := make(chan error, 1)
	looks := c.looksAt(b)
	go func() {
		_, err := b.Load(ctxT(t))
		done <- err
	}()
	looks.await(3)
	select {
	case err := <-done:
		t.Fatalf("b's Load returned (%v) while a held a renewed claim", err)
	default:
	}
	if st, err := c.stateOf(b); err != nil || st.Claim == nil || st.Claim.By != "a" {
		t.Errorf("state while a renews its claim = %+v, %v; want a's claim", st, err)
	}
	if n := c.fake.Total(); n != 0 {
		t.Errorf("%d GitHub requests while a held a renewed claim, want 0", n)
	}

	// a finishes (here: with nothing found) over its latest renewal.
	stop()
	if !a.finishClaim(ctxT(t), cl, sharedState{CheckedBy: "a"}) {
		t.Fatal("finishing over the renewed claim failed")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("b's Load after a's claim ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b never loaded after a's claim ended")
	}
}

// TestClusterOutageShared: a failed check is shared, so the other
// replicas serve stale and wait for the retry time without asking GitHub.
func TestClusterOutageShared(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	srcs := []*Source{c.replica("a", ""), c.replica("b", ""), c.replica("c", "")}
	loadAll(t, srcs...)
	watches := make([]<-chan *templates.Catalog, len(srcs))
	for i, s := range srcs {
		watches[i] = watching(t, s)
	}
	c.settle(srcs...)
	c.fake.SetFault(503)
	c.fake.Reset()
	c.advance(DefaultTTL)
	for i, w := range watches {
		select {
		case cat := <-w:
			if cat.Stale() == nil {
				t.Errorf("replica %d was told of a catalog that is not stale", i)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("replica %d never heard of the outage", i)
		}
	}
	if got := c.fake.Total(); got != 1 {
		t.Errorf("the outage cost %d requests, want 1 for the cluster", got)
	}
	c.fake.SetFault(0)
	c.settle(srcs...)
	c.advance(failureBackoff)
	for i, w := range watches {
		select {
		case cat := <-w:
			if cat.Stale() != nil {
				t.Errorf("replica %d still stale after recovery", i)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("replica %d never heard of the recovery", i)
		}
	}
	if got := c.fake.Total(); got != 2 {
		t.Errorf("outage and recovery cost %d requests, want 2 for the cluster", got)
	}
}

// TestClusterNoTokenInBucket: nothing written to the bucket holds the
// token, after loads, a change and a refused token.
func TestClusterNoTokenInBucket(t *testing.T) {
	t.Parallel()
	c := newClusterHarness(t)
	a, b := c.replica("a", ""), c.replica("b", "")
	loadAll(t, a, b)
	c.fake.PutFile("templates/Generated_001.json", fakegithub.ValidTemplate("Generated_001", "v2 {{subject}}"))
	if _, err := a.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.fake.SetFault(401)
	if _, err := b.Refresh(ctxT(t)); err == nil {
		t.Fatal("refresh with a refused token succeeded")
	}
	kv, err := c.nodes["a"].JetStream().KeyValue(ctxT(t), c.nodes["a"].Bucket("catalog"))
	if err != nil {
		t.Fatal(err)
	}
	lister, err := kv.ListKeys(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var sawError bool
	for key := range lister.Keys() {
		e, err := kv.Get(ctxT(t), key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		v := e.Value()
		if zr, err := gzip.NewReader(bytes.NewReader(v)); err == nil {
			if v, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
		n++
		if bytes.Contains(v, []byte(testToken)) || bytes.Contains(v, []byte(testToken[4:])) {
			t.Errorf("key %s holds the token", key)
		}
		if strings.HasSuffix(key, ".state") && bytes.Contains(v, []byte("GITHUB_AUTH_FAILED")) {
			sawError = true
		}
	}
	if n < 148 || !sawError {
		t.Errorf("scanned %d values (error state seen: %v); want the state, the listing and the 146 blobs", n, sawError)
	}
}

// TestSharedListingSize: the listing of a large library, compressed, fits
// well within NATS's default 1 MB message.
func TestSharedListingSize(t *testing.T) {
	t.Parallel()
	var entries []TreeEntry
	for i := range 2000 {
		p := fmt.Sprintf("templates/team-%02d/Generated_Template_Name_%04d.json", i%40, i)
		entries = append(entries, TreeEntry{Path: p, SHA: fakegithub.BlobSHA([]byte(p)), Size: 2000 + i})
	}
	raw, err := json.Marshal(sharedTree{Entries: entries, Files: []TreeEntry{}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := encodeTree(entries, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listing of 2000 templates: %d bytes of JSON, %d gzipped", len(raw), len(v))
	if len(v) > 512<<10 {
		t.Errorf("the gzipped listing of 2000 templates is %d bytes; want it well under 1 MB", len(v))
	}
}
