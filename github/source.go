package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flowyprompt/flowyprompt/cache"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

const (
	// syncTimeout bounds one shared revalidation; it runs detached from
	// the callers waiting on it, so it needs its own limit.
	syncTimeout = 2 * time.Minute
	// failureBackoff spaces automatic retries after a failure that names
	// no retry time, so an outage is not hammered by every request.
	failureBackoff = 30 * time.Second
	// minWatchInterval keeps a tiny TTL from becoming a busy loop.
	minWatchInterval = time.Second
)

// listing is what the source persists about a ref: the commit it pointed at
// when last checked (the cache entry's ETag is the answer's ETag), the
// template files of that commit and the folder's other files.
type listing struct {
	Commit  string      `json:"commit"`
	Auth    string      `json:"auth"` // tokenID of the credentials the ETag belongs to
	Entries []TreeEntry `json:"entries"`
	// Files are the folder's other (non-template, non-hidden) files, which
	// templates may list as resources: path, SHA and size only, their
	// content is fetched when first read. nil in a listing written before
	// resources were served; then the tree is listed again.
	Files []TreeEntry `json:"files"`
	// ArchiveSize bounds the commit's archive (Client.treeFiles); 0 when
	// unknown, and then blobs are fetched one by one.
	ArchiveSize int64 `json:"archiveSize,omitempty"`
}

// Source serves the templates of a GitHub repository. It implements
// templates.Source and templates.Watcher. See the package documentation for
// the sync protocol.
type Source struct {
	cfg       settings
	client    *Client
	cache     *cache.Cache
	cachePath string // "" keeps the cache in memory only
	listKey   string
	blobNS    string // key prefix of blob entries
	ns        string
	pinned    bool
	authID    string
	logger    *slog.Logger
	now       func() time.Time

	group       singleflight.Group
	lookupGroup singleflight.Group // version lookups asked at once share one request
	lookups     *lookups           // their budget and what they remember
	bgRunning   atomic.Bool
	saveWarned  atomic.Bool
	noArchive   bool                                           // tests read every blob one by one
	newTimer    func(time.Duration) (<-chan time.Time, func()) // tests replace it
	bgDoneHook  func()                                         // tests observe background syncs
	listingMu   sync.Mutex                                     // serialises writes of the listing entry
	proposing   sync.Mutex                                     // one proposal at a time: two at once would race for one branch

	mu         sync.Mutex
	base       *templates.Catalog   // last good catalog, never marked stale
	baseBlobs  map[string]string    // path → blob SHA of each file base was built from
	files      map[string]TreeEntry // path → entry of every file under the folder at commit; nil: not listed yet (an older cache)
	current    *templates.Catalog   // what Load returns: base, or base marked stale
	lastLoaded *templates.Catalog   // what Load last handed out, so Watch can catch up
	commit     string
	stale      *templates.Staleness
	lastErr    error
	retryAt    time.Time // no automatic retry before this, after a failure
	freshUntil time.Time // the checked commit is trusted until then
	subs       map[int]func(*templates.Catalog)
	nextSub    int

	// The cluster (Config.Shared); store is nil without one.
	store    Shared
	replica  string
	sharedNS string
	alone    bool        // the store did not answer last time (s.mu)
	seen     sharedState // the cluster's last check, as last read (s.mu)
	stateRev uint64      // the newest revision of the state read or written (s.mu)
	// claimRenew spaces the renewals of a claim this replica holds
	// (claimRenewal; tests shorten it).
	claimRenew time.Duration
}

// NewSource checks cfg, opens the disk cache, and, when the cache holds a
// complete catalog, has it ready before any request is made.
func NewSource(cfg Config) (*Source, error) {
	st, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings() {
		st.logger.Warn(w)
	}
	client := newClient(st)
	refLabel := st.ref
	if refLabel == "" {
		refLabel = "HEAD"
	}
	ns := st.host + "/" + st.owner + "/" + st.repo
	s := &Source{
		cfg:     st,
		client:  client,
		ns:      ns,
		listKey: cache.KeyFor(ns, cache.KindTemplateList, st.path, refLabel),
		blobNS:  cache.KeyFor(ns, cache.KindBlob, "", ""),
		pinned:  IsCommitSHA(st.ref),
		authID:  tokenID(st.token),
		logger:  st.logger,
		now:     st.now,
		subs:    map[int]func(*templates.Catalog){},
		lookups: newLookups(st.versionLookups),
		newTimer: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTimer(d)
			return t.C, func() { t.Stop() }
		},
	}
	s.blobNS += ":"
	if st.shared != nil {
		s.store, s.replica, s.claimRenew = st.shared, st.replica, claimRenewal
		if s.replica == "" {
			s.replica = "replica-" + randomSuffix()
		}
		s.sharedNS = sharedNamespace(st.apiURL, st.owner+"/"+st.repo, st.ref, st.path)
	}

	opts := cache.Options{TTL: st.ttl, Now: st.now, Logger: st.logger, LoadTimeout: syncTimeout}
	dir := st.cacheDir
	if dir == "" {
		if dir, err = cache.Dir(); err != nil {
			s.logger.Warn("no user cache directory; GitHub templates are cached in memory only", "error", err)
		}
	}
	if dir != "" {
		s.cachePath = filepath.Join(dir, "github", cache.FileName(st.apiURL, st.owner+"/"+st.repo, st.ref, st.path))
	}
	s.cache = cache.New(opts)
	if s.cachePath != "" {
		c, err := cache.Open(s.cachePath, opts)
		if err != nil {
			s.logger.Warn("cannot read the GitHub template cache; starting without it", "path", s.cachePath, "error", err)
		}
		s.cache = c
	}
	s.restore()
	return s, nil
}

// Info says where the templates come from; Revision is the commit of the
// current catalog, once known.
func (s *Source) Info() templates.SourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked(s.commit)
}

func (s *Source) infoLocked(commit string) templates.SourceInfo {
	return templates.SourceInfo{Kind: "github", Location: s.cfg.webURL, Ref: s.cfg.ref, Revision: commit}
}

// Load returns the current catalog at once when there is one, starting a
// background revalidation when the TTL has passed; requests never wait for
// GitHub once a catalog exists. Without one it loads (all concurrent
// callers share one load) and returns GitHub's failure, if any.
func (s *Source) Load(ctx context.Context) (*templates.Catalog, error) {
	s.mu.Lock()
	cur, lastErr, retryAt := s.current, s.lastErr, s.retryAt
	if cur != nil {
		s.lastLoaded = cur
	}
	s.mu.Unlock()
	if cur != nil {
		if s.due(s.now()) {
			s.revalidateInBackground()
		}
		return cur, nil
	}
	if lastErr != nil && s.now().Before(retryAt) {
		return nil, lastErr
	}
	cat, err := s.syncWait(ctx, false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.lastLoaded = cat
	s.mu.Unlock()
	return cat, nil
}

// Refresh revalidates now, whatever the TTL (the refresh tool and `check`
// use it). It returns the resulting catalog; when GitHub fails while a
// catalog is held, it returns that catalog, marked stale, and the error. A
// source pinned to a commit SHA has nothing to revalidate once loaded.
func (s *Source) Refresh(ctx context.Context) (*templates.Catalog, error) {
	s.mu.Lock()
	cur := s.current
	s.mu.Unlock()
	if s.pinned && cur != nil {
		return cur, nil
	}
	return s.syncWait(ctx, true)
}

// Watch revalidates in the background and calls onChange with the new
// catalog when the commit changed, or when the catalog became stale or fresh
// again (templates.Library installs such catalogs without notifying
// clients). If the catalog changed since Load last returned it, onChange
// gets it at once. Watch returns nil when ctx ends.
//
// Each check is timed from the state the previous one left, whoever ran it
// (Watch, a Load past the TTL, a refresh, or a restart on the disk cache):
// one TTL after the last successful check, or, after a failure, at the
// retry time (the rate limit's reset, or failureBackoff), whichever is
// later. A fixed ticker would instead let checks drift up to two TTLs apart
// and delay the retry after an outage to the next tick.
func (s *Source) Watch(ctx context.Context, onChange func(*templates.Catalog)) error {
	s.mu.Lock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = onChange
	cur, last := s.current, s.lastLoaded
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}()
	if cur != nil && cur != last {
		onChange(cur)
	}
	if s.store != nil {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.watchShared(wctx)
		}()
		defer func() {
			cancel()
			<-done
		}()
	}
	if s.pinned {
		<-ctx.Done()
		return nil
	}
	for {
		fire, stop := s.newTimer(s.untilNextCheck(s.now()))
		select {
		case <-ctx.Done():
			stop()
			return nil
		case <-fire:
			stop()
			// The deadline may have moved since the timer was armed (a
			// refresh, or a Load past the TTL, checked meanwhile; the wall
			// clock was set back): then nothing is due yet, and the loop
			// arms the timer again for what is left.
			if s.due(s.now()) {
				s.syncWait(ctx, false) // a failure marks the catalog stale and notifies
			}
		}
	}
}

// untilNextCheck is how long Watch waits from now before the next check:
// until the checked commit expires and any retry time has passed, but never
// less than minWatchInterval, so that a tiny TTL or a deadline already past
// (a failed check that set no later retry) is not a busy loop.
func (s *Source) untilNextCheck(now time.Time) time.Duration {
	s.mu.Lock()
	next := s.freshUntil
	if s.retryAt.After(next) {
		next = s.retryAt
	}
	s.mu.Unlock()
	return max(next.Sub(now), minWatchInterval)
}

// pinnedFreshness is how long the catalog of a pinned commit may be
// cached: a commit's files never change.
const pinnedFreshness = 24 * time.Hour

// FreshFor counts down, on the source's clock, to the next revalidation: until then the server
// serves what it has, so a client asking earlier would get the same. A
// failed check that set a retry time counts down to that instead; a
// pinned commit never changes.
func (s *Source) FreshFor() time.Duration {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned && s.base != nil {
		return pinnedFreshness
	}
	next := s.freshUntil
	if s.retryAt.After(next) {
		next = s.retryAt
	}
	return max(0, next.Sub(now))
}

// due reports whether the ref should be revalidated at now.
func (s *Source) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case now.Before(s.retryAt):
		return false
	case s.base == nil:
		return true
	case s.pinned:
		return false
	}
	return !now.Before(s.freshUntil)
}

func (s *Source) revalidateInBackground() {
	if !s.bgRunning.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer func() {
			s.bgRunning.Store(false)
			if s.bgDoneHook != nil {
				s.bgDoneHook()
			}
		}()
		s.syncWait(context.Background(), false)
	}()
}

// syncWait runs one shared revalidation and waits for it or for ctx. A
// failed revalidation may still return a catalog (the held one, marked
// stale) with its error. force (a refresh) asks GitHub even when the
// cluster checked within the TTL.
func (s *Source) syncWait(ctx context.Context, force bool) (*templates.Catalog, error) {
	v, err := s.shared(ctx, "sync", func(ctx context.Context) (any, error) {
		return s.sync(ctx, force)
	})
	cat, _ := v.(*templates.Catalog) // nil when ctx ended first
	return cat, err
}

// sync revalidates through the cluster when there is one (Config.Shared)
// and it answers, and otherwise alone.
func (s *Source) sync(ctx context.Context, force bool) (*templates.Catalog, error) {
	if s.store != nil {
		if cat, err, done := s.syncShared(ctx, force); done {
			return cat, err
		}
	}
	return s.syncGitHub(ctx, nil)
}

// syncGitHub is the protocol of the package documentation: one conditional
// request for the ref; on a new commit one tree listing and only the blobs
// not yet cached; then a new catalog. With cl, this replica holds the
// cluster's claim: it starts from the cluster's last check, reads what the
// cluster has before asking GitHub, and publishes its answer.
func (s *Source) syncGitHub(ctx context.Context, cl *claimed) (*templates.Catalog, error) {
	now := s.now()
	old, oldEntry, haveOld := s.loadListing()
	etag, prev := "", ""
	if haveOld && old.Auth == s.authID {
		etag, prev = oldEntry.ETag, old.Commit
	}
	if cl != nil && cl.prev.Commit != "" && cl.prev.ETag != "" && cl.prev.Auth == s.authID {
		// The cluster's ETag is from its last check, as recent as ours
		// or more; it is sent only with the credentials it was
		// obtained with.
		etag, prev = cl.prev.ETag, cl.prev.Commit
	}
	fail := s.fail
	if cl != nil {
		fail = func(err error) (*templates.Catalog, error) {
			cat, ferr := s.fail(err)
			s.publishFailure(ctx, cl, err)
			return cat, ferr
		}
	}

	var sha, newETag string
	if s.pinned {
		sha = strings.ToLower(s.cfg.ref)
	} else {
		// An empty ref is resolved as HEAD, not as the default branch's
		// name: a renamed or changed default branch is then noticed at
		// the next check, at no extra request.
		var notModified bool
		var err error
		sha, newETag, notModified, err = s.client.ResolveRef(ctx, s.cfg.ref, etag)
		if err != nil {
			return fail(err)
		}
		if notModified {
			sha = prev
		}
	}

	entries, files, archiveSize, err := s.listFiles(ctx, sha, old, haveOld, cl != nil)
	if err != nil {
		return fail(err)
	}

	s.mu.Lock()
	changed := s.base == nil || s.commit != sha
	s.mu.Unlock()
	var contents map[string][]byte
	if changed {
		// Only a new commit needs blobs: an unchanged one is already
		// built, whatever the cache has evicted since.
		var err error
		if cl != nil {
			contents, err = s.sharedBlobs(ctx, sha, entries, archiveSize)
		} else {
			contents, err = s.blobs(ctx, sha, entries, archiveSize)
		}
		if err != nil {
			return fail(err)
		}
	}

	var value []byte
	if haveOld && old.Commit == sha && old.Files != nil && old.Auth == s.authID {
		// The listing is the one cached (a 304, most often): only the
		// check's time, expiry and ETag change, and re-encoding it would
		// cost more than the request did.
		value = oldEntry.Value
	} else {
		l := listing{Commit: sha, Auth: s.authID, Entries: entries, Files: files, ArchiveSize: archiveSize}
		var err error
		if value, err = json.Marshal(l); err != nil {
			return fail(fmt.Errorf("encode template listing: %w", err))
		}
	}
	expires := now.Add(s.cfg.ttl)
	if s.pinned {
		expires = time.Time{} // a commit never changes
	}
	s.listingMu.Lock()
	s.cache.Put(cache.Entry{Key: s.listKey, ETag: newETag, Value: value, CachedAt: now, ExpiresAt: expires})
	s.listingMu.Unlock()
	if cl != nil {
		s.publish(ctx, cl, sha, newETag, entries, files, archiveSize, contents, now)
	}
	return s.install(sha, entries, files, contents, changed, expires), nil
}

// install makes the checked commit current: a new catalog when it changed,
// fresh until expires either way, and tells the watchers when the catalog
// changed or stopped being stale.
func (s *Source) install(sha string, entries, files []TreeEntry, contents map[string][]byte, changed bool, expires time.Time) *templates.Catalog {
	s.pruneBlobs(entries, files)

	var built *templates.Catalog
	if changed {
		built = s.build(sha, entries, contents)
	}
	// The one write of the sync. A 304 changed only the expiry, and that is
	// written too: otherwise every restart after the first TTL of a run
	// would cost a request, where the documentation promises none within
	// the TTL of the last check.
	s.persist()

	s.mu.Lock()
	wasStale := s.stale
	// The lines are written before the catalog they tell of is current
	// (Load, /healthz): whoever sees it finds them. Once per change, so
	// holding mu for them costs nothing that matters.
	if wasStale != nil {
		s.logger.Info("GitHub is reachable again; templates are fresh",
			"repository", s.cfg.webURL, "stale_since", wasStale.Since, "commit", sha)
	}
	if changed {
		ref := s.cfg.ref
		if ref == "" {
			ref = "HEAD"
		}
		s.logger.Info("GitHub templates loaded", "repository", s.cfg.webURL, "ref", ref, "commit", sha,
			"templates", built.Len(), "invalid", len(built.Invalid()))
		s.base, s.commit, s.baseBlobs = built, sha, blobSHAs(entries)
	}
	s.files = fileIndex(entries, files) // s.commit is sha, changed or not
	s.freshUntil = expires
	s.stale, s.lastErr, s.retryAt = nil, nil, time.Time{}
	s.current = s.base
	cur := s.current
	subs := s.subscribers()
	s.mu.Unlock()

	if changed || wasStale != nil {
		for _, fn := range subs {
			fn(cur)
		}
	}
	return cur
}

// blobs returns the contents of every entry small enough to use, from the
// cache when possible and otherwise fetched (and cached: a blob SHA names
// its bytes forever): many missing blobs from the archive of commit (see
// useArchive), a few, and whatever the archive did not give, one by one.
func (s *Source) blobs(ctx context.Context, commit string, entries []TreeEntry, archiveSize int64) (map[string][]byte, error) {
	contents := make(map[string][]byte, len(entries))
	var need []string
	for _, e := range entries {
		if e.Size > s.cfg.maxFileSize {
			continue
		}
		if _, dup := contents[e.SHA]; dup {
			continue
		}
		if b, ok := s.cache.View(s.blobNS + e.SHA); ok {
			contents[e.SHA] = b
			continue
		}
		if b, ok := s.cfg.blobs.get(e.SHA); ok {
			// Another ref of the repository read it already.
			contents[e.SHA] = b
			s.cache.Put(cache.Entry{Key: s.blobNS + e.SHA, Value: b}) // never expires
			continue
		}
		contents[e.SHA] = nil
		need = append(need, e.SHA)
	}
	if len(need) == 0 {
		return contents, nil
	}
	if !s.noArchive && useArchive(len(need), archiveSize) {
		var err error
		if need, err = s.fromArchive(ctx, commit, entries, need, archiveSize, contents); err != nil {
			return nil, err
		}
		if len(need) == 0 {
			return contents, nil
		}
	}
	got, err := s.client.Blobs(ctx, need)
	if err != nil {
		return nil, err
	}
	for sha, b := range got {
		contents[sha] = b
		s.cache.Put(cache.Entry{Key: s.blobNS + sha, Value: b}) // never expires
		s.cfg.blobs.put(sha, b)
	}
	return contents, nil
}

// fromArchive fills contents (and the cache) with the needed blobs the
// commit's archive holds and returns those still needed. GitHub refusing
// the archive (credentials, rate limit, a missing commit, an outage) is
// returned: the blob requests would be refused alike. Any other failure is
// logged, and the blobs it did not give are left to be fetched one by one.
// Resources stay out: they are read lazily, and caching every file of the
// folder would grow the disk cache with files no template may ever list.
func (s *Source) fromArchive(ctx context.Context, commit string, entries []TreeEntry, need []string, archiveSize int64, contents map[string][]byte) ([]string, error) {
	needed := make(map[string]bool, len(need))
	for _, sha := range need {
		needed[sha] = true
	}
	f := archiveFilter{want: make(map[string]TreeEntry, len(need)), maxFileSize: s.cfg.maxFileSize, maxBytes: archiveSize}
	if s.cfg.path != "" {
		f.prefix = s.cfg.path + "/"
	}
	for _, e := range entries {
		if needed[e.SHA] {
			f.want[e.Path] = e
		}
	}
	res, err := s.client.Archive(ctx, commit, f)
	if err != nil && !errors.Is(err, errArchiveUnusable) {
		return nil, err
	}
	for sha, b := range res.contents {
		if needed[sha] {
			contents[sha] = b
			s.cache.Put(cache.Entry{Key: s.blobNS + sha, Value: b}) // never expires
			s.cfg.blobs.put(sha, b)
		}
	}
	left := slices.DeleteFunc(need, func(sha string) bool { return res.contents[sha] != nil })
	switch {
	case err != nil:
		s.logger.Warn("cannot use the repository archive; downloading the remaining templates one by one",
			"repository", s.cfg.webURL, "commit", commit, "error", err.Error(), "from_archive", len(res.contents), "remaining", len(left))
	case len(res.mismatched) > 0:
		s.logger.Warn("some files in the repository archive differ from the commit (export-subst, or a changed download); downloading them one by one",
			"repository", s.cfg.webURL, "commit", commit, "files", res.mismatched)
	}
	s.logger.Debug("read the repository archive", "repository", s.cfg.webURL, "commit", commit,
		"bytes", res.read, "from_archive", len(res.contents), "remaining", len(left))
	return left, nil
}

// pruneBlobs drops cached blobs the listing no longer uses, so the disk
// cache holds exactly what a restart needs: the templates, and the
// resources read so far that the commit still has.
func (s *Source) pruneBlobs(entries, files []TreeEntry) {
	used := make(map[string]bool, len(entries)+len(files))
	for _, e := range slices.Concat(entries, files) {
		used[s.blobNS+e.SHA] = true
	}
	for _, k := range s.cache.Keys(s.blobNS) {
		if !used[k] {
			s.cache.Invalidate(k)
		}
	}
}

func (s *Source) build(commit string, entries []TreeEntry, contents map[string][]byte) *templates.Catalog {
	files := make([]templates.File, 0, len(entries))
	for _, e := range entries {
		if e.Size > s.cfg.maxFileSize {
			// Refused by the tree's size, without downloading it.
			files = append(files, templates.File{Path: e.Path, Err: templates.TooLarge(e.Path, int64(e.Size), int64(s.cfg.maxFileSize))})
			continue
		}
		data := contents[e.SHA]
		// The cache holds the same bytes (blobs and restore put them there):
		// the catalog shares its copy rather than keep a second one.
		if cached, ok := s.cache.View(s.blobNS + e.SHA); ok {
			data = cached
		}
		files = append(files, templates.File{Path: e.Path, Data: data})
	}
	s.mu.Lock()
	info := s.infoLocked(commit)
	s.mu.Unlock()
	return templates.Build(files, templates.BuildOptions{
		MaxFileSize: s.cfg.maxFileSize, Info: info, Logger: s.logger, Now: s.now,
	})
}

// fail records a failed revalidation. Holding a catalog, it keeps serving
// it marked stale, warns once per outage (not once per request) and
// notifies watchers when the catalog turns stale or the reason's code
// changes; without one it returns the error.
//
// It is only called from sync, which runs detached from its callers'
// cancellation (see shared): a failure here is GitHub's or the network's.
func (s *Source) fail(err error) (*templates.Catalog, error) {
	now := s.now()
	f := fault.As(err)
	code, retry := fault.Internal, time.Duration(0)
	if f != nil {
		code, retry = f.Code, f.RetryAfter
	}
	backoff := min(failureBackoff, s.cfg.ttl)
	if retry > 0 {
		backoff = retry
	}

	s.mu.Lock()
	s.lastErr, s.retryAt = err, now.Add(backoff)
	if s.base == nil {
		s.mu.Unlock()
		return nil, err
	}
	first := s.stale == nil
	if first {
		// Written before the catalog is marked stale (Load, /healthz):
		// whoever sees it stale finds the line. Once per outage, so
		// holding mu for it costs nothing that matters.
		s.logger.Warn("cannot revalidate GitHub templates; serving the cached ones",
			"repository", s.cfg.webURL, "code", code, "error", err.Error(), "retry_after", retry)
	}
	st := &templates.Staleness{Since: now, Reason: err.Error(), Code: code, RetryAfter: retry}
	notify := first
	if !first {
		st.Since = s.stale.Since // the outage started then
		notify = s.stale.Code != code
	}
	s.stale = st
	s.current = s.base.WithStale(st)
	cur := s.current
	subs := s.subscribers()
	s.mu.Unlock()

	if !first {
		s.logger.Debug("GitHub still unavailable", "repository", s.cfg.webURL, "code", code, "error", err.Error())
	}
	if notify {
		// Watchers (templates.Library) hold the catalog handlers read:
		// they must see that it is stale, and why.
		for _, fn := range subs {
			fn(cur)
		}
	}
	return cur, err
}

// subscribers returns the Watch callbacks; s.mu must be held.
func (s *Source) subscribers() []func(*templates.Catalog) {
	out := make([]func(*templates.Catalog), 0, len(s.subs))
	for _, fn := range s.subs {
		out = append(out, fn)
	}
	return out
}

func (s *Source) loadListing() (listing, cache.Entry, bool) {
	e, ok := s.cache.Peek(s.listKey)
	if !ok {
		return listing{}, cache.Entry{}, false
	}
	var l listing
	if err := json.Unmarshal(e.Value, &l); err != nil || l.Commit == "" {
		s.logger.Warn("ignoring an unreadable template listing in the cache", "error", err)
		s.cache.Invalidate(s.listKey)
		return listing{}, cache.Entry{}, false
	}
	return l, e, true
}

// restore builds the catalog from the disk cache, if it holds the listing
// and every blob it names, so a restart serves templates before (and
// without) any request to GitHub.
func (s *Source) restore() {
	l, e, ok := s.loadListing()
	if !ok {
		return
	}
	contents := make(map[string][]byte, len(l.Entries))
	for _, te := range l.Entries {
		if te.Size > s.cfg.maxFileSize {
			continue
		}
		b, ok := s.cache.View(s.blobNS + te.SHA)
		if !ok {
			return // incomplete: the first sync fetches what is missing
		}
		contents[te.SHA] = b
	}
	cat := s.build(l.Commit, l.Entries, contents)
	s.mu.Lock()
	// Written before the catalog is current, as install does.
	s.logger.Info("GitHub templates loaded from the disk cache", "repository", s.cfg.webURL,
		"commit", l.Commit, "checked_at", e.CachedAt, "templates", cat.Len())
	s.base, s.current, s.commit = cat, cat, l.Commit
	s.baseBlobs = blobSHAs(l.Entries)
	s.files = fileIndex(l.Entries, l.Files)
	s.freshUntil = e.ExpiresAt
	s.mu.Unlock()
}

// persist saves the cache to disk, unless nothing changed since the last
// save (concurrent downloads of resources then share one write). Failing to
// is not fatal (the server works from memory); it is reported once.
func (s *Source) persist() {
	if s.cachePath == "" {
		return
	}
	if _, err := s.cache.SaveIfChanged(s.cachePath); err != nil && s.saveWarned.CompareAndSwap(false, true) {
		s.logger.Warn("cannot write the GitHub template cache; a restart will download the templates again",
			"path", s.cachePath, "error", err)
	}
}

// blobSHAs maps each entry's path to its blob SHA.
func blobSHAs(entries []TreeEntry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Path] = e.SHA
	}
	return m
}

// templateAt returns the name of the valid template cat serves from the
// file p, or "".
func templateAt(cat *templates.Catalog, p string) string {
	for _, e := range cat.Templates() {
		if e.Path == p {
			return e.Template.Metadata.Name
		}
	}
	return ""
}
