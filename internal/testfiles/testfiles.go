// Package testfiles holds small helpers that tests of several packages
// share: writing a tree of files, and a log sink written from many
// goroutines.
package testfiles

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Write writes files (slash paths relative to dir, to their contents)
// into dir, making the folders they need.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// SyncBuffer is a log sink a server may write to from any goroutine while
// a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
