package folder

import (
	"container/list"
	"sync"

	"github.com/flowyprompt/flowyprompt/templates"
)

// What a folder's history remembers, so that a version lookup does not
// start git again for what it already read: the history of a file at a
// HEAD commit (a new commit is a new HEAD, so a commit is seen at once),
// and the file at a commit (which never changes). Both are bounded, the
// oldest dropped first.
const (
	// maxGitRuns is how many git processes a folder runs at once; more
	// requests wait for one to end (or for their own deadline).
	maxGitRuns = 4
	// maxHistories bounds the histories kept (one per file and HEAD).
	maxHistories = 256
	// maxBlobBytes bounds the files kept from earlier commits, in bytes.
	maxBlobBytes = 8 << 20
)

// gitCache holds a folder's remembered histories and files.
type gitCache struct {
	mu        sync.Mutex
	histories map[string]*list.Element // HEAD + path → element of histOrder
	histOrder list.List                // of histItem, oldest first
	blobs     map[string]*list.Element // "COMMIT:PATH" → element of blobOrder
	blobOrder list.List                // of blobItem, oldest first
	blobBytes int
}

type histItem struct {
	key  string
	revs templates.Revisions
}

// blobItem is a file at a commit: its bytes, or why there are none
// (errNoFile, a *tooLarge).
type blobItem struct {
	key  string
	data []byte
	err  error
}

func (c *gitCache) history(head, p string) (templates.Revisions, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.histories[head+"\x00"+p]
	if !ok {
		return templates.Revisions{}, false
	}
	r := e.Value.(histItem).revs
	// Callers may change what they get.
	r.Revisions = append([]templates.Revision(nil), r.Revisions...)
	return r, true
}

func (c *gitCache) putHistory(head, p string, revs templates.Revisions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.histories == nil {
		c.histories = map[string]*list.Element{}
	}
	k := head + "\x00" + p
	if _, ok := c.histories[k]; ok {
		return
	}
	revs.Revisions = append([]templates.Revision(nil), revs.Revisions...)
	c.histories[k] = c.histOrder.PushBack(histItem{key: k, revs: revs})
	for c.histOrder.Len() > maxHistories {
		delete(c.histories, c.histOrder.Remove(c.histOrder.Front()).(histItem).key)
	}
}

func (c *gitCache) blob(spec string) (blobItem, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.blobs[spec]
	if !ok {
		return blobItem{}, false
	}
	return e.Value.(blobItem), true
}

func (c *gitCache) putBlob(spec string, data []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blobs == nil {
		c.blobs = map[string]*list.Element{}
	}
	if _, ok := c.blobs[spec]; ok || len(data) > maxBlobBytes {
		return
	}
	c.blobs[spec] = c.blobOrder.PushBack(blobItem{key: spec, data: data, err: err})
	c.blobBytes += len(data) + len(spec)
	for c.blobBytes > maxBlobBytes {
		it := c.blobOrder.Remove(c.blobOrder.Front()).(blobItem)
		delete(c.blobs, it.key)
		c.blobBytes -= len(it.data) + len(it.key)
	}
}
