package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// constructors are the two ways to make a log writing JSON lines to w.
var constructors = []struct {
	name string
	new  func(w io.Writer, opts *slog.HandlerOptions) *audit.Log
}{
	{"buffered", func(w io.Writer, opts *slog.HandlerOptions) *audit.Log {
		return audit.Buffered(w, func(b io.Writer) slog.Handler { return slog.NewJSONHandler(b, opts) })
	}},
	{"logger", func(w io.Writer, opts *slog.HandlerOptions) *audit.Log {
		return audit.New(slog.New(slog.NewJSONHandler(w, opts)))
	}},
}

func closeLog(t *testing.T, l *audit.Log) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// request runs one prompts/get through l, with id as its JSON-RPC id.
func request(l *audit.Log, id string) {
	info := mcp.RequestInfo{Method: mcp.MethodPromptsGet, Target: "Commit_Message", ID: id, ProtocolVersion: "2025-06-18"}
	ctx, end := l.StartRequest(context.Background(), &info)
	audit.Note(ctx, audit.Usage{Template: "Commit_Message", Version: "1.0.0", Source: "embedded"})
	end(mcp.Outcome{})
}

// jsonLines decodes every line of out.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, s := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("line %q: %v", s, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestCloseWritesEveryLineInOrder: what was queued before Close is
// written, in the order the requests ended, by the time Close returns.
func TestCloseWritesEveryLineInOrder(t *testing.T) {
	for _, mk := range constructors {
		t.Run(mk.name, func(t *testing.T) {
			var out bytes.Buffer
			l := mk.new(&out, nil)
			const n = 3000 // more than one 64 KB batch, fewer than the queue holds
			for i := range n {
				request(l, strconv.Itoa(i))
			}
			closeLog(t, l)
			lines := jsonLines(t, out.String())
			if len(lines) != n {
				t.Fatalf("%d lines, want %d", len(lines), n)
			}
			for i, m := range lines {
				if m["request_id"] != strconv.Itoa(i) {
					t.Fatalf("line %d has request_id %v", i, m["request_id"])
				}
			}
			if d := l.Dropped(); d != 0 {
				t.Errorf("dropped %d", d)
			}
		})
	}
}

// blockingWriter blocks its first Write until released, and says when
// that write has begun.
type blockingWriter struct {
	begun, release chan struct{}
	once           sync.Once
	bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.begun)
		<-w.release
	})
	return w.Buffer.Write(p)
}

// TestFullQueueDrops: while stderr takes nothing, requests still end at
// once; the lines beyond the queue are dropped, counted, and reported by a
// warning line once writing resumes.
func TestFullQueueDrops(t *testing.T) {
	w := &blockingWriter{begun: make(chan struct{}), release: make(chan struct{})}
	l := audit.Buffered(w, func(b io.Writer) slog.Handler { return slog.NewJSONHandler(b, nil) })
	request(l, "first")
	<-w.begun // the goroutine is stuck writing the first line, the queue empty
	const extra = 10
	for i := range audit.Queue + extra {
		request(l, strconv.Itoa(i)) // would hang here, were a request to wait
	}
	if d := l.Dropped(); d != extra {
		t.Errorf("dropped %d, want %d", d, extra)
	}
	close(w.release)
	closeLog(t, l)
	lines := jsonLines(t, w.String())
	if len(lines) != 1+audit.Queue+1 {
		t.Fatalf("%d lines, want %d", len(lines), 1+audit.Queue+1)
	}
	if lines[0]["request_id"] != "first" || lines[audit.Queue]["request_id"] != strconv.Itoa(audit.Queue-1) {
		t.Errorf("lines out of order: first %v, last audited %v", lines[0]["request_id"], lines[audit.Queue]["request_id"])
	}
	warn := lines[len(lines)-1]
	if warn["level"] != "WARN" || warn["dropped"] != float64(extra) || warn["dropped_total"] != float64(extra) {
		t.Errorf("warning line: %v", warn)
	}
}

// TestCloseGivesUp: Close returns when its context ends, even if stderr
// never takes the lines; a request ending after Close is dropped and
// counted, and does not wait either.
func TestCloseGivesUp(t *testing.T) {
	w := &blockingWriter{begun: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(w.release) })
	l := audit.Buffered(w, func(b io.Writer) slog.Handler { return slog.NewJSONHandler(b, nil) })
	request(l, "1")
	<-w.begun
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Close(ctx); err == nil || !strings.Contains(err.Error(), "not flushed") {
		t.Fatalf("Close = %v, want a not-flushed error", err)
	}
	request(l, "late")
	if d := l.Dropped(); d != 1 {
		t.Errorf("dropped %d, want 1", d)
	}
}

// TestConcurrentRequests: requests ending on many goroutines each get
// their line (run with -race).
func TestConcurrentRequests(t *testing.T) {
	var out bytes.Buffer
	l := audit.Buffered(&out, func(b io.Writer) slog.Handler { return slog.NewJSONHandler(b, nil) })
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				request(l, strconv.Itoa(w*each+i))
			}
		})
	}
	wg.Wait()
	closeLog(t, l)
	seen := map[any]bool{}
	for _, m := range jsonLines(t, out.String()) {
		seen[m["request_id"]] = true
	}
	if len(seen) != workers*each || l.Dropped() != 0 {
		t.Errorf("%d distinct lines, %d dropped; want %d and 0", len(seen), l.Dropped(), workers*each)
	}
}
