package github

import "sync"

// DefaultBlobPoolBytes bounds a BlobPool made with NewBlobPool(0).
const DefaultBlobPoolBytes = 32 << 20

// BlobPool lets the sources of one repository (the refs its labels
// serve) share the files they read: a blob SHA names its bytes forever,
// so a file two refs have alike is fetched once, by whichever source
// needs it first, and handed to the others from here. It holds at most
// its bound in bytes, the oldest blobs leaving first; a blob it no longer
// holds is fetched again. Safe for concurrent use; the bytes it holds
// and hands out are never written, by it or by the sources.
type BlobPool struct {
	mu    sync.Mutex
	max   int64
	size  int64
	blobs map[string][]byte
	order []string // the SHAs, oldest first
}

// NewBlobPool returns a pool of at most maxBytes (0:
// DefaultBlobPoolBytes).
func NewBlobPool(maxBytes int64) *BlobPool {
	if maxBytes <= 0 {
		maxBytes = DefaultBlobPoolBytes
	}
	return &BlobPool{max: maxBytes, blobs: map[string][]byte{}}
}

// get returns the blob sha, if the pool holds it. A nil pool holds
// nothing.
func (p *BlobPool) get(sha string) ([]byte, bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.blobs[sha]
	return b, ok
}

// put keeps b as the blob sha, which the caller will not write again,
// letting the oldest blobs go to stay within the bound. A nil pool keeps
// nothing.
func (p *BlobPool) put(sha string, b []byte) {
	if p == nil || b == nil || int64(len(b)) > p.max {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.blobs[sha]; ok {
		return
	}
	p.blobs[sha] = b
	p.order = append(p.order, sha)
	p.size += int64(len(b))
	for p.size > p.max {
		old := p.order[0]
		p.order = p.order[1:]
		p.size -= int64(len(p.blobs[old]))
		delete(p.blobs, old)
	}
}
