// Package gittest makes Git repositories for tests: commits by a named
// author at known times, whatever the machine's Git configuration. The
// tests of folder versions read such repositories with the git command, as
// the server does.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a Git repository in a temporary folder. Each commit is dated a
// day after the one before, from 2024-01-03 10:00 UTC on. A Repo is used
// by one test goroutine.
type Repo struct {
	// Root is the repository's top folder.
	Root string
	t    testing.TB
	now  time.Time
}

// New makes an empty repository, failing t when git is not on PATH: the
// tests that use it prove nothing without git.
func New(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs the git command on PATH (folder versions are read with it): %v", err)
	}
	r := &Repo{Root: t.TempDir(), t: t, now: time.Date(2024, 1, 2, 10, 0, 0, 0, time.UTC)}
	r.Git("init", "-q")
	return r
}

// Git runs git with args in the repository, ignoring the machine's and
// the user's Git configuration, and returns its output, trimmed. A failure
// fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Root
	date := r.now.Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes files (slash paths from the repository's top) without
// committing them.
func (r *Repo) Write(files map[string][]byte) {
	r.t.Helper()
	for p, data := range files {
		full := filepath.Join(r.Root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// Commit writes files and commits them as author with message, a day
// after the previous commit, and returns the commit's SHA.
func (r *Repo) Commit(author, message string, files map[string][]byte) string {
	r.t.Helper()
	r.Write(files)
	for p := range files {
		r.Git("add", "--", p)
	}
	r.now = r.now.Add(24 * time.Hour)
	r.Git("-c", "user.name="+author, "-c", "user.email=author@example.com", "commit", "-q", "-m", message)
	return r.Git("rev-parse", "HEAD")
}
