package folder

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/templates"
)

// gitRecorder counts the git processes a Source starts, by command.
type gitRecorder struct {
	mu   sync.Mutex
	runs []string
}

func (g *gitRecorder) start(args []string) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs = append(g.runs, strings.Join(args, " "))
	return func() {}
}

func (g *gitRecorder) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.runs
	g.runs = nil
	return r
}

// TestGitRunsAtOnce: however many lookups arrive together, a folder runs
// at most maxGitRuns git processes at once; the others wait their turn
// and all succeed.
func TestGitRunsAtOnce(t *testing.T) {
	_, dir, _ := greetingRepo(t)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	var mu sync.Mutex
	inFlight, most := 0, 0
	full := make(chan struct{}) // closed once maxGitRuns run together
	src.gitStarted = func([]string) func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == maxGitRuns {
			select {
			case <-full:
			default:
				close(full)
			}
		}
		mu.Unlock()
		<-full // each waits until the limit was reached once: then they all ran together
		return func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*maxGitRuns)
	for range 3 * maxGitRuns {
		wg.Go(func() {
			_, err := src.FileAt(context.Background(), "Greeting.json", "v1.0.0")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if most != maxGitRuns {
		t.Errorf("at most %d git processes ran at once, want %d", most, maxGitRuns)
	}
}

// TestHistoryPerHead: a history is read once per HEAD commit (asked
// again, it costs only the runs that find HEAD), a new commit is seen at
// once, and the files it read answer FileAt at those commits with no git
// run at all.
func TestHistoryPerHead(t *testing.T) {
	r, dir, c := greetingRepo(t)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	var rec gitRecorder
	src.gitStarted = rec.start
	ctx := context.Background()
	if _, err := src.FileHistory(ctx, "Greeting.json"); err != nil {
		t.Fatal(err)
	}
	if runs := rec.take(); len(runs) != 5 {
		t.Errorf("first history: git %q, want 5 runs (prefix, HEAD, log, batch-check, batch)", runs)
	}
	if _, err := src.FileHistory(ctx, "Greeting.json"); err != nil {
		t.Fatal(err)
	}
	if runs := rec.take(); len(runs) != 2 || strings.Contains(strings.Join(runs, ","), "log") {
		t.Errorf("history again: git %q, want the 2 rev-parse runs only", runs)
	}
	for _, commit := range c {
		if _, err := src.FileAt(ctx, "Greeting.json", commit); err != nil {
			t.Fatal(err)
		}
	}
	if runs := rec.take(); len(runs) != 0 {
		t.Errorf("files at the history's commits: git %q, want none", runs)
	}

	next := r.Commit("Ada Lovelace", "Greeting 3.0.0", map[string][]byte{"prompts/Greeting.json": versioned("3.0.0", "hello three")})
	h, err := src.FileHistory(ctx, "Greeting.json")
	if err != nil {
		t.Fatal(err)
	}
	if h.Ref != next || len(h.Revisions) != 4 || h.Revisions[0].Version != "3.0.0" {
		t.Errorf("after a commit: %+v; want it first, at HEAD %s", h, next)
	}
}

// TestLargeBlobNeverInflated: a file over the size limit in the history
// is sized with cat-file --batch-check and never read: no cat-file
// --batch runs for it, and FileAt says it is too large.
func TestLargeBlobNeverInflated(t *testing.T) {
	r := gittest.New(t)
	big := append(versioned("0.9.0", "big"), bytes.Repeat([]byte(" "), 64<<10)...)
	old := r.Commit("Ada Lovelace", "big", map[string][]byte{"prompts/Greeting.json": big})
	r.Commit("Ada Lovelace", "small", map[string][]byte{"prompts/Greeting.json": versioned("1.0.0", "small")})
	src := New(filepath.Join(r.Root, "prompts"), templates.BuildOptions{Logger: quiet, MaxFileSize: 32 << 10})
	var rec gitRecorder
	src.gitStarted = rec.start
	ctx := context.Background()
	h, err := src.FileHistory(ctx, "Greeting.json")
	if err != nil || len(h.Revisions) != 2 || h.Revisions[1].Version != "" {
		t.Fatalf("history: %+v, %v", h, err)
	}
	rec.take()
	src2 := New(filepath.Join(r.Root, "prompts"), templates.BuildOptions{Logger: quiet, MaxFileSize: 32 << 10})
	src2.gitStarted = rec.start
	_, err = src2.FileAt(ctx, "Greeting.json", old)
	if f := fault.As(err); f == nil || f.Code != fault.TemplateTooLarge {
		t.Fatalf("FileAt the large file: %v, want TEMPLATE_TOO_LARGE", err)
	}
	for _, run := range rec.take() {
		if run == "cat-file --batch" {
			t.Errorf("git %q ran: the large file was inflated", run)
		}
	}
}

// TestLookupRuns: a version lookup past its budget of git runs stops
// with an error naming the limit and what to pass instead.
func TestLookupRuns(t *testing.T) {
	_, dir, _ := greetingRepo(t)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	ctx := templates.WithLookup(context.Background(), 3)
	_, err := src.FileHistory(ctx, "Greeting.json")
	f := fault.As(err)
	if f == nil || f.Code != fault.InvalidArgument || !strings.Contains(f.Why, "at most 3 times") || !strings.Contains(f.How, "full commit SHA") {
		t.Fatalf("history past the budget: %v, want INVALID_ARGUMENT naming the limit", err)
	}
}
