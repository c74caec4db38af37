package github

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/cache"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Shared is a store the replicas of a cluster hold in common, through which
// their Sources share one catalog and one GitHub revalidation per TTL (see
// the package documentation, # Cluster). The package defines the contract;
// internal/cluster implements it on NATS JetStream, and nothing here
// depends on NATS.
//
// Keys are opaque to the store: one or more tokens of letters, digits, '-'
// and '_', joined by dots. Values are opaque bytes of at most
// MaxValueSize. Every method is safe for concurrent use by several
// Sources.
//
// Ownership: the Source owns the keys under its namespace (a hash of the
// API URL, repository, ref and folder) and decides what is written there;
// the store owns durability and the revisions, and interprets nothing.
// Replicas coordinate only through compare-and-set: Create and Update
// succeed for one writer alone.
//
// Availability: any error means the store could not answer (the link is
// down, the server is gone, a call timed out); the Source then works alone,
// as without a store, and tries the store again at its next check. Methods
// must fail quickly (within a few seconds) rather than wait for the link.
// A refused compare-and-set is not an error: it reports ok false.
type Shared interface {
	// Get returns the value of key and its revision. An absent key is
	// (nil, 0, nil), not an error. A value the store will not vouch for
	// (cluster.Catalog's: one no replica signed) is empty, not nil, with
	// its revision: the source takes it as unreadable and writes over it.
	Get(ctx context.Context, key string) (value []byte, rev uint64, err error)
	// Create stores value under key if the key is absent; ok is false when
	// it is present (another writer came first).
	Create(ctx context.Context, key string, value []byte) (rev uint64, ok bool, err error)
	// Update replaces the value of key if its revision is still rev; ok is
	// false when someone else wrote it since (or it is gone).
	Update(ctx context.Context, key string, value []byte, rev uint64) (newRev uint64, ok bool, err error)
	// Put stores value under key unconditionally. It is meant for
	// content-addressed data, whose key names one value forever, so that
	// concurrent writers write the same bytes.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key; an absent key is not an error. The source uses
	// it to drop the listing and blobs of a commit the cluster left.
	Delete(ctx context.Context, key string) error
	// Watch calls fn with the value of key each time it changes, from one
	// goroutine, in order, until ctx ends; then it returns nil. It also
	// calls fn with the current value (if any) when the watch is first
	// armed and each time it is armed again after the link came back, so a
	// watcher misses no final state across an outage. While the store is
	// unreachable Watch keeps retrying on its own; it returns an error
	// only when it can never work. fn may block: later values wait.
	Watch(ctx context.Context, key string, fn func(value []byte, rev uint64)) error
	// MaxValueSize is the largest value the store accepts: larger data is
	// not shared (each replica fetches it itself).
	MaxValueSize() int
}

const (
	// sharedTimeout bounds each call to the shared store, so that a
	// cluster that is down costs a revalidation seconds, not minutes.
	sharedTimeout = 2 * time.Second
	// sharedPoll spaces the looks of a replica waiting for another's check.
	sharedPoll = 100 * time.Millisecond
	// claimExpiry is how long a claim holds unless renewed: a replica that
	// claimed and died leaves a claim that others take over once it is
	// this old, and a cold replica waits at most that long for it. A live
	// claimer renews its claim every claimRenewal while its check runs
	// (which may take up to syncTimeout for a large library on a slow
	// link), so a slow check is not taken over and repeated.
	claimExpiry  = 15 * time.Second
	claimRenewal = claimExpiry / 3
	// sharedParallel bounds concurrent reads and writes of blobs.
	sharedParallel = 8
)

// sharedState is the value of a source's state key: the cluster's last
// check of the ref. It never holds the token: Auth is its tokenID.
type sharedState struct {
	Commit    string    `json:"commit,omitempty"`
	ETag      string    `json:"etag,omitempty"`
	Auth      string    `json:"auth,omitempty"` // tokenID of the credentials the ETag belongs to
	CheckedAt time.Time `json:"checked_at,omitzero"`
	CheckedBy string    `json:"checked_by,omitempty"`
	// After a failed check: the error's code and (redacted) reason, since
	// when checks fail, and when the next may be tried, so that an outage
	// is not hammered by every replica.
	ErrorCode   string    `json:"error_code,omitempty"`
	ErrorReason string    `json:"error_reason,omitempty"`
	FailedSince time.Time `json:"failed_since,omitzero"`
	FailedAt    time.Time `json:"failed_at,omitzero"` // the last failed check
	RetryAt     time.Time `json:"retry_at,omitzero"`
	Claim       *claim    `json:"claim,omitempty"`
}

// claim marks a check in progress, by a replica, since a time.
type claim struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// claimed is a claim this replica holds: the state it claimed over and
// the revision its claim last wrote, which renewals move on (mu).
type claimed struct {
	prev sharedState

	mu   sync.Mutex
	rev  uint64
	over bool // the claim was finished: renewals stop
}

// sharedTree is the value of a tree key: a commit's listing, gzipped JSON.
type sharedTree struct {
	Entries []TreeEntry `json:"entries"`
	Files   []TreeEntry `json:"files"`
	// ArchiveSize bounds the commit's archive (Client.treeFiles), so a
	// replica adopting the listing can still choose the archive for
	// blobs the cluster lacks.
	ArchiveSize int64 `json:"archiveSize,omitempty"`
}

// SharedStatus is what /healthz shows of the shared catalog.
type SharedStatus struct {
	Replica string `json:"replica"`
	// Alone is true while the shared store does not answer: this replica
	// revalidates GitHub on its own.
	Alone     bool      `json:"alone"`
	Commit    string    `json:"commit,omitempty"`     // of the catalog served here
	CheckedBy string    `json:"checked_by,omitempty"` // the replica that last revalidated GitHub
	CheckedAt time.Time `json:"checked_at,omitzero"`
	LastError string    `json:"last_error,omitempty"` // code of the cluster's last failed check
}

// SharedStatus reports the shared catalog; ok is false without Config.Shared.
func (s *Source) SharedStatus() (st SharedStatus, ok bool) {
	if s.store == nil {
		return SharedStatus{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return SharedStatus{Replica: s.replica, Alone: s.alone, Commit: s.commit,
		CheckedBy: s.seen.CheckedBy, CheckedAt: s.seen.CheckedAt, LastError: s.seen.ErrorCode}, true
}

// sharedNamespace is the key prefix of one source: a short hash, since
// URLs and paths are not valid keys, and replicas configured alike must
// find each other.
func sharedNamespace(apiURL, repo, ref, path string) string {
	sum := sha256.Sum256([]byte("flowyprompt shared catalog\x00" + apiURL + "\x00" + repo + "\x00" + ref + "\x00" + path))
	return "src-" + hex.EncodeToString(sum[:10])
}

func (s *Source) stateKey() string             { return s.sharedNS + ".state" }
func (s *Source) treeKey(commit string) string { return s.sharedNS + ".tree." + commit }
func (s *Source) blobKey(sha string) string    { return s.sharedNS + ".blob." + sha }

func storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, sharedTimeout)
}

// storeDown notes that the store did not answer: the source revalidates
// alone, which is logged once per outage. The line is written before the
// source shows itself alone in SharedStatus (/healthz), as storeUp's
// before it shows itself back: whoever sees the change finds the line.
// Once per outage, so holding mu for it costs nothing that matters.
func (s *Source) storeDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.alone {
		s.logger.Warn("revalidating GitHub alone: the cluster is unreachable", "repository", s.cfg.webURL, "error", err.Error())
	}
	s.alone = true
}

// storeUp notes that the store answers again.
func (s *Source) storeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alone {
		s.logger.Info("sharing GitHub revalidation with the cluster again", "repository", s.cfg.webURL)
	}
	s.alone = false
}

func (s *Source) readState(ctx context.Context) (sharedState, uint64, error) {
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	v, rev, err := s.store.Get(sctx, s.stateKey())
	if err != nil || v == nil {
		return sharedState{}, 0, err
	}
	s.noteRev(rev)
	st, err := decodeState(v)
	if err != nil {
		// Unreadable (another version wrote it): claimed over like an
		// absent one, which replaces it.
		s.logger.Warn("ignoring an unreadable shared catalog state", "error", err)
		return sharedState{}, rev, nil
	}
	return st, rev, nil
}

func decodeState(v []byte) (sharedState, error) {
	var st sharedState
	if err := json.Unmarshal(v, &st); err != nil {
		return sharedState{}, fmt.Errorf("decode shared state: %w", err)
	}
	return st, nil
}

// writeState compare-and-sets the state: Create when rev is 0.
func (s *Source) writeState(ctx context.Context, st sharedState, rev uint64) (uint64, bool, error) {
	v, err := json.Marshal(st)
	if err != nil {
		return 0, false, fmt.Errorf("encode shared state: %w", err)
	}
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	var next uint64
	var ok bool
	if rev == 0 {
		next, ok, err = s.store.Create(sctx, s.stateKey(), v)
	} else {
		next, ok, err = s.store.Update(sctx, s.stateKey(), v, rev)
	}
	if ok {
		s.noteRev(next)
	}
	return next, ok, err
}

// noteRev records the newest state revision this replica has read or
// written, so that a value the watch delivers late is known to be older.
func (s *Source) noteRev(rev uint64) {
	s.mu.Lock()
	s.stateRev = max(s.stateRev, rev)
	s.mu.Unlock()
}

// outdated reports whether a state the watch delivered is older than one
// this replica already read or wrote. A revision can also be lower because
// the bucket was lost and created again: a check newer than this
// replica's last success is then taken anyway.
func (s *Source) outdated(st sharedState, rev uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rev < s.stateRev && !st.CheckedAt.After(s.freshUntil.Add(-s.cfg.ttl))
}

func (st sharedState) freshAt(now time.Time, ttl time.Duration) bool {
	return st.Commit != "" && st.ErrorCode == "" && now.Before(st.CheckedAt.Add(ttl))
}

// syncShared revalidates through the cluster: it adopts a check another
// replica made within the TTL, waits for one in progress, or claims the
// check and runs it. done is false when the store did not answer: the
// caller then revalidates alone. force (a refresh) adopts only a check
// that started after it was asked for.
func (s *Source) syncShared(ctx context.Context, force bool) (cat *templates.Catalog, err error, done bool) {
	var first uint64
	for i := 0; ; i++ {
		st, rev, err := s.readState(ctx)
		if err != nil {
			s.storeDown(err)
			return nil, nil, false
		}
		if i == 0 {
			first = rev
		}
		s.storeUp()
		s.noteSeen(st)
		now := s.now()
		claimAlive := st.Claim != nil && st.Claim.By != s.replica && now.Sub(st.Claim.At) < claimExpiry
		switch {
		case force && rev != first && st.Claim == nil && st.Commit != "" && st.ErrorCode == "":
			// A check completed since the refresh was asked for.
			cat, err := s.adopt(ctx, st)
			return cat, err, true
		case !force && st.freshAt(now, s.cfg.ttl) && !claimAlive:
			cat, err := s.adopt(ctx, st)
			return cat, err, true
		case !force && st.ErrorCode != "" && now.Before(st.RetryAt) && !claimAlive:
			cat, err := s.adoptFailure(ctx, st)
			return cat, err, true
		case claimAlive:
			// Another replica is checking: wait for its answer rather
			// than spend a request on the same question.
			if err := s.waitChange(ctx, rev); err != nil {
				cat, err := s.fail(fmt.Errorf("wait for replica %s to revalidate GitHub: %w", st.Claim.By, err))
				return cat, err, true
			}
			continue
		}
		next := st
		next.Claim = &claim{By: s.replica, At: now}
		crev, ok, err := s.writeState(ctx, next, rev)
		if err != nil {
			s.storeDown(err)
			return nil, nil, false
		}
		if !ok {
			continue // another replica claimed first: see what it does
		}
		cl := &claimed{prev: st, rev: crev}
		stop := s.renewClaim(cl, next)
		cat, err := s.syncGitHub(ctx, cl)
		stop()
		return cat, err, true
	}
}

// waitChange waits until the state's revision is no longer rev, or the
// claim it holds may be taken over (the loop above decides), polling: the
// shared store is local to the cluster and a look costs little.
func (s *Source) waitChange(ctx context.Context, rev uint64) error {
	t := time.NewTicker(sharedPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		st, cur, err := s.readState(ctx)
		if err != nil {
			return nil // the caller finds the store down and goes alone
		}
		if cur != rev || st.Claim == nil || s.now().Sub(st.Claim.At) >= claimExpiry {
			return nil
		}
	}
}

func (s *Source) noteSeen(st sharedState) {
	if st.Commit == "" && st.ErrorCode == "" {
		return
	}
	s.mu.Lock()
	s.seen = st
	s.mu.Unlock()
}

// adopt installs the cluster's last check: the catalog of its commit, built
// from the shared listing and blobs (GitHub is asked only for what the
// cluster lacks), fresh until the check's time plus the TTL.
func (s *Source) adopt(ctx context.Context, st sharedState) (*templates.Catalog, error) {
	expires := st.CheckedAt.Add(s.cfg.ttl)
	if s.pinned {
		expires = time.Time{}
	}
	old, oldEntry, haveOld := s.loadListing()
	entries, files, archiveSize, err := s.listFiles(ctx, st.Commit, old, haveOld, true)
	if err != nil {
		return s.fail(err)
	}
	s.mu.Lock()
	changed := s.base == nil || s.commit != st.Commit
	s.mu.Unlock()
	var contents map[string][]byte
	if changed {
		if contents, err = s.sharedBlobs(ctx, st.Commit, entries, archiveSize); err != nil {
			return s.fail(err)
		}
	}
	var value []byte
	if haveOld && old.Commit == st.Commit && old.Files != nil && old.Auth == st.Auth {
		value = oldEntry.Value
	} else if value, err = json.Marshal(listing{Commit: st.Commit, Auth: st.Auth, Entries: entries, Files: files, ArchiveSize: archiveSize}); err != nil {
		return s.fail(fmt.Errorf("encode template listing: %w", err))
	}
	if !haveOld || !bytes.Equal(value, oldEntry.Value) || oldEntry.ETag != st.ETag || !oldEntry.ExpiresAt.Equal(expires) {
		// The disk cache follows the cluster, so that a restart, or this
		// replica alone, resumes from the cluster's last check.
		s.listingMu.Lock()
		s.cache.Put(cache.Entry{Key: s.listKey, ETag: st.ETag, Value: value, CachedAt: st.CheckedAt, ExpiresAt: expires})
		s.listingMu.Unlock()
	}
	return s.install(st.Commit, entries, files, contents, changed, expires), nil
}

// adoptFailure takes over the cluster's last failed check: the catalog is
// served stale (its commit adopted first if this replica has none) and
// GitHub is not asked before the cluster's retry time.
func (s *Source) adoptFailure(ctx context.Context, st sharedState) (*templates.Catalog, error) {
	s.mu.Lock()
	need := st.Commit != "" && (s.base == nil || s.commit != st.Commit)
	s.mu.Unlock()
	if need {
		if cat, err := s.adopt(ctx, st); err != nil {
			return cat, err // adopt has recorded the failure
		}
	}
	retry := max(st.RetryAt.Sub(s.now()), time.Millisecond)
	by := st.CheckedBy
	if st.Claim != nil {
		by = st.Claim.By
	}
	return s.fail(&fault.Error{Code: st.ErrorCode, What: "cannot revalidate the GitHub templates",
		Why:        st.ErrorReason + " (seen by replica " + by + ")",
		How:        "the cluster retries after " + st.RetryAt.UTC().Format(time.RFC3339) + "; `flowyprompt check` tells what to fix",
		RetryAfter: retry})
}

// listFiles returns the listing of commit: from the disk cache, from the
// cluster (useStore), or from GitHub, in that order of preference.
func (s *Source) listFiles(ctx context.Context, commit string, old listing, haveOld, useStore bool) (entries, files []TreeEntry, archiveSize int64, err error) {
	if haveOld && old.Commit == commit && old.Files != nil {
		return old.Entries, old.Files, old.ArchiveSize, nil
	}
	if useStore {
		if t, ok := s.getTree(ctx, commit); ok {
			return t.Entries, t.Files, t.ArchiveSize, nil
		}
		s.logger.Debug("the cluster has no listing of the commit; listing its tree", "commit", commit, "replica", s.replica)
	}
	return s.client.treeFiles(ctx, commit)
}

func (s *Source) getTree(ctx context.Context, commit string) (sharedTree, bool) {
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	v, _, err := s.store.Get(sctx, s.treeKey(commit))
	if err != nil || v == nil {
		return sharedTree{}, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(v))
	if err != nil {
		return sharedTree{}, false
	}
	var t sharedTree
	if err := json.NewDecoder(io.LimitReader(zr, 64<<20)).Decode(&t); err != nil || t.Files == nil {
		return sharedTree{}, false
	}
	return t, true
}

// putTree shares a commit's listing, unless it is too large to: the
// replicas then list the tree themselves.
func (s *Source) putTree(ctx context.Context, commit string, entries, files []TreeEntry, archiveSize int64) error {
	v, err := encodeTree(entries, files, archiveSize)
	if err != nil {
		return err
	}
	if len(v) > s.store.MaxValueSize() {
		s.logger.Debug("the template listing is too large to share; each replica lists the tree itself",
			"commit", commit, "bytes", len(v), "max", s.store.MaxValueSize())
		return nil
	}
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	return s.store.Put(sctx, s.treeKey(commit), v)
}

// encodeTree is a listing as shared: gzipped JSON, since a listing of
// thousands of templates is hundreds of KB of JSON, near the 1 MB a NATS
// message may carry by default, and compresses well.
func encodeTree(entries, files []TreeEntry, archiveSize int64) ([]byte, error) {
	if files == nil {
		files = []TreeEntry{} // nil would read as "never listed"
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := json.NewEncoder(zw).Encode(sharedTree{Entries: entries, Files: files, ArchiveSize: archiveSize}); err != nil {
		return nil, fmt.Errorf("encode shared listing: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress shared listing: %w", err)
	}
	return buf.Bytes(), nil
}

// sharedBlobs is blobs with the cluster in front of GitHub: blobs missing
// from the disk cache are read from the cluster, and what is still missing
// is fetched by s.blobs and then shared.
func (s *Source) sharedBlobs(ctx context.Context, commit string, entries []TreeEntry, archiveSize int64) (map[string][]byte, error) {
	var want []string
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Size > s.cfg.maxFileSize || seen[e.SHA] {
			continue
		}
		seen[e.SHA] = true
		if _, ok := s.cache.View(s.blobNS + e.SHA); !ok {
			want = append(want, e.SHA)
		}
	}
	missing := s.eachBlob(ctx, want, func(ctx context.Context, sha string) bool {
		v, _, err := s.store.Get(ctx, s.blobKey(sha))
		// A blob SHA names its bytes: anything else is not the blob.
		if err != nil || v == nil || gitBlobSHA(v) != sha {
			return false
		}
		s.cache.Put(cache.Entry{Key: s.blobNS + sha, Value: v})
		return true
	})
	contents, err := s.blobs(ctx, commit, entries, archiveSize)
	if err != nil {
		return nil, err
	}
	s.shareBlobs(ctx, missing, contents)
	return contents, nil
}

// shareBlobs puts the named blobs to the cluster, those small enough.
func (s *Source) shareBlobs(ctx context.Context, shas []string, contents map[string][]byte) {
	limit := s.store.MaxValueSize()
	s.eachBlob(ctx, shas, func(ctx context.Context, sha string) bool {
		b, ok := contents[sha]
		if !ok || b == nil || len(b) > limit {
			return true
		}
		return s.store.Put(ctx, s.blobKey(sha), b) == nil
	})
}

// eachBlob runs fn for each SHA, a few at a time, each call with its own
// timeout, and returns the SHAs fn failed for. After the store fails
// (unreachable), the remaining ones are not tried.
func (s *Source) eachBlob(ctx context.Context, shas []string, fn func(context.Context, string) bool) []string {
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
		sem    = make(chan struct{}, sharedParallel)
		halted bool
	)
	for _, sha := range shas {
		sem <- struct{}{}
		mu.Lock()
		skip := halted
		mu.Unlock()
		if skip {
			<-sem
			mu.Lock()
			failed = append(failed, sha)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sctx, cancel := storeCtx(ctx)
			ok := fn(sctx, sha)
			expired := sctx.Err() != nil
			cancel()
			if !ok {
				mu.Lock()
				failed = append(failed, sha)
				if expired {
					halted = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// publish shares what this replica's check found and then, with
// compare-and-set over its claim, the new state: blobs and listing go
// first, so a replica that sees the state finds them.
func (s *Source) publish(ctx context.Context, cl *claimed, sha, etag string, entries, files []TreeEntry, archiveSize int64, contents map[string][]byte, now time.Time) {
	if _, ok := s.getTree(ctx, sha); !ok {
		if contents == nil {
			// The commit did not change here but the cluster lacks it (a
			// replica with a warm disk cache joined a new cluster): share
			// what the disk cache has.
			contents = map[string][]byte{}
			for _, e := range entries {
				if b, ok := s.cache.View(s.blobNS + e.SHA); ok {
					contents[e.SHA] = b
				}
			}
		}
		shas := make([]string, 0, len(contents))
		for sha := range contents {
			shas = append(shas, sha)
		}
		s.shareBlobs(ctx, shas, contents)
		if err := s.putTree(ctx, sha, entries, files, archiveSize); err != nil {
			s.logger.Debug("cannot share the template listing", "error", err)
		}
	}
	st := sharedState{Commit: sha, ETag: etag, Auth: s.authID, CheckedAt: now, CheckedBy: s.replica}
	if s.finishClaim(ctx, cl, st) && cl.prev.Commit != "" && cl.prev.Commit != sha {
		s.dropCommit(ctx, cl.prev.Commit, entries)
	}
}

// dropCommit deletes the shared listing of a commit the cluster moved on
// from and the blobs the new listing does not use, so the bucket holds
// about one commit's files rather than every version ever served. A
// replica still adopting the old commit fetches what is gone from GitHub.
func (s *Source) dropCommit(ctx context.Context, commit string, keep []TreeEntry) {
	old, ok := s.getTree(ctx, commit)
	if !ok {
		return
	}
	used := make(map[string]bool, len(keep))
	for _, e := range keep {
		used[e.SHA] = true
	}
	var drop []string
	for _, e := range old.Entries {
		if !used[e.SHA] {
			used[e.SHA] = true // dropped once, however many paths share it
			drop = append(drop, e.SHA)
		}
	}
	s.eachBlob(ctx, drop, func(ctx context.Context, sha string) bool {
		return s.store.Delete(ctx, s.blobKey(sha)) == nil
	})
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	if err := s.store.Delete(sctx, s.treeKey(commit)); err != nil {
		s.logger.Debug("cannot drop a shared listing", "commit", commit, "error", err)
	}
}

// publishFailure records the failed check in the cluster, with the retry
// time this replica chose, so others wait for it too.
func (s *Source) publishFailure(ctx context.Context, cl *claimed, err error) {
	s.mu.Lock()
	retryAt := s.retryAt
	s.mu.Unlock()
	st := cl.prev
	st.Claim = nil
	st.FailedAt = s.now()
	if st.FailedSince.IsZero() {
		st.FailedSince = st.FailedAt
	}
	st.ErrorCode, st.ErrorReason, st.RetryAt = fault.CodeOf(err), err.Error(), retryAt
	st.CheckedBy = s.replica
	s.finishClaim(context.WithoutCancel(ctx), cl, st)
}

// renewClaim moves the claim's time forward every s.claimRenew until
// stop is called or the claim is finished, so the other replicas keep
// waiting for this check instead of taking it over. A renewal that loses
// the compare-and-set (the claim was taken over after all) or cannot
// reach the store ends the renewals; finishClaim then fails the same way.
// stop may be called more than once.
func (s *Source) renewClaim(cl *claimed, st sharedState) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.claimRenew)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			cl.mu.Lock()
			if cl.over {
				cl.mu.Unlock()
				return
			}
			st.Claim = &claim{By: s.replica, At: s.now()}
			rev, ok, err := s.writeState(context.Background(), st, cl.rev)
			if err == nil && ok {
				cl.rev = rev
			}
			cl.mu.Unlock()
			if err != nil || !ok {
				return
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
}

// finishClaim publishes st over this replica's claim and reports whether
// it was written.
func (s *Source) finishClaim(ctx context.Context, cl *claimed, st sharedState) bool {
	// Holding cl.mu for the write keeps a renewal from slipping in
	// between: it would move the revision this write expects.
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.over = true
	_, ok, err := s.writeState(ctx, st, cl.rev)
	switch {
	case err != nil:
		s.storeDown(err)
	case !ok:
		// Our claim expired and another replica took it over: its
		// answer will arrive through the watch.
		s.logger.Debug("the shared catalog state changed during this replica's check", "commit", st.Commit)
	default:
		s.noteSeen(st)
	}
	return err == nil && ok
}

// watchShared follows the state key for as long as ctx lasts: a check any
// replica publishes is adopted at once, so every replica's clients hear of
// a new commit (or of GitHub failing, or recovering) together.
func (s *Source) watchShared(ctx context.Context) {
	err := s.store.Watch(ctx, s.stateKey(), func(v []byte, rev uint64) {
		st, err := decodeState(v)
		if err != nil || st.Claim != nil || (st.Commit == "" && st.ErrorCode == "") || s.outdated(st, rev) {
			// A claim repeats the previous check: the claimer's answer
			// follows. An outdated value (the watch's first, arriving
			// after this replica moved on) would take it back.
			return
		}
		s.noteRev(rev)
		s.storeUp()
		s.noteSeen(st)
		for range 2 {
			// Through the sync group: a check running here finishes first
			// (it may be the one that published st).
			s.shared(ctx, "sync", func(ctx context.Context) (any, error) {
				if s.holds(st) || s.outdated(st, rev) {
					return nil, nil
				}
				if st.ErrorCode != "" {
					return s.adoptFailure(ctx, st)
				}
				return s.adopt(ctx, st)
			})
			if s.holds(st) || s.outdated(st, rev) || ctx.Err() != nil {
				return
			}
		}
	})
	if err != nil && ctx.Err() == nil {
		s.logger.Warn("cannot watch the shared catalog; changes found by other replicas arrive at the next check", "error", err)
	}
}

// holds reports whether the source already reflects st (its commit, with
// its freshness or failure) or knows better: a check of its own made
// since, while it was alone, is not undone by an older answer the watch
// delivers when the link comes back.
func (s *Source) holds(st sharedState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Commit != "" && (s.base == nil || s.commit != st.Commit) {
		return false
	}
	lastSuccess := s.freshUntil.Add(-s.cfg.ttl)
	switch {
	case st.ErrorCode != "" && s.stale == nil:
		return !lastSuccess.Before(st.FailedAt)
	case st.ErrorCode != "":
		return s.stale.Code == st.ErrorCode
	case s.stale != nil:
		return !st.CheckedAt.After(s.stale.Since)
	}
	return !s.freshUntil.Before(st.CheckedAt.Add(s.cfg.ttl))
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
