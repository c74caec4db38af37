package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/flowyprompt/flowyprompt/cache"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// HistoryPage is how many commits one history lists: GitHub's first page.
// Older commits would cost a request per page, for versions a team rarely
// goes back to.
const HistoryPage = templates.HistoryPage

// listCommits lists the commits reachable from ref that changed p, newest
// first, one page, with one conditional request: given the ETag of a
// previous answer, an unchanged list is a 304 (notModified), which GitHub
// does not count against the rate limit.
//
// The request is built by hand rather than with Repositories.ListCommits
// because go-github offers no way to send If-None-Match on it; the path
// and the decoding are the same.
func (c *Client) listCommits(ctx context.Context, p, ref, etag string) (revs []templates.Revision, newETag string, notModified bool, err error) {
	o := op{what: "list the commits of " + p + " in " + c.repoName(), target: targetRef, name: ref}
	q := url.Values{"path": {p}, "sha": {ref}, "per_page": {strconv.Itoa(HistoryPage)}}
	req, err := c.gh.NewRequest(http.MethodGet, "repos/"+url.PathEscape(c.owner)+"/"+url.PathEscape(c.repo)+"/commits?"+q.Encode(), nil)
	if err != nil {
		return nil, "", false, c.mapError(o, nil, err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	var commits []*gh.RepositoryCommit
	resp, err := c.gh.Do(ctx, req, &commits)
	if err := c.mapError(o, resp, err); err != nil {
		if errors.Is(err, ErrNotModified) {
			return nil, etag, true, nil
		}
		return nil, "", false, err
	}
	revs = make([]templates.Revision, 0, len(commits))
	for _, rc := range commits {
		cm := rc.GetCommit()
		author := cm.GetAuthor().GetName()
		if l := rc.GetAuthor().GetLogin(); l != "" {
			author = l
		}
		msg, _, _ := strings.Cut(cm.GetMessage(), "\n")
		revs = append(revs, templates.Revision{Commit: strings.ToLower(rc.GetSHA()),
			Date: cm.GetAuthor().GetDate().Time.UTC(), Author: author, Message: strings.TrimSpace(msg)})
	}
	return revs, resp.Header.Get("ETag"), false, nil
}

// contentsAt reads the file at p as of ref in one request and returns its
// bytes and blob SHA, checked against each other.
func (c *Client) contentsAt(ctx context.Context, p, ref string) ([]byte, string, error) {
	what := "read " + p + " at " + short(ref) + " from " + c.repoName()
	f, _, resp, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, p, &gh.RepositoryContentGetOptions{Ref: ref})
	if err := c.mapError(op{what: what, target: targetFileAt, name: ref}, resp, err); err != nil {
		return nil, "", err
	}
	if f == nil {
		return nil, "", fault.New(fault.GitHubNotFound, what, p+" is a folder at "+ref, "name a template file")
	}
	if f.GetSize() > c.maxFileSize {
		return nil, "", templates.TooLarge(p, int64(f.GetSize()), int64(c.maxFileSize))
	}
	s, err := f.GetContent()
	if err != nil {
		return nil, "", fault.New(fault.NetworkError, what, "GitHub's answer could not be decoded: "+err.Error(), "retry; a proxy may be altering responses")
	}
	data, sha := []byte(s), strings.ToLower(f.GetSHA())
	if gitBlobSHA(data) != sha {
		return nil, "", fault.New(fault.NetworkError, what,
			"the content GitHub sent does not match its SHA", "retry; a proxy may be altering responses")
	}
	return data, sha, nil
}

// historyEntry is what the cache keeps of a history list: the answer, and
// whose credentials its ETag belongs to.
type historyEntry struct {
	Auth      string               `json:"auth"`
	Revisions []templates.Revision `json:"revisions"`
}

// FileHistory lists the commits that changed the file at p (a path in the
// repository, as the catalog's entries name it), from the commit the
// catalog was built from: one conditional request the first time, none
// afterwards while the catalog stays at that commit (a commit's history
// never changes), and one request shared by callers asking at once.
// Versions are filled in from files already read (FileAt), never fetched
// here: a version costs a request the first time only, and a caller looking
// for one version stops at it. Each request spends the source's budget of
// version lookups (RATE_LIMITED when spent).
func (s *Source) FileHistory(ctx context.Context, p string) (templates.Revisions, error) {
	if err := s.checkHistoryPath(p); err != nil {
		return templates.Revisions{}, err
	}
	s.mu.Lock()
	ref := s.commit
	s.mu.Unlock()
	if ref == "" {
		ref = s.cfg.ref
	}
	if ref == "" {
		ref = "HEAD"
	}
	revs, ok := s.lookups.historyAt(ref, p)
	if !ok {
		v, err, _ := s.lookupGroup.Do("history\x00"+ref+"\x00"+p, func() (any, error) {
			return s.listHistory(ctx, p, ref)
		})
		if err != nil {
			return templates.Revisions{}, err
		}
		revs = v.(templates.Revisions)
	}
	// Also saves the files FileAt read since the last save: writing the
	// whole cache after each of them would write it once per commit a
	// version lookup walks.
	s.persist()
	out := make([]templates.Revision, len(revs.Revisions))
	for i, r := range revs.Revisions {
		if data, ok := s.cachedFileAt(p, r.Commit); ok {
			r.Version = templates.DeclaredVersion(data)
		}
		out[i] = r
	}
	return templates.Revisions{Revisions: out, Truncated: revs.Truncated, Ref: ref}, nil
}

// listHistory asks GitHub for the history of p at ref, remembered when ref
// is a commit.
func (s *Source) listHistory(ctx context.Context, p, ref string) (templates.Revisions, error) {
	if err := s.lookups.spend(s.now(), "list the commits of "+p); err != nil {
		return templates.Revisions{}, err
	}
	key := cache.KeyFor(s.ns, cache.KindHistory, p, ref)
	var old historyEntry
	etag := ""
	if e, ok := s.cache.Peek(key); ok && json.Unmarshal(e.Value, &old) == nil && old.Auth == s.authID {
		etag = e.ETag
	}
	revs, newETag, notModified, err := s.client.listCommits(ctx, p, ref, etag)
	if err != nil {
		return templates.Revisions{}, err
	}
	if notModified {
		revs = old.Revisions
	} else {
		value, err := json.Marshal(historyEntry{Auth: s.authID, Revisions: revs})
		if err != nil {
			return templates.Revisions{}, fmt.Errorf("encode the history of %s: %w", p, err)
		}
		s.cache.Put(cache.Entry{Key: key, ETag: newETag, Value: value, CachedAt: s.now()})
	}
	out := templates.Revisions{Revisions: revs, Truncated: len(revs) >= HistoryPage, Ref: ref}
	if IsCommitSHA(ref) {
		s.lookups.rememberHistory(ref, p, out)
	}
	return out, nil
}

// FileAt reads the file at p as of rev, a full commit SHA or a tag or
// branch name. At a commit it is read once and then kept forever (a
// commit's files never change), by blob SHA; a tag or branch may move, so
// it costs one request each time, and only the bytes are kept. A rev
// GitHub does not know is remembered as such while the catalog stays at
// its commit, so asking again costs nothing; callers asking at once share
// one request. Each request spends the source's budget of version lookups.
// What it reads reaches the disk cache with the next FileHistory or sync.
func (s *Source) FileAt(ctx context.Context, p, rev string) ([]byte, error) {
	if err := s.checkHistoryPath(p); err != nil {
		return nil, err
	}
	pinned := IsCommitSHA(rev)
	if pinned {
		rev = strings.ToLower(rev)
		if data, ok := s.cachedFileAt(p, rev); ok {
			return data, nil
		}
	}
	s.mu.Lock()
	at := s.commit
	s.mu.Unlock()
	if err := s.lookups.missingAt(at, p, rev); err != nil {
		return nil, err
	}
	v, err, _ := s.lookupGroup.Do("file\x00"+at+"\x00"+p+"\x00"+rev, func() (any, error) {
		if err := s.lookups.spend(s.now(), "read "+p+" at "+short(rev)); err != nil {
			return nil, err
		}
		data, sha, err := s.client.contentsAt(ctx, p, rev)
		if err != nil {
			if fault.CodeOf(err) == fault.GitHubNotFound && at != "" {
				s.lookups.rememberMissing(at, p, rev, err)
			}
			return nil, err
		}
		s.cache.Put(cache.Entry{Key: cache.KeyFor(s.ns, cache.KindHistoryBlob, sha, ""), Value: data})
		if pinned {
			s.cache.Put(cache.Entry{Key: cache.KeyFor(s.ns, cache.KindFileAt, p, rev), Value: []byte(sha)})
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// cachedFileAt is the file at p as of commit when it was read before.
func (s *Source) cachedFileAt(p, commit string) ([]byte, bool) {
	e, ok := s.cache.Peek(cache.KeyFor(s.ns, cache.KindFileAt, p, commit))
	if !ok {
		return nil, false
	}
	b, ok := s.cache.Peek(cache.KeyFor(s.ns, cache.KindHistoryBlob, string(e.Value), ""))
	if !ok {
		return nil, false
	}
	return b.Value, true
}

// checkHistoryPath refuses a path outside the configured folder: the
// history of any other file of the repository is not the library's to show.
func (s *Source) checkHistoryPath(p string) error {
	clean, err := templates.RelPath(p)
	inside := s.cfg.path == "" || strings.HasPrefix(p, s.cfg.path+"/")
	if (err != nil && !errors.Is(err, templates.ErrPathHidden)) || clean != p || !inside {
		return fault.New(fault.InvalidArgument, "read the history of "+strconv.Quote(p),
			"the path is not a file of the template folder", "name a template; its path is the one flowyprompt_get_template shows")
	}
	return nil
}

var _ templates.History = (*Source)(nil)
