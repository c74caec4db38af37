package folder

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

func TestReadResource(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "templates")
	writeFile(t, filepath.Join(dir, "docs", "guide.md"), []byte("# Guide"))
	writeFile(t, filepath.Join(base, "secret.txt"), []byte("secret"))
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "link.md")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink(filepath.Join(dir, "docs", "guide.md"), filepath.Join(dir, "inner.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "gone.md"), filepath.Join(dir, "dangling.md")); err != nil {
		t.Fatal(err)
	}
	linkPath := filepath.Join(dir, "link.md")

	tests := []struct {
		name     string
		rel      string
		evalErr  map[string]error // path → what resolving it fails with
		wantData string
		wantWhat string // of the RESOURCE_NOT_FOUND fault
	}{
		{name: "a file", rel: "docs/guide.md", wantData: "# Guide"},
		{name: "a link inside the folder", rel: "inner.md", wantData: "# Guide"},
		{name: "a link leading out", rel: "link.md", wantWhat: "outside the template folder"},
		{name: "leading out", rel: "../secret.txt", wantWhat: "outside the template folder"},
		{name: "hidden", rel: ".env", wantWhat: "outside the template folder"},
		{name: "missing", rel: "nope.md", wantWhat: "cannot read resource"},
		{name: "a dangling link", rel: "dangling.md", wantWhat: "cannot read resource"},
		// The link cannot be resolved for another reason than a missing
		// file: it must be refused, never read unresolved (which would
		// follow it out of the folder).
		{name: "a link that cannot be resolved", rel: "link.md",
			evalErr:  map[string]error{linkPath: &fs.PathError{Op: "lstat", Path: linkPath, Err: syscall.EACCES}},
			wantWhat: "cannot read resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := New(dir, templates.BuildOptions{Logger: quiet})
			src.evalSymlinks = func(p string) (string, error) {
				if err := tt.evalErr[p]; err != nil {
					return "", err
				}
				return filepath.EvalSymlinks(p)
			}
			data, _, err := src.ReadResource(context.Background(), tt.rel)
			if tt.wantWhat == "" {
				if err != nil || string(data) != tt.wantData {
					t.Fatalf("ReadResource(%q) = %q, %v; want %q", tt.rel, data, err, tt.wantData)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != fault.ResourceNotFound || !strings.Contains(f.What, tt.wantWhat) || f.How == "" {
				t.Fatalf("ReadResource(%q) error = %v, want RESOURCE_NOT_FOUND saying %q", tt.rel, err, tt.wantWhat)
			}
			if data != nil {
				t.Errorf("ReadResource(%q) returned data %q with its error", tt.rel, data)
			}
		})
	}
}

func TestReadResourceRoot(t *testing.T) {
	// The folder is resolved once, not on every read; but when it is a
	// link pointed elsewhere since, its files are not refused as outside.
	base := t.TempDir()
	for _, d := range []string{"a", "b"} {
		writeFile(t, filepath.Join(base, d, d+".md"), []byte(d))
	}
	dir := filepath.Join(base, "templates")
	if err := os.Symlink(filepath.Join(base, "a"), dir); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	src := New(dir, templates.BuildOptions{Logger: quiet})
	var mu sync.Mutex
	rootResolved := 0
	src.evalSymlinks = func(p string) (string, error) {
		if p == dir {
			mu.Lock()
			rootResolved++
			mu.Unlock()
		}
		return filepath.EvalSymlinks(p)
	}
	for range 3 {
		if data, _, err := src.ReadResource(context.Background(), "a.md"); err != nil || string(data) != "a" {
			t.Fatalf("ReadResource(a.md) = %q, %v", data, err)
		}
	}
	if rootResolved != 1 {
		t.Errorf("the folder was resolved %d times for 3 reads, want once", rootResolved)
	}

	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "b"), dir); err != nil {
		t.Fatal(err)
	}
	if data, _, err := src.ReadResource(context.Background(), "b.md"); err != nil || string(data) != "b" {
		t.Errorf("after the folder link moved: ReadResource(b.md) = %q, %v; want its content", data, err)
	}
}
