package audit_test

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// BenchmarkRequest is what the audit log adds to one prompts/get: the
// hook's start, the application's Note and the end, with the text line
// written to /dev/null (a real write, as to stderr). Besides the wall time
// of the request's goroutine (ns/op) it reports the process's CPU time per
// request (cpu-ns/op), which counts work moved off the request's path too.
// level=warn is the floor: the hook does nothing.
func BenchmarkRequest(b *testing.B) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		b.Run("level="+level.String(), func(b *testing.B) {
			devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer devNull.Close()
			l := audit.New(slog.New(slog.NewTextHandler(devNull, &slog.HandlerOptions{Level: level})))
			info := mcp.RequestInfo{Method: mcp.MethodPromptsGet, Target: "Commit_Message", ID: "12345",
				ProtocolVersion: "2025-06-18", Client: mcp.Implementation{Name: "claude-ai", Version: "0.1.0"},
				SessionID: "87cb88f3a1d94b0c9e1f2a3b4c5d6e7f"}
			usage := audit.Usage{Template: "Commit_Message", Version: "1.0.0", Source: "directory"}
			ctx := context.Background()
			cpu0 := cpuTime(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rctx, end := l.StartRequest(ctx, &info)
				audit.Note(rctx, usage)
				end(mcp.Outcome{})
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
