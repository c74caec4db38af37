package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// heapPerLibraryByte bounds the live heap a served library costs per byte
// of its files: the files themselves (kept for resources/read and the
// digests), the decoded text, and the rest of the parsed templates and the
// app's prompt list. Measured at about 2.7; it was 5.9.
const heapPerLibraryByte = 3

// TestHeapPerLibrarySize loads generated libraries of 500 and 2,000
// templates of about 4 KB each, dense with placeholders, the way the server
// does (a source, the library, the app, a prompts/list), and checks the
// live heap they add after a collection, with the library still served.
// The GitHub source goes through the fake API and keeps its blob cache;
// the folder source reads the files from disk.
func TestHeapPerLibrarySize(t *testing.T) {
	sources := []struct {
		name string
		// open serves files; settle, called before the heap is measured,
		// drops what the test's own fakes recorded during the load.
		open func(t *testing.T, files map[string][]byte) (src templates.Source, settle func())
	}{
		{"github", func(t *testing.T, files map[string][]byte) (templates.Source, func()) {
			fake := fakegithub.New("acme", "prompts")
			t.Cleanup(fake.Close)
			fake.PutFiles(files)
			src, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: "main", APIURL: fake.URL(),
				CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			return src, fake.Reset
		}},
		{"folder", func(t *testing.T, files map[string][]byte) (templates.Source, func()) {
			dir := t.TempDir()
			for p, b := range files {
				p = filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return folder.New(filepath.Join(dir, "templates"), templates.BuildOptions{}), func() {}
		}},
	}
	for _, src := range sources {
		for _, n := range []int{500, 2000} {
			gen := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: n, TemplateBytes: 4096})
			var size int64
			for p, b := range gen.Files {
				if filepath.Dir(p) == "templates" {
					size += int64(len(b))
				}
			}
			source, settle := src.open(t, gen.Files)
			gen = fakegithub.Library{} // what the source holds is measured, not the generator's copy

			before := liveHeap()
			lib := templates.NewLibrary(source, slog.New(slog.DiscardHandler))
			if err := lib.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			a := app.New(app.Options{Library: lib, Version: "test"})
			e := mcp.NewEngine(a.Server(), mcp.EngineOptions{})
			prompts, err := a.ListPrompts(context.Background(), nil)
			if err != nil || len(prompts) != n {
				t.Fatalf("%s, %d templates: prompts/list gave %d prompts (%v)", src.name, n, len(prompts), err)
			}
			settle()
			grew := liveHeap() - before
			runtime.KeepAlive(e)
			runtime.KeepAlive(source)

			t.Logf("%s, %d templates, %d bytes of files: live heap +%d bytes, %.2f bytes per library byte",
				src.name, n, size, grew, float64(grew)/float64(size))
			if grew > heapPerLibraryByte*size {
				t.Errorf("%s, %d templates (%d bytes of files): live heap grew by %d bytes, %.2f per library byte; want at most %d",
					src.name, n, size, grew, float64(grew)/float64(size), heapPerLibraryByte)
			}
		}
	}
}

// liveHeap returns the bytes of live heap objects: twice collected, so
// that what the first collection's finalizers released is gone too.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
