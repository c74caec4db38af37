package loadgen_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/bench"
	"github.com/flowyprompt/flowyprompt/internal/bench/loadgen"
)

// buildServer builds the flowyprompt binary from the repository root: the
// harness module does not require the product's, so the binary is built by
// path, and GOWORK=off keeps a stray go.work from joining the two.
func buildServer(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "flowyprompt")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/flowyprompt")
	cmd.Dir = bench.Root()
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func promptsGetParams(tb testing.TB) json.RawMessage {
	p, err := json.Marshal(map[string]any{"name": bench.PromptName, "arguments": bench.Arguments})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestStdioLoadEveryRequestAnswered runs a short pipelined load and checks
// that every request got a successful answer with the rendered text.
func TestStdioLoadEveryRequestAnswered(t *testing.T) {
	bin := buildServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := loadgen.Stdio(ctx, loadgen.StdioConfig{
		Command:  []string{bin, "serve", "--templates", bench.TemplatesDir(), "--log-level", "error"},
		Work:     loadgen.Work{Method: "prompts/get", Params: promptsGetParams(t), Requests: 2000, Warmup: 100, Expect: []byte("platform engineers")},
		Inflight: 32,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 2000 || st.Errors != 0 {
		t.Fatalf("%v", st)
	}
}

// BenchmarkStdioPromptsGet is the end-to-end stdio figure: requests per
// second and p50/p99 for prompts/get of a 2 KB template, through the built
// binary, with 1 and 32 requests in flight.
func BenchmarkStdioPromptsGet(b *testing.B) {
	bin := buildServer(b)
	for _, inflight := range []int{1, 32} {
		b.Run(map[int]string{1: "inflight=1", 32: "inflight=32"}[inflight], func(b *testing.B) {
			st, err := loadgen.Stdio(context.Background(), loadgen.StdioConfig{
				Command: []string{bin, "serve", "--templates", bench.TemplatesDir(), "--log-level", "error"},
				Work: loadgen.Work{Method: "prompts/get", Params: promptsGetParams(b), Requests: max(b.N, 1000), Warmup: 500,
					Expect: []byte("platform engineers")},
				Inflight: inflight,
			})
			if err != nil {
				b.Fatal(err)
			}
			if st.Errors > 0 {
				b.Fatalf("%d errors", st.Errors)
			}
			b.ReportMetric(st.RPS, "req/s")
			b.ReportMetric(float64(st.P50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(st.P99.Microseconds()), "p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
