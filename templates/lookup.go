package templates

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// MaxLookupRuns is how many backend runs (git processes of a folder's
// repository) one version lookup may make: a history and the file at a
// tag take under ten, so a lookup that needs more is walking a history
// that cannot answer it.
const MaxLookupRuns = 32

type lookupKey struct{}

type lookupBudget struct {
	used atomic.Int64
	max  int64
}

// WithLookup returns ctx marking one version lookup (a get or render at a
// version, a history): the History calls made with it share a budget of
// max backend runs, MaxLookupRuns when max is 0.
func WithLookup(ctx context.Context, maxRuns int) context.Context {
	if maxRuns <= 0 {
		maxRuns = MaxLookupRuns
	}
	return context.WithValue(ctx, lookupKey{}, &lookupBudget{max: int64(maxRuns)})
}

// SpendLookupRun takes one run from the budget of the lookup ctx marks
// (nothing without one), or says that the lookup has made all it may.
func SpendLookupRun(ctx context.Context, what string) error {
	b, _ := ctx.Value(lookupKey{}).(*lookupBudget)
	if b == nil || b.used.Add(1) <= b.max {
		return nil
	}
	return &fault.Error{Code: fault.InvalidArgument,
		What:    what + " was not run",
		Why:     fmt.Sprintf("one version lookup may run git at most %d times, and this one has: the file's history does not answer it quickly", b.max),
		How:     "pass a full commit SHA or a tag as version (flowyprompt_template_history lists the commits), or omit version for the current one",
		Details: map[string]any{"max_runs": b.max}}
}
