// Package bench is the root of the benchmark harness, a module of its own
// so that the product never depends on the load generator or on the
// libraries it is compared with:
//
//   - cmd/mcpbench compares flowyprompt with the peers and writes
//     docs/performance.md: stdio, legacy SSE and Streamable HTTP
//     request scenarios, among them http-stateless-get-50 (prompts/get at
//     protocol 2026-07-28, no initialize and no session), and memory per
//     idle session;
//   - loadgen is the load generator it drives them with;
//   - peers holds the reference servers built on mcp-go and go-sdk, with
//     -stateless for their stateless Streamable HTTP modes, the ones that
//     serve 2026-07-28;
//   - templates/ has 20 templates of about 2 KB, each with three required
//     string arguments (topic, audience, tone), which every server serves;
//   - crosscheck.sh repeats the main scenarios with an independent load
//     generator.
//
// The harness reaches flowyprompt only through its binary, built from the
// repository root by path (go build ./cmd/flowyprompt), so this module does
// not require the product's.
package bench

import (
	"path/filepath"
	"runtime"
)

// here is this package's folder in the source tree.
func here() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// TemplatesDir returns the absolute path of the benchmark template folder.
func TemplatesDir() string { return filepath.Join(here(), "templates") }

// Root returns the repository root, where the tests build
// ./cmd/flowyprompt.
func Root() string { return filepath.Join(here(), "..", "..") }

// PromptName is the template the benchmarks render.
const PromptName = "Bench_API_00"

// Arguments are the values the benchmarks pass.
var Arguments = map[string]string{"topic": "rate limits", "audience": "platform engineers", "tone": "direct"}
