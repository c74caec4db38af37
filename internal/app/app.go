// Package app is flowyprompt itself on top of the protocol core: it turns
// the template library into MCP prompts and tools, and tells every live
// session when the library changes.
package app

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Options configure the app.
type Options struct {
	Library *templates.Library
	// Version is the server version reported at initialize.
	Version string
	// Writer saves templates; nil or AllowWrite false hides the save tool.
	Writer     TemplateWriter
	AllowWrite bool
	// WritePatterns limit the names the save tool may write (path.Match
	// patterns; empty means every valid name).
	WritePatterns []string
	// MaxFileSize is the template size limit (0: templates.DefaultMaxFileSize).
	MaxFileSize int
	Logger      *slog.Logger
	// State seals the requestState of input-required results; replicas
	// that share its keys accept each other's. nil: a key of this process.
	State *seal.Sealer
	// PrivateCache marks cacheable results private: the library is served
	// only to callers with a token, so shared caches must not keep it.
	PrivateCache bool
	// Policy, when set, returns the access policy in force (nil: none),
	// which says what each member (auth.MemberOf) may read and write; it
	// is asked on every request, so a reloaded policy applies at once.
	Policy func() *auth.Policy
	// Labels, when set, are the labels the server serves: Library is the
	// default label's library, and a request naming another label is
	// served that label's (see Labels). nil: no labels.
	Labels Labels
	// Label is the label served to a request that names none (--label;
	// "": the default label).
	Label string
}

// App serves a template library over MCP.
type App struct {
	opts   Options
	lib    *templates.Library
	log    *slog.Logger
	tools  []*tool
	byName map[string]*tool
	// labels are Options.Labels' names, the default first (nil without
	// labels): read once, as they never change, rather than copied on
	// every request.
	labels []string

	used memory // the values each session used, for completion

	// parts are the parts of catalogs members see (only); prompts the
	// prompt list of each catalog served.
	parts   kept[partKey, *templates.Catalog]
	prompts kept[*templates.Catalog, []mcp.Prompt]

	mu sync.Mutex
	// missingFor is the catalog whose unreadable resources missing holds
	// ("template\x00resource"): each is logged once per catalog, not on
	// every prompt that lists it.
	missingFor *templates.Catalog
	missing    map[string]bool
	// listed holds the files each catalog's templates list (listedFiles).
	listed kept[*templates.Catalog, []string]
}

// New builds the app.
func New(opts Options) *App {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.State == nil {
		opts.State = seal.Random()
	}
	a := &App{opts: opts, lib: opts.Library, log: opts.Logger}
	if opts.Labels != nil {
		a.labels = opts.Labels.Names()
	}
	a.tools = append(a.readTools(), a.flowTools()...)
	if opts.AllowWrite && opts.Writer != nil {
		a.tools = append(a.tools, a.saveTool())
	}
	a.byName = make(map[string]*tool, len(a.tools))
	for _, t := range a.tools {
		a.byName[t.def.Name] = t
	}
	return a
}

// Server returns the mcp.Server description of the app.
func (a *App) Server() *mcp.Server {
	return &mcp.Server{
		Info: mcp.Implementation{Name: "flowyprompt", Title: "flowyprompt prompt library", Version: a.opts.Version},
		Instructions: "flowyprompt serves a team's prompt templates. Use flowyprompt_search_templates or " +
			"flowyprompt_list_templates to find one, then flowyprompt_render_template with its arguments to get the prompt text.",
		Prompts:         a,
		Tools:           a,
		Resources:       a,
		Completion:      a,
		Greeting:        a.greeting,
		OnSessionClosed: a.used.forget,
		Cache:           a.cacheHint,
		ListMeta:        a.resultServed,
	}
}

// discoverFreshness is how long server/discover may be cached: what it
// says (capabilities, instructions, versions) changes only with the binary
// or its flags.
const discoverFreshness = time.Hour

// cacheHint is the cache hint of a cacheable result: the lists and reads
// show the catalog, which is fresh as long as its source says.
func (a *App) cacheHint(method string) mcp.CacheHint {
	h := mcp.CacheHint{TTL: discoverFreshness, Scope: mcp.CachePublic}
	if method != mcp.MethodServerDiscover {
		h.TTL = a.lib.Source().FreshFor()
	}
	// Under an access policy, what each caller sees is theirs; with
	// labels, what a list holds depends on the label a request names, in
	// a header a shared cache need not key on: only the client's own
	// cache may keep it.
	if a.opts.PrivateCache || a.opts.Policy != nil || a.opts.Labels != nil {
		h.Scope = mcp.CachePrivate
	}
	return h
}

// greeting is what a new client is told of the warnings sent so far to
// the others: templates left out and stale data. Without it, the warnings
// of the first load, which happens before any client connects, would
// reach no one.
func (a *App) greeting(ctx context.Context) []mcp.LogMessage {
	var out []mcp.LogMessage
	for _, w := range warnings(a.visible(ctx, a.lib).cat, nil) {
		out = append(out, mcp.LogMessage{Level: mcp.LevelWarning, Logger: "flowyprompt", Data: w})
	}
	return out
}

// Attach makes library changes reach the sessions of e that are served
// from it: the prompt and tool lists are announced as changed. With
// labels, each label's library announces its changes to the clients
// following that label alone. It returns a function that detaches.
func (a *App) Attach(e *mcp.Engine) func() {
	if a.opts.Labels == nil {
		return a.attachLibrary(e, a.lib, nil, true)
	}
	detach := a.attachLibrary(e, a.lib, a.followers(a.labels[0]), true)
	detachLabels := a.attachLabels(e)
	return func() { detachLabels(); detach() }
}

// attachLibrary announces lib's changes to the clients follow picks (nil:
// everyone; with labels, the label's followers) who may read what
// changed, and its new warnings to every client when warn is set: a log
// message has no label, so a label's warnings stay in the server's log.
func (a *App) attachLibrary(e *mcp.Engine, lib *templates.Library, follow mcp.Audience, warn bool) func() {
	return lib.OnChange(func(old, cur *templates.Catalog, ch templates.Changes) {
		if warn {
			a.tellClients(e, old, cur)
		}
		if ch.Empty() {
			return
		}
		// Under an access policy a change is told only to the members who
		// may read a source it touched: to the others nothing changed.
		to := allOf(follow, a.audience(touched(cur, ch)))
		// A flow is a prompt (flow:NAME) but no resource: a change to
		// flows alone announces the lists below and no template:// URI,
		// as ch's template lists are empty then.
		e.NotifyWhere(mcp.NotificationPromptsListChanged, nil, to)
		e.NotifyWhere(mcp.NotificationToolsListChanged, nil, to)
		// resources/list holds the templates and the files they list: a
		// changed template may name other files without being added or
		// removed.
		if len(ch.Added) > 0 || len(ch.Removed) > 0 || old == nil || !slices.Equal(listedFiles(old), listedFiles(cur)) {
			e.NotifyWhere(mcp.NotificationResourcesChanged, nil, to)
		}
		for _, name := range append(append([]string{}, ch.Changed...), ch.Removed...) {
			e.ResourceUpdatedWhere(TemplateURIPrefix+name, allOf(follow, a.audience([]string{sourceOf(cur, name)})))
		}
	})
}

// allOf is the audience of those both x and y pick (nil: everyone).
func allOf(x, y mcp.Audience) mcp.Audience {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return func(ctx context.Context, listen *mcp.Request) bool { return x(ctx, listen) && y(ctx, listen) }
}

// title turns Brand_Positioning_Strategy into "Brand Positioning Strategy".
func title(name string) string {
	// A prompt menu shows titles: the template first, its library after.
	if ns, bare, ok := strings.Cut(name, templates.NamespaceSeparator); ok {
		return title(bare) + " (" + ns + ")"
	}
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' }), " ")
}

// tellClients sends warnings that matter to the people using the library
// (templates left out, data gone stale) to clients as log messages, once
// per new occurrence.
func (a *App) tellClients(e *mcp.Engine, old, cur *templates.Catalog) {
	for _, w := range warnings(cur, old) {
		// Under an access policy, a warning about a file reaches the
		// members who may read its source; staleness, those who may
		// read a stale one.
		p, isFile := w["path"].(string)
		switch {
		case isFile:
			e.LogWhere(mcp.LevelWarning, "flowyprompt", w, a.audience([]string{sourceOf(cur, p)}))
		case a.policy() != nil && len(cur.Info().Members) > 0:
			// The combined reason names every stale source: each member is
			// told of those they read, one by one.
			for _, m := range cur.Info().Members {
				if s := m.Stale; s != nil {
					e.LogWhere(mcp.LevelWarning, "flowyprompt", map[string]any{
						"message": "serving templates that may be stale: source " + m.Namespace + ": " + s.Reason,
						"code":    s.Code, "since": s.Since}, a.audience([]string{m.Namespace}))
				}
			}
		default:
			e.LogWhere(mcp.LevelWarning, "flowyprompt", w, a.audience([]string{singleName(cur.Info())}))
		}
	}
}

// warnings lists cur's warnings that old did not already have (all of
// them when old is nil), as log message data.
func warnings(cur, old *templates.Catalog) []map[string]any {
	known := map[string]string{}
	if old != nil {
		for _, inv := range old.Invalid() {
			known[inv.Path] = inv.Err.Error()
		}
	}
	var out []map[string]any
	for _, inv := range cur.Invalid() {
		if msg := inv.Err.Error(); known[inv.Path] != msg {
			out = append(out, map[string]any{"message": invalidNote(inv) + ": " + msg, "path": inv.Path})
		}
	}
	if s := cur.Stale(); s != nil && (old == nil || old.Stale() == nil) {
		out = append(out, map[string]any{"message": "serving templates that may be stale: " + s.Reason,
			"code": s.Code, "since": s.Since})
	}
	return out
}

// invalidNote says what became of an invalid file: left out, or (a file
// being rewritten, say) still served in its last valid version.
func invalidNote(inv templates.Invalid) string {
	if inv.Kept {
		return "template file invalid, its last valid version still served"
	}
	return "template left out"
}
