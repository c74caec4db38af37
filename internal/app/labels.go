package app

import (
	"context"
	"strings"
	"sync"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Labels are the libraries a server serves by label: each label a ref of
// its GitHub sources (labels= of --source), the default's library being
// Options.Library. labelset.Set implements it.
//
// Contract: the Labels owns the libraries it hands out. It opens each
// label's library on first use, at most one per label, keeps it loaded
// and revalidated for as long as it lives, and never swaps one it has
// handed out for another; the app only reads them and listens to their
// changes. Every method is safe for concurrent use.
type Labels interface {
	// Names lists the labels, the default first; never empty, and the
	// same on every call.
	Names() []string
	// Library is the library serving label, one of Names, loaded: a
	// request waits for the first load, ctx bounding its wait. Its error
	// is the load's.
	Library(ctx context.Context, label string) (*templates.Library, error)
	// Opened calls fn with the library of each label as it is opened, and
	// at once with those open already; fn must be quick. stop ends the
	// calls.
	Opened(fn func(label string, lib *templates.Library)) (stop func())
}

// labelByPolicy is the label the member ctx runs for is served by its
// policy ("label" in a read rule of --auth-policy), or "": below a label
// the request names and above --label.
func (a *App) labelByPolicy(ctx context.Context) string {
	p := a.policy()
	if p == nil {
		return ""
	}
	return p.Label(auth.MemberOf(ctx))
}

// servedLabel is the label r is served from, by name: the one it names,
// else the default's; "" when the server has no labels.
func (a *App) servedLabel(ctx context.Context, r *mcp.Request) string {
	if a.opts.Labels == nil {
		return ""
	}
	if l := a.labelOf(ctx, r); l != "" {
		return l
	}
	return a.labels[0]
}

// servedMeta is the _meta a result served from v carries to say which
// label and commit served it (label.ServedKey), merged into meta; meta as
// it is when the server has no labels, so their results keep their shape
// (and prompts/get its fast encoding). name is the template the result is
// of ("": none in particular), whose source's commit is named; else the
// first GitHub source's.
func servedMeta(v view, name string, meta map[string]any) map[string]any {
	l := v.label
	if l == "" {
		return meta
	}
	out := make(map[string]any, len(meta)+1)
	for k, x := range meta {
		out[k] = x
	}
	out[label.ServedKey] = map[string]string{"label": l, "commit": commitOf(v.cat.Info(), name)}
	return out
}

// commitOf is the commit the template name of a catalog described by info
// comes from: for a library of several sources, that of the source its
// namespace names, else of the first one with a commit.
func commitOf(info templates.SourceInfo, name string) string {
	if len(info.Members) == 0 {
		return info.Revision
	}
	if ns, _, ok := strings.Cut(name, templates.NamespaceSeparator); ok {
		for _, m := range info.Members {
			if m.Namespace == ns {
				return m.Revision
			}
		}
	}
	for _, m := range info.Members {
		if m.Revision != "" {
			return m.Revision
		}
	}
	return ""
}

// followers is the audience of label: the sessions and listen streams
// served from it (a 2025 session by what its opening request named, a
// listen stream by what its request names).
func (a *App) followers(name string) mcp.Audience {
	return func(ctx context.Context, listen *mcp.Request) bool {
		return a.servedLabel(ctx, listen) == name
	}
}

// attachLabels makes each label's library, as Labels opens it, announce
// its changes to the clients that follow it. It returns a function that
// detaches them all.
func (a *App) attachLabels(e *mcp.Engine) func() {
	def := a.labels[0]
	var mu sync.Mutex
	var detach []func()
	stop := a.opts.Labels.Opened(func(name string, lib *templates.Library) {
		if name == def {
			return // the app's own library, attached by Attach
		}
		d := a.attachLibrary(e, lib, a.followers(name), false)
		mu.Lock()
		detach = append(detach, d)
		mu.Unlock()
	})
	return func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		for _, d := range detach {
			d()
		}
	}
}

// resultServed is the served _meta (servedMeta) of a tool's or a list's
// result: nil without labels, or when the request's label cannot be
// served (the result then says so).
func (a *App) resultServed(ctx context.Context, r *mcp.Request) map[string]any {
	if a.opts.Labels == nil {
		return nil
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil
	}
	return servedMeta(v, "", nil)
}
