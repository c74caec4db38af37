package templates

import (
	"context"
	"time"
)

// Source loads a complete Catalog. Implementations: the embedded example
// library (Embedded), folder.Source and github.Source.
//
// Load must never fail because one file is invalid: invalid files are left
// out of the catalog and reported in Catalog.Invalid. Load fails only when
// the source as a whole cannot be read (folder missing, GitHub unreachable
// with nothing cached, bad credentials).
//
// FreshFor says how long from now (on the source's clock) a client may take the current catalog
// as fresh without asking again: the cache hint (ttlMs) of the lists and
// reads that show it. It is a hint, not a promise; a change notification
// still invalidates earlier.
type Source interface {
	Load(ctx context.Context) (*Catalog, error)
	Info() SourceInfo
	FreshFor() time.Duration
}

// EmbeddedFreshness is how long the built-in examples may be cached: they
// change only with the binary.
const EmbeddedFreshness = 24 * time.Hour

// Watcher is implemented by sources that can notice changes by themselves
// (the folder source with fsnotify, the GitHub source on its TTL).
// Watch calls onChange with each new catalog until ctx ends. A change to
// the source made after Watch is called reaches onChange once the source
// notices it (the folder at once, GitHub when its TTL runs out), even one
// made before Watch has its own watches in place: callers need not wait for
// Watch to start before changing the source.
type Watcher interface {
	Watch(ctx context.Context, onChange func(*Catalog)) error
}

// ResourceReader is implemented by sources that can read other files of
// the same source (a template's `resources` may name a path).
type ResourceReader interface {
	ReadResource(ctx context.Context, path string) (data []byte, mimeType string, err error)
}

// ResourceChecker is implemented by sources that can tell whether
// ReadResource would find a file without reading it: resources/list uses
// it to advertise only the files that are there.
type ResourceChecker interface {
	CheckResource(ctx context.Context, path string) error
}

// CheckResource reports whether rr would serve p: through its
// ResourceChecker when it has one, otherwise by reading the file.
func CheckResource(ctx context.Context, rr ResourceReader, p string) error {
	if c, ok := rr.(ResourceChecker); ok {
		return c.CheckResource(ctx, p)
	}
	_, _, err := rr.ReadResource(ctx, p)
	return err
}

// SourceInfo says where templates come from, for tool results and
// `flowyprompt check`.
type SourceInfo struct {
	Kind     string `json:"kind"`               // "embedded", "directory", "github"
	Location string `json:"location"`           // folder path or repository URL (never with a token)
	Ref      string `json:"ref,omitempty"`      // GitHub branch, tag or commit as configured
	Revision string `json:"revision,omitempty"` // resolved commit SHA, when known

	// A Composite's members, in precedence order, each with its Namespace
	// and, when it is served stale, why.
	Members   []SourceInfo `json:"members,omitempty"`
	Namespace string       `json:"namespace,omitempty"`
	Stale     *Staleness   `json:"stale,omitempty"`
}

// Staleness is set on a catalog that is being served although refreshing it
// failed (GitHub down, rate-limited, token refused).
type Staleness struct {
	Since      time.Time     `json:"since"`
	Reason     string        `json:"reason"`
	Code       string        `json:"code"`                  // GITHUB_RATE_LIMITED, NETWORK_ERROR, ...
	RetryAfter time.Duration `json:"retry_after,omitempty"` // when known
}
