// Package bench holds the benchmark fixtures shared by flowyprompt's own
// benchmarks and the peer comparison: templates/ has 20 templates of about
// 2 KB, each with three required string arguments (topic, audience, tone).
package bench

import (
	"path/filepath"
	"runtime"
)

// TemplatesDir returns the absolute path of the benchmark template folder.
func TemplatesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "templates")
}

// PromptName is the template the benchmarks render.
const PromptName = "Bench_API_00"

// Arguments are the values the benchmarks pass.
var Arguments = map[string]string{"topic": "rate limits", "audience": "platform engineers", "tone": "direct"}
