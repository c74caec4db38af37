package github

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"path"

	"github.com/flowyprompt/flowyprompt/cache"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// ReadResource reads a file a template lists in its `resources`, with the
// folder source's contract: the path is relative to the templates folder
// (Config.Path) and may not be absolute, lead out of it or go through a
// hidden file or folder. It is looked up in the tree of the commit the
// current catalog was built from, so a resource always belongs to the same
// version as the templates served with it, and its size is checked there,
// before anything is downloaded. The blob is cached by SHA, on disk too: a
// later read, a restart or an outage costs no request.
func (s *Source) ReadResource(ctx context.Context, rel string) ([]byte, string, error) {
	clean, err := templates.RelPath(rel)
	if err != nil {
		return nil, "", &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("resource %q is outside the template folder", rel),
			Why: "resources are read from the template folder (GITHUB_TEMPLATES_PATH) only, never from hidden files or folders",
			How: "use a path relative to the template folder, to a file inside it"}
	}
	files, commit, err := s.resourceFiles(ctx)
	if err != nil {
		return nil, "", resourceError(rel, err)
	}
	full := clean
	if s.cfg.path != "" {
		full = s.cfg.path + "/" + clean
	}
	e, ok := files[full]
	if !ok {
		return nil, "", s.resourceNotFound(rel, full, commit)
	}
	if e.Size > s.cfg.maxFileSize {
		return nil, "", templates.TooLarge(rel, int64(e.Size), int64(s.cfg.maxFileSize))
	}
	data, err := s.blob(ctx, e.SHA)
	if err != nil {
		return nil, "", resourceError(rel, err)
	}
	typ := mime.TypeByExtension(path.Ext(clean))
	if typ == "" {
		typ = "text/plain"
	}
	return data, typ, nil
}

// CheckResource reports whether ReadResource would find rel, from the
// index of the commit's files, without downloading it. When the index
// cannot be had (GitHub unreachable), it reports nil: a file is not hidden
// for an outage.
func (s *Source) CheckResource(ctx context.Context, rel string) error {
	clean, err := templates.RelPath(rel)
	if err != nil {
		return &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("resource %q is outside the template folder", rel),
			Why: "resources are read from the template folder (GITHUB_TEMPLATES_PATH) only, never from hidden files or folders",
			How: "use a path relative to the template folder, to a file inside it"}
	}
	files, commit, err := s.resourceFiles(ctx)
	if err != nil {
		return nil
	}
	full := clean
	if s.cfg.path != "" {
		full = s.cfg.path + "/" + clean
	}
	e, ok := files[full]
	switch {
	case !ok:
		return s.resourceNotFound(rel, full, commit)
	case e.Size > s.cfg.maxFileSize:
		return templates.TooLarge(rel, int64(e.Size), int64(s.cfg.maxFileSize))
	}
	return nil
}

// resourceFiles returns the files under the folder at the commit of the
// current catalog, loading the catalog first if there is none. A catalog
// restored from a cache written before resources were served has no such
// index: the commit's tree is then listed once (shared by concurrent
// callers) and added to the cached listing.
func (s *Source) resourceFiles(ctx context.Context) (map[string]TreeEntry, string, error) {
	s.mu.Lock()
	files, commit, loaded := s.files, s.commit, s.base != nil
	s.mu.Unlock()
	if !loaded {
		if _, err := s.Load(ctx); err != nil {
			return nil, "", err
		}
		s.mu.Lock()
		files, commit = s.files, s.commit
		s.mu.Unlock()
	}
	if files != nil {
		return files, commit, nil
	}
	v, err := s.shared(ctx, "files:"+commit, func(ctx context.Context) (any, error) {
		tmpl, other, _, err := s.client.treeFiles(ctx, commit)
		if err != nil {
			return nil, err
		}
		s.listingMu.Lock()
		if l, e, ok := s.loadListing(); ok && l.Commit == commit && l.Files == nil {
			// Only completed: the ETag and expiry still describe the last check.
			l.Files = other
			if value, err := json.Marshal(l); err == nil {
				e.Value = value
				s.cache.Put(e)
			}
		}
		s.listingMu.Unlock()
		idx := fileIndex(tmpl, other)
		s.mu.Lock()
		if s.commit == commit && s.files == nil {
			s.files = idx
		}
		s.mu.Unlock()
		s.persist()
		return idx, nil
	})
	if err != nil {
		return nil, "", err
	}
	return v.(map[string]TreeEntry), commit, nil
}

// blob returns a blob's bytes from the cache or, once, from GitHub; a blob
// SHA names its bytes forever, so the cached copy never goes stale.
func (s *Source) blob(ctx context.Context, sha string) ([]byte, error) {
	key := s.blobNS + sha
	if ce, ok := s.cache.Peek(key); ok {
		return ce.Value, nil
	}
	v, err := s.shared(ctx, "blob:"+sha, func(ctx context.Context) (any, error) {
		data, err := s.client.Blob(ctx, sha)
		if err != nil {
			return nil, err
		}
		s.cache.Put(cache.Entry{Key: key, Value: data}) // never expires
		s.persist()
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// shared runs fn once for every concurrent caller with the same key. It
// runs detached from the first caller's cancellation (bounded by
// syncTimeout instead), so that one client giving up does not fail the
// others; each caller still stops waiting when its own ctx ends.
func (s *Source) shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := s.group.DoChan(key, func() (any, error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
		defer cancel()
		return fn(sctx)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		return r.Val, r.Err
	}
}

func (s *Source) resourceNotFound(rel, full, commit string) *fault.Error {
	ref := s.cfg.ref
	if ref == "" {
		ref = "the default branch"
	}
	at := "commit " + short(commit)
	if !s.pinned {
		at = ref + " (commit " + short(commit) + ")"
	}
	how := "check the path in the template's resources list: it is relative to the template folder (GITHUB_TEMPLATES_PATH)"
	if s.pinned {
		how += "; GITHUB_REF pins this commit, so a file pushed since is served only once GITHUB_REF names a commit that has it"
	} else {
		how += "; a file pushed since is served once the templates are refreshed (flowyprompt_refresh_templates)"
	}
	return &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read resource %q", rel),
		Why: fmt.Sprintf("%s has no file %s at %s", s.cfg.webURL, full, at), How: how,
		Details: map[string]any{"path": rel, "file": full, "repository": s.cfg.webURL, "commit": commit},
		Err:     fmt.Errorf("%w: %s at %s", ErrNotFound, full, commit)}
}

// resourceError names the resource in a failure to list or download it;
// the code, why and how (NETWORK_ERROR, check the network) stay GitHub's.
func resourceError(rel string, err error) error {
	f := fault.As(err)
	if f == nil {
		return fmt.Errorf("read resource %q: %w", rel, err)
	}
	named := *f
	named.What = fmt.Sprintf("cannot read resource %q (%s)", rel, f.What)
	return &named
}

// fileIndex maps the path of every file under the folder to its entry, or
// is nil when the other files were never listed (an older cache).
func fileIndex(entries, files []TreeEntry) map[string]TreeEntry {
	if files == nil {
		return nil
	}
	m := make(map[string]TreeEntry, len(entries)+len(files))
	for _, e := range entries {
		m[e.Path] = e
	}
	for _, e := range files {
		m[e.Path] = e
	}
	return m
}
