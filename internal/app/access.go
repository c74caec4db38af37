package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// What each member may see and do: the access policy (Options.Policy)
// names the sources a member reads and writes, the token's scopes whether
// they write at all. What a member may not read is left out of their view
// of the catalog (visible), so that every handler answers about it as
// about a name that does not exist.

// Names of a library that is not a Composite, as the access policy names
// its sources: the built-in examples, or the one folder or repository.
const (
	SourceExamples = "examples"
	SourceDefault  = "default"
)

// SourceNames are the names the access policy may give src's sources: a
// Composite's namespaces, else the one source's name.
func SourceNames(src templates.Source) []string {
	if c, ok := src.(*templates.Composite); ok {
		var out []string
		for _, m := range c.Members() {
			out = append(out, m.Namespace)
		}
		return out
	}
	return []string{singleName(src.Info())}
}

// singleName is the name of a catalog's one source (info has no members).
func singleName(info templates.SourceInfo) string {
	if info.Kind == "embedded" {
		return SourceExamples
	}
	return SourceDefault
}

// policy is the access policy in force, nil for none.
func (a *App) policy() *auth.Policy {
	if a.opts.Policy == nil {
		return nil
	}
	return a.opts.Policy()
}

// readable returns the sources ctx's caller may read; all is true when
// every source is (no policy).
func (a *App) readable(ctx context.Context) (sources []string, all bool) {
	p := a.policy()
	if p == nil {
		return nil, true
	}
	return p.Reads(auth.MemberOf(ctx)), false
}

// only is the part of cat the sources named may see: cat itself when
// they are all of its sources, else a catalog kept per (cat, sources), so
// that a member's lists cost what everyone's do and the caches keyed by
// catalog (the prompt list, the listed files) keep working.
func (a *App) only(cat *templates.Catalog, sources []string) *templates.Catalog {
	info := cat.Info()
	if len(info.Members) == 0 {
		if slices.Contains(sources, singleName(info)) {
			return cat
		}
		sources = nil
	} else if !slices.ContainsFunc(info.Members, func(m templates.SourceInfo) bool { return !slices.Contains(sources, m.Namespace) }) {
		return cat
	}
	return a.parts.get(partKey{cat, strings.Join(sources, "\x00")}, func() *templates.Catalog { return cat.Only(sources) })
}

// partKey names a part of a catalog: the catalog and the sorted sources
// kept, joined.
type partKey struct {
	cat     *templates.Catalog
	sources string
}

// maxKept bounds each cache of values per catalog. A server holds a few
// catalogs at once (the library's, a label's, the parts members see),
// and the sets of sources members read are few: a full cache is emptied
// and filled again.
const maxKept = 64

// kept holds one value per key, for the few catalogs served at once.
type kept[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns the value of k, built by build when there is none.
func (c *kept[K, V]) get(k K, build func() V) V {
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxKept {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	return v
}

// mayWrite says whether ctx's caller may save the template name (whose
// token grants prompts:write: CallTool checked): the policy must give the
// member a write rule for the source the name is saved to.
func (a *App) mayWrite(ctx context.Context, v view, name string) error {
	m := auth.MemberOf(ctx)
	p := a.policy()
	if p == nil {
		return nil
	}
	source := sourceOf(v.lib.Catalog(), name)
	if source != "" && p.Writes(m, source) {
		return nil
	}
	return &fault.Error{Code: fault.PermissionDenied, What: fmt.Sprintf("you may not save templates to the source %s", source),
		Why: "the server's access policy (--auth-policy) gives you no write rule for it",
		How: "ask the server's operator for a write rule that matches you and names " + source}
}

// hidesSave reports whether ctx's caller may not see the save tool: a
// member whose token lacks prompts:write.
func hidesSave(ctx context.Context) bool {
	m := auth.MemberOf(ctx)
	return m != nil && !m.Has(auth.ScopeWrite)
}

// RequiredScope is the scope a message needs beyond prompts:read, for
// the HTTP transports to challenge a token without it (403, the step-up
// challenge) before the message runs: prompts:write for a call of the
// save tool, when the server has it; "" otherwise.
func (a *App) RequiredScope(in *mcp.Inbound) string {
	if in.Method() != mcp.MethodToolsCall {
		return ""
	}
	if name, _ := in.Name(); name == saveToolName && a.byName[saveToolName] != nil {
		return auth.ScopeWrite
	}
	return ""
}

// touched lists the sources a change of cat touched, sorted, once each:
// the namespaces of the templates and flows it names, or the one source.
func touched(cat *templates.Catalog, ch templates.Changes) []string {
	info := cat.Info()
	if len(info.Members) == 0 {
		return []string{singleName(info)}
	}
	var out []string
	for _, names := range [][]string{ch.Added, ch.Changed, ch.Removed, ch.Flows.Added, ch.Flows.Changed, ch.Flows.Removed} {
		for _, n := range names {
			if ns, _, ok := strings.Cut(n, templates.NamespaceSeparator); ok {
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// audience picks the sessions and streams whose member may read one of
// sources; nil (everyone) without a policy.
func (a *App) audience(sources []string) mcp.Audience {
	p := a.policy()
	if p == nil {
		return nil
	}
	return func(ctx context.Context, _ *mcp.Request) bool {
		reads := p.Reads(auth.MemberOf(ctx))
		return slices.ContainsFunc(sources, func(s string) bool { return slices.Contains(reads, s) })
	}
}

// sourceOf is the source of a name or path of cat: its namespace, or the
// one source's name; "" for a bare name of several sources.
func sourceOf(cat *templates.Catalog, name string) string {
	if len(cat.Info().Members) == 0 {
		return singleName(cat.Info())
	}
	ns, _, _ := strings.Cut(name, templates.NamespaceSeparator)
	if ns == name {
		return ""
	}
	return ns
}

// PolicyChanged tells every session and stream of e that its lists may
// have changed: a new access policy may show a member more sources, or
// fewer.
func (a *App) PolicyChanged(e *mcp.Engine) {
	e.Notify(mcp.NotificationPromptsListChanged, nil)
	e.Notify(mcp.NotificationToolsListChanged, nil)
	e.Notify(mcp.NotificationResourcesChanged, nil)
}

// CatalogFor is the catalog ctx's caller may see, of the label a request
// with no label of its own is served: what /healthz details to them,
// decided where every handler's is (viewOf); the preview page reads
// through PageView, which takes a label. Without a policy, the whole catalog; under one,
// a caller who is no member sees nothing.
func (a *App) CatalogFor(ctx context.Context) *templates.Catalog {
	v, err := a.viewOf(ctx, nil)
	if err != nil {
		return templates.Build(nil, templates.BuildOptions{})
	}
	return v.cat
}
