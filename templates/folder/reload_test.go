package folder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// writeLibrary writes n templates of about 8 KB each to dir and returns
// their total size.
func writeLibrary(t *testing.T, dir string, n int) int64 {
	t.Helper()
	var size int64
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		body := tmpl(name, strings.Repeat(fmt.Sprintf("Line %d of template %s. ", i, name), 8192/30))
		writeFile(t, filepath.Join(dir, name+".json"), body)
		size += int64(len(body))
	}
	return size
}

// TestReloadSharesUnchangedFiles: a load after the first keeps, for every
// file that still holds what the last catalog holds, that catalog's entry
// and bytes; a changed file, even one of the same size, is read and parsed
// anew. The bytes of a file read anew are held in a buffer of their size.
func TestReloadSharesUnchangedFiles(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		shared []string // templates whose entry the reload shares
	}{
		{name: "nothing changed", change: func(*testing.T, string) {}, shared: []string{"a", "b", "c"}},
		{name: "one file rewritten as it was", change: func(t *testing.T, dir string) {
			writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "beta"))
		}, shared: []string{"a", "b", "c"}},
		{name: "one file changed, same size", change: func(t *testing.T, dir string) {
			writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "BETA"))
		}, shared: []string{"a", "c"}},
		{name: "one file grown", change: func(t *testing.T, dir string) {
			writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "beta, and more"))
		}, shared: []string{"a", "c"}},
		{name: "one file shortened", change: func(t *testing.T, dir string) {
			writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "bet"))
		}, shared: []string{"a", "c"}},
		{name: "one moved to a subfolder", change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "team", "b.json"), tmpl("b", "beta"))
			if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
				t.Fatal(err)
			}
		}, shared: []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range map[string]string{"a": "alpha", "b": "beta", "c": "gamma"} {
				writeFile(t, filepath.Join(dir, name+".json"), tmpl(name, content))
			}
			src := New(dir, templates.BuildOptions{Logger: quiet})
			first, err := src.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range first.Templates() {
				if len(e.Raw) != cap(e.Raw) {
					t.Errorf("%s: %d bytes held in a buffer of %d", e.Path, len(e.Raw), cap(e.Raw))
				}
			}
			tt.change(t, dir)
			again, err := src.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			fresh := templates.Build(filesOf(t, dir), templates.BuildOptions{})
			if diff := cmp.Diff(digests(fresh), digests(again)); diff != "" {
				t.Errorf("the reload differs from the folder (-want +got):\n%s", diff)
			}
			shared := []string{}
			for _, e := range again.Templates() {
				if p, ok := first.Lookup(e.Template.Metadata.Name); ok && p == e && &p.Raw[0] == &e.Raw[0] {
					shared = append(shared, e.Template.Metadata.Name)
				}
			}
			if diff := cmp.Diff(tt.shared, shared); diff != "" {
				t.Errorf("entries shared with the first load (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReloadUnchangedAllocatesLittle: reading a folder again when nothing
// changed (the watcher's first rebuild, a refresh) allocates a small part
// of the library's size: no file is copied or parsed again. Parsing them
// all again costs several times the library, and the catalog being served
// would be held twice until the next change.
func TestReloadUnchangedAllocatesLittle(t *testing.T) {
	dir := t.TempDir()
	size := writeLibrary(t, dir, 200)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	first, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	again, err := src.Load(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 200 || first.Len() != 200 {
		t.Fatalf("loads served %d and %d templates, want 200", first.Len(), again.Len())
	}
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("a reload of %d bytes of templates allocated %d bytes", size, allocated)
	if allocated > size/2 {
		t.Errorf("a reload of an unchanged folder of %d bytes allocated %d bytes; want at most half the library", size, allocated)
	}
}

// filesOf reads dir's template files as a first load does.
func filesOf(t *testing.T, dir string) []templates.File {
	t.Helper()
	files, err := New(dir, templates.BuildOptions{Logger: quiet}).Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// digests maps each template's path to its name and digest.
func digests(c *templates.Catalog) map[string]string {
	out := map[string]string{}
	for _, e := range c.Templates() {
		out[e.Path] = e.Template.Metadata.Name + " " + e.Digest
	}
	return out
}
