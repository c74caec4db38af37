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
	"github.com/flowyprompt/flowyprompt/internal/testclock"
	"github.com/flowyprompt/flowyprompt/templates"
)

// clusterHarness is a fake GitHub and a real NATS server shared by
// replicas, each a Source with its own node and cache directory.
type clusterHarness struct {
	*harness
	srv    *natstest.Server // nil on an external server
	url    string
	prefix string
	nodes  map[string]*cluster.Node
	timers map[*Source]*atomic.Int32
}

// clusterServerEnv names an external NATS server (e.g. an installed NATS
// 2.9) for the cluster tests that do not stop and restart the server;
// unset, every test runs an embedded one.
const clusterServerEnv = "FLOWYPROMPT_TEST_NATS_URL"

// newClusterHarness starts the replicas' NATS server: embedded when the
// test stops and restarts it (restartable) or clusterServerEnv is unset.
func newClusterHarness(t *testing.T, restartable ...bool) *clusterHarness {
	t.Helper()
	c := &clusterHarness{harness: newHarness(t, standardLibrary()), nodes: map[string]*cluster.Node{}, timers: map[*Source]*atomic.Int32{}}
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
	n, err := cluster.Join(cluster.Options{URL: c.url, Prefix: c.prefix, Replica: id, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.t.Fatalf("join %s: %v", id, err)
	}
	c.t.Cleanup(n.Close)
	c.nodes[id] = n
	eventually(c.t, id+" connected", n.Connected)
	if cacheDir == "" {
		cacheDir = c.t.TempDir()
	}
	s := c.source(append([]func(*Config){func(cfg *Config) {
		cfg.CacheDir, cfg.Shared, cfg.Replica = cacheDir, cluster.NewCatalog(n), id
	}}, edit...)...)
	c.timers[s] = clockTimers(s, c.clock)
	return s
}

// clockTimers makes Watch's timers fire when the test clock reaches their
// deadline, so that tests move time with the clock alone. It counts the
// timers armed and not yet fired or stopped: a test moves the clock once
// Watch waits, since a timer armed after the move would wait for the next.
func clockTimers(s *Source, clock *testclock.Clock) *atomic.Int32 {
	live := &atomic.Int32{}
	s.newTimer = func(d time.Duration) (<-chan time.Time, func()) {
		deadline := clock.Now().Add(d)
		ch, stop := make(chan time.Time, 1), make(chan struct{})
		var once sync.Once
		end := func() { once.Do(func() { live.Add(-1); close(stop) }) }
		live.Add(1)
		go func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if now := clock.Now(); !now.Before(deadline) {
						end()
						ch <- now
						return
					}
				}
			}
		}()
		return ch, end
	}
	return live
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	eventually(c.t, "every replica fresh and waiting", func() bool {
		for _, s := range srcs {
			if s.FreshFor() <= 0 || c.timers[s].Load() == 0 {
				return false
			}
		}
		return true
	})
}

// TestClusterColdStart: three replicas starting together cost about what
// one does; the others take the catalog from the cluster.
func TestClusterColdStart(t *testing.T) {
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
		c.clock.Add(ttl)
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

	c.clock.Add(DefaultTTL + time.Second)
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
	c := newClusterHarness(t, true)
	srcs := []*Source{c.replica("a", ""), c.replica("b", ""), c.replica("c", "")}
	loadAll(t, srcs...)
	watches := make([]<-chan *templates.Catalog, len(srcs))
	for i, s := range srcs {
		watches[i] = watching(t, s)
	}
	c.srv.Stop()
	eventually(t, "every node disconnected", func() bool {
		for _, n := range c.nodes {
			if n.Connected() {
				return false
			}
		}
		return true
	})
	c.fake.Reset()
	for range 2 {
		c.settle(srcs...)
		c.clock.Add(DefaultTTL)
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
	eventually(t, "every node reconnected", func() bool {
		for _, n := range c.nodes {
			if !n.Connected() {
				return false
			}
		}
		return true
	})
	c.fake.Reset()
	c.settle(srcs...)
	c.clock.Add(DefaultTTL)
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
	go func() {
		cat, err := a.Load(ctxT(t))
		done <- result{cat, err}
	}()
	time.Sleep(300 * time.Millisecond) // several polls of the state
	select {
	case r := <-done:
		t.Fatalf("Load returned while another replica held a live claim: %v", r.err)
	default:
	}
	if n := c.fake.Total(); n != 0 {
		t.Errorf("%d GitHub requests while another replica held a live claim, want 0", n)
	}
	c.clock.Add(claimExpiry)
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
	c.clock.Add(claimExpiry + time.Second)
	renewedAt := c.clock.Now()
	eventually(t, "a renewal at the clock's time", func() bool {
		st, _, err := a.readState(ctxT(t))
		return err == nil && st.Claim != nil && st.Claim.At.Equal(renewedAt)
	})

	b := c.replica("b", "")
	done := make(chan error, 1)
	go func() {
		_, err := b.Load(ctxT(t))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // several of b's looks at the state
	select {
	case err := <-done:
		t.Fatalf("b's Load returned (%v) while a held a renewed claim", err)
	default:
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
	c.clock.Add(DefaultTTL)
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
	c.clock.Add(failureBackoff)
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
