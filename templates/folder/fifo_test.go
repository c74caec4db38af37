//go:build unix

package folder

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// TestNamedPipe: opening a named pipe blocks until something writes to it.
// A pipe in the folder, named as a template or listed as a resource, is
// passed over like any other file that is not a regular one, and holds
// nothing up.
func TestNamedPipe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), tmpl("a", "a"))
	for _, name := range []string{"pipe.json", "pipe.md"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := New(dir, templates.BuildOptions{Logger: quiet})
	type result struct {
		c   *templates.Catalog
		err error
	}
	loaded := make(chan result, 1)
	go func() {
		c, err := src.Load(context.Background())
		loaded <- result{c, err}
	}()
	select {
	case r := <-loaded:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if diff := cmp.Diff([]string{"a"}, names(r.c.Templates())); diff != "" {
			t.Errorf("templates mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]invalidRow{}, invalidRows(r.c)); diff != "" {
			t.Errorf("invalid mismatch (-want +got):\n%s", diff)
		}
	case <-time.After(guard):
		t.Fatal("Load is stuck opening the named pipe")
	}

	read := make(chan error, 1)
	go func() {
		_, _, err := src.ReadResource(context.Background(), "pipe.md")
		read <- err
	}()
	select {
	case err := <-read:
		if f := fault.As(err); f == nil || f.Code != fault.ResourceNotFound || f.How == "" {
			t.Errorf("ReadResource(pipe.md) error = %v, want RESOURCE_NOT_FOUND with a fix", err)
		}
	case <-time.After(guard):
		t.Fatal("ReadResource is stuck opening the named pipe")
	}
}
