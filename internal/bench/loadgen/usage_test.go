package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/bench"
	"github.com/flowyprompt/flowyprompt/internal/bench/loadgen"
)

// TestStdioReportsServerUsage checks that a stdio run reads the server's
// memory and CPU, and that a bad argument set is counted and quoted.
func TestStdioReportsServerUsage(t *testing.T) {
	bin := buildServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := []string{bin, "serve", "--templates", bench.TemplatesDir(), "--log-level", "error"}
	st, err := loadgen.Stdio(ctx, loadgen.StdioConfig{
		Command:  cmd,
		Work:     loadgen.Work{Method: "prompts/get", Params: promptsGetParams(t), Requests: 3000, Warmup: 100, Expect: []byte("platform engineers")},
		Inflight: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Server.PeakRSS <= 0 || st.Server.RSS <= 0 || st.Server.PeakRSS < st.Server.RSS {
		t.Errorf("server memory not read: %+v", st.Server)
	}
	// 3,000 requests cost the server tens of milliseconds, several clock
	// ticks of /proc accounting: zero means the CPU was not read.
	if st.Server.CPU <= 0 || st.CPUPerRequest() <= 0 {
		t.Errorf("server CPU not read: %s, per request %s", st.Server.CPU, st.CPUPerRequest())
	}

	// A missing required argument is an error response: counted, quoted.
	st, err = loadgen.Stdio(ctx, loadgen.StdioConfig{
		Command:  cmd,
		Work:     loadgen.Work{Method: "prompts/get", Params: []byte(`{"name":"` + bench.PromptName + `","arguments":{"topic":"x"}}`), Requests: 50},
		Inflight: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Errors != 50 || st.FirstError == "" {
		t.Errorf("errors=%d first=%q, want 50 and a quote", st.Errors, st.FirstError)
	}
}
