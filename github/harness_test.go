package github

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/testclock"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/templates"
)

// testToken looks like a real classic token so that pattern-based redaction
// is exercised as well as the exact match.
const testToken = "ghp_T0kenThatMustNeverLeak0123456789abcd"

// newClock starts at the real time so that rate-limit resets (wall-clock
// times from the server) stay plausible.
func newClock() *testclock.Clock { return testclock.New(time.Now().Truncate(time.Second)) }

// logBuffer collects JSON log records from concurrent goroutines.
type logBuffer struct{ testfiles.SyncBuffer }

// count returns how many records have the level and a message containing msg.
func (b *logBuffer) count(level, msg string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == level && strings.Contains(rec.Msg, msg) {
			n++
		}
	}
	return n
}

// harness is a fake GitHub with a generated library, a clock, captured logs
// and a cache directory shared by the sources it makes (a "restart" is a new
// source on the same directory).
type harness struct {
	t        *testing.T
	fake     *fakegithub.Server
	lib      fakegithub.Library
	clock    *testclock.Clock
	logs     *logBuffer
	cacheDir string
}

// standardLibrary is the 150-file library the scenarios use: 140 valid
// templates, 6 invalid ones, 4 over the size limit (plus files a loader must
// ignore).
func standardLibrary() fakegithub.Library {
	return fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 140, Invalid: 6, Oversized: 4})
}

func newHarness(t *testing.T, lib fakegithub.Library) *harness {
	t.Helper()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	fake.SetToken(testToken)
	if len(lib.Files) > 0 {
		fake.PutFiles(lib.Files)
	}
	fake.Reset()
	return &harness{t: t, fake: fake, lib: lib, clock: newClock(), logs: &logBuffer{}, cacheDir: t.TempDir()}
}

func (h *harness) config() Config {
	return Config{
		RepoURL:  "https://github.com/acme/prompts",
		Token:    testToken,
		Ref:      "main",
		APIURL:   h.fake.URL(),
		CacheDir: h.cacheDir,
		Logger:   slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      h.clock.Now,
	}
}

// source returns a new Source; edit adjusts the config first.
func (h *harness) source(edit ...func(*Config)) *Source {
	h.t.Helper()
	cfg := h.config()
	for _, e := range edit {
		e(&cfg)
	}
	s, err := NewSource(cfg)
	if err != nil {
		h.t.Fatalf("NewSource: %v", err)
	}
	return s
}

// watchBackground makes s report each finished background revalidation.
func watchBackground(s *Source) <-chan struct{} {
	done := make(chan struct{}, 16)
	s.bgDoneHook = func() { done <- struct{}{} }
	return done
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// costs summarises recorded requests by route and status, for assertions
// and for the numbers the report quotes.
type costs struct {
	Total   int
	ByRoute map[string]int
	Status  map[int]int
}

func (h *harness) costs() costs {
	c := costs{ByRoute: map[string]int{}, Status: map[int]int{}}
	for _, r := range h.fake.Requests() {
		c.Total++
		c.ByRoute[routeName(r.Pattern)]++
		c.Status[r.Status]++
	}
	return c
}

func (c costs) String() string {
	var parts []string
	for k, v := range c.ByRoute {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	var st []string
	for k, v := range c.Status {
		st = append(st, fmt.Sprintf("%d×%d", v, k))
	}
	slices.Sort(st)
	return fmt.Sprintf("%d requests (%s; status %s)", c.Total, strings.Join(parts, " "), strings.Join(st, " "))
}

func routeName(pattern string) string {
	switch pattern {
	case fakegithub.RouteRepo:
		return "repo"
	case fakegithub.RouteCommit:
		return "commit"
	case fakegithub.RouteTree:
		return "tree"
	case fakegithub.RouteBlob:
		return "blob"
	case fakegithub.RouteContents:
		return "contents"
	case fakegithub.RouteCommits:
		return "commits"
	case fakegithub.RoutePut:
		return "put"
	case fakegithub.RouteRateLimit:
		return "rate_limit"
	case fakegithub.RouteTarball:
		return "tarball"
	case "":
		return "unmatched"
	}
	return pattern
}

func names(c *templates.Catalog) []string {
	out := []string{}
	for _, e := range c.Templates() {
		out = append(out, e.Template.Metadata.Name)
	}
	return out
}

func invalidPaths(c *templates.Catalog) []string {
	out := []string{}
	for _, inv := range c.Invalid() {
		out = append(out, inv.Path)
	}
	return out
}

// ctxT is a test's context: a guard against a hang, above the source's
// own bound on a load (syncTimeout), so that a slow load on a loaded
// machine (TestArchiveLargeLibrary's 2,000 blobs one by one, under the
// race detector, took over a minute) fails, if at all, with the source's
// error rather than the test's.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout+time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }
