package audit_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// BenchmarkRequest is what the audit log adds to one prompts/get: the
// hook's start, the application's Note and the end, with the text line
// written to /dev/null (a real write, as to stderr). Besides the wall time
// of the request's goroutine (ns/op) it reports the CPU time per request
// of the request's thread (path-cpu-ns/op: the goroutine is locked to its
// thread, so this is what the request pays) and of the whole process
// (cpu-ns/op), which counts the work moved off the request's path too:
// the log is closed, every line written, before it is read. Every
// Queue/2 requests the loop, its timer stopped, waits for the lines to be
// written, as no server ends requests faster than they are logged for
// long; dropped/op shows that none was lost. level=warn is the floor: the
// hook does nothing.
func BenchmarkRequest(b *testing.B) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		b.Run("level="+level.String(), func(b *testing.B) {
			devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer devNull.Close()
			written := &counted{caughtUp: make(chan struct{}, 1)}
			l := audit.Buffered(devNull, func(w io.Writer) slog.Handler {
				written.Handler = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
				return written
			})
			info := mcp.RequestInfo{Method: mcp.MethodPromptsGet, Target: "Commit_Message", ID: "12345",
				ProtocolVersion: "2025-06-18", Client: mcp.Implementation{Name: "claude-ai", Version: "0.1.0"},
				SessionID: "87cb88f3a1d94b0c9e1f2a3b4c5d6e7f"}
			usage := audit.Usage{Template: "Commit_Message", Version: "1.0.0", Source: "directory"}
			ctx := context.Background()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, path0 := cpuTime(b, syscall.RUSAGE_SELF), cpuTime(b, rusageThread)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				rctx, end := l.StartRequest(ctx, &info)
				audit.Note(rctx, usage)
				end(mcp.Outcome{})
				if level == slog.LevelInfo && (i+1)%(audit.Queue/2) == 0 {
					b.StopTimer()
					written.await(int64(i + 1))
					b.StartTimer()
				}
			}
			b.StopTimer()
			path := cpuTime(b, rusageThread) - path0
			if err := l.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(path)/float64(b.N), "path-cpu-ns/op")
			b.ReportMetric(float64(cpuTime(b, syscall.RUSAGE_SELF)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(l.Dropped())/float64(b.N), "dropped/op")
		})
	}
}

// counted is a handler that counts the lines it formatted and says when
// the count reaches want.
type counted struct {
	slog.Handler
	n, want  atomic.Int64
	caughtUp chan struct{}
}

func (c *counted) Handle(ctx context.Context, r slog.Record) error {
	err := c.Handler.Handle(ctx, r)
	if c.n.Add(1) == c.want.Load() {
		c.caughtUp <- struct{}{}
	}
	return err
}

// await returns once n lines were formatted.
func (c *counted) await(n int64) {
	c.want.Store(n)
	if c.n.Load() >= n {
		select { // the signal may have been sent meanwhile
		case <-c.caughtUp:
		default:
		}
		return
	}
	<-c.caughtUp
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

// cpuTime is the user and system CPU time so far of the process
// (RUSAGE_SELF) or the calling thread (rusageThread).
func cpuTime(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
