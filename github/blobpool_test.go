package github

import "testing"

// TestBlobPoolBound: the pool keeps at most its bound in bytes, the
// oldest blobs leaving first; a blob larger than the bound is not kept;
// a nil pool keeps nothing.
func TestBlobPoolBound(t *testing.T) {
	p := NewBlobPool(10)
	p.put("a", []byte("aaaa"))
	p.put("b", []byte("bbbb"))
	p.put("a", []byte("xxxx")) // a SHA names one content: kept as it was
	p.put("c", []byte("cccc")) // 12 bytes: a leaves
	p.put("big", []byte("0123456789x"))
	for _, tt := range []struct {
		sha  string
		want string
		ok   bool
	}{{"a", "", false}, {"b", "bbbb", true}, {"c", "cccc", true}, {"big", "", false}} {
		b, ok := p.get(tt.sha)
		if ok != tt.ok || string(b) != tt.want {
			t.Errorf("get(%s) = %q, %v; want %q, %v", tt.sha, b, ok, tt.want, tt.ok)
		}
	}
	if p.size != 8 {
		t.Errorf("size %d, want 8", p.size)
	}
	var none *BlobPool
	none.put("a", []byte("a"))
	if _, ok := none.get("a"); ok {
		t.Error("a nil pool kept a blob")
	}
}
