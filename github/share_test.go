package github

import (
	"context"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// TestCatalogSharesCachedBlobs: every template's Raw is the blob cache's
// copy of its file, not a second one, after a download and after a restart
// from the disk cache alike.
func TestCatalogSharesCachedBlobs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 20, TemplateBytes: 2048}))
	for _, start := range []string{"download", "restart"} {
		h.fake.Reset()
		s := h.source()
		cat, err := s.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if cat.Len() != 20 {
			t.Fatalf("%s: %d templates, want 20", start, cat.Len())
		}
		s.mu.Lock()
		shas := s.baseBlobs
		s.mu.Unlock()
		for _, e := range cat.Templates() {
			cached, ok := s.cache.View(s.blobNS + shas[e.Path])
			if !ok || len(cached) == 0 || string(cached) != string(e.Raw) {
				t.Fatalf("%s: %s is not in the blob cache as served", start, e.Path)
			}
			if &cached[0] != &e.Raw[0] {
				t.Errorf("%s: %s holds a copy of the cached blob, not the cache's bytes", start, e.Path)
			}
		}
		if downloads := h.fake.Count(fakegithub.RouteBlob) + h.fake.Count(fakegithub.RouteTarball); (downloads > 0) != (start == "download") {
			t.Fatalf("%s: %d blob or archive requests", start, downloads)
		}
	}
}
