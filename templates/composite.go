package templates

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// NamespaceSeparator joins a source's namespace and a template's name:
// "team/Code_Review". metadata.name cannot hold it, so a name with one is
// always namespaced.
const NamespaceSeparator = "/"

// Member is one source of a Composite with the namespace its templates
// are served under.
type Member struct {
	Namespace string
	Source    Source
}

// Conflict is a template (or flow) name that more than one source
// defines. Every one is served under its namespace; the bare name goes to
// the first.
type Conflict struct {
	Name string `json:"name"`
	// Namespaces define the name, in precedence order: the first serves
	// the bare name.
	Namespaces []string `json:"namespaces"`
	// Flow is set for a flow's name. Flows and templates are named apart
	// (a flow's prompt is flow:NAME), so a flow and a template of the same
	// name never conflict; the flag keeps the two kinds in one list, which
	// every report of conflicts already shows, without a template's
	// conflict changing shape.
	Flow bool `json:"flow,omitempty"`
}

// Error describes the conflict for logs and reports.
func (c Conflict) Error() string {
	return fmt.Sprintf("%s %q is defined by the sources %s: the bare name %q is %s/%s; name the others as NAMESPACE/%s",
		c.kind(), c.Name, strings.Join(c.Namespaces, ", "), c.Name, c.Namespaces[0], c.Name, c.Name)
}

func (c Conflict) kind() string {
	if c.Flow {
		return "flow"
	}
	return "template"
}

// Composite serves several sources as one: each template and each flow as
// NAMESPACE/NAME, and its bare NAME as well, from the first member (in the
// order given) that defines it. Same names in two members are reported as
// conflicts (Catalog.Conflicts), never silently hidden. A member's flow
// runs that member's templates, whatever the bare names resolve to.
type Composite struct {
	members []Member
	logger  *slog.Logger
	now     func() time.Time

	mu   sync.Mutex // guards last and serialises combined notifications
	last []*Catalog // each member's latest catalog, in member order
}

// ValidateNamespace checks a source's namespace: like a template name,
// letters, digits, '_' and '-', so NAMESPACE/NAME splits one way only.
func ValidateNamespace(ns string) error {
	if ns == "" {
		return errors.New("the namespace is empty")
	}
	if len(ns) > MaxNameLength/2 {
		return fmt.Errorf("the namespace is %d characters long; the maximum is %d", len(ns), MaxNameLength/2)
	}
	for _, r := range ns {
		if r >= 0x80 || (!isNameByte(byte(r)) && r != '-') {
			return fmt.Errorf("%q is not allowed in a namespace: use letters, digits, '_' and '-'", r)
		}
	}
	return nil
}

// NewComposite combines members, in precedence order. Namespaces must be
// valid and distinct; a nil logger means slog.Default().
func NewComposite(members []Member, logger *slog.Logger) (*Composite, error) {
	if len(members) == 0 {
		return nil, errors.New("a composite source needs at least one member")
	}
	seen := map[string]bool{}
	var errs []error
	for _, m := range members {
		if err := ValidateNamespace(m.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("source namespace %q: %w", m.Namespace, err))
		}
		if seen[m.Namespace] {
			errs = append(errs, fmt.Errorf("two sources are named %q: give each --source a different name=", m.Namespace))
		}
		seen[m.Namespace] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Composite{members: slices.Clone(members), logger: logger, now: time.Now, last: make([]*Catalog, len(members))}, nil
}

// Members returns the members, in precedence order.
func (c *Composite) Members() []Member { return slices.Clone(c.members) }

// Info lists the members; Location names their namespaces in order.
func (c *Composite) Info() SourceInfo {
	info := SourceInfo{Kind: "multi"}
	var names []string
	for _, m := range c.members {
		mi := m.Source.Info()
		mi.Namespace = m.Namespace
		info.Members = append(info.Members, mi)
		names = append(names, m.Namespace)
	}
	info.Location = strings.Join(names, ", ")
	return info
}

// FreshFor is the shortest of the members': the combined catalog is no
// fresher than its stalest part.
func (c *Composite) FreshFor() time.Duration {
	d := time.Duration(-1)
	for _, m := range c.members {
		if f := m.Source.FreshFor(); d < 0 || f < d {
			d = f
		}
	}
	return max(d, 0)
}

// Load loads every member at once. It fails when any member fails: a
// library served without one of its parts would answer with the wrong
// template for a bare name another member also defines.
func (c *Composite) Load(ctx context.Context) (*Catalog, error) {
	return c.loadAll(ctx, func(s Source) func(context.Context) (*Catalog, error) { return s.Load })
}

// Refresh refreshes every member from its origin (Refresher) or loads it.
// A member that fails keeps its last catalog, marked stale when it says
// so; the combined catalog is returned with the failures joined.
func (c *Composite) Refresh(ctx context.Context) (*Catalog, error) {
	return c.loadAll(ctx, func(s Source) func(context.Context) (*Catalog, error) {
		if r, ok := s.(Refresher); ok {
			return r.Refresh
		}
		return s.Load
	})
}

func (c *Composite) loadAll(ctx context.Context, how func(Source) func(context.Context) (*Catalog, error)) (*Catalog, error) {
	cats := make([]*Catalog, len(c.members))
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			cats[i], errs[i] = how(m.Source)(ctx)
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var failed []error
	for i, m := range c.members {
		// A watcher may have handed in a newer catalog while this load
		// ran: an older one must not replace it.
		if cats[i] != nil && (c.last[i] == nil || !cats[i].LoadedAt().Before(c.last[i].LoadedAt())) {
			c.last[i] = cats[i]
		}
		if errs[i] != nil {
			failed = append(failed, &MemberError{Namespace: m.Namespace, Err: errs[i]})
		}
	}
	if slices.Contains(c.last, nil) {
		return nil, errors.Join(failed...)
	}
	return c.combine(), errors.Join(failed...)
}

// MemberError says which source of a Composite an error came from,
// keeping the error (and its fault code) for errors.As.
type MemberError struct {
	Namespace string
	Err       error
}

func (e *MemberError) Error() string { return "source " + e.Namespace + ": " + e.Err.Error() }
func (e *MemberError) Unwrap() error { return e.Err }

// Watch runs every member's watcher and calls onChange with a new combined
// catalog whenever any member produces one. A member whose watcher fails
// is logged and left as it was; the others go on. Watch returns when ctx
// ends, with the members' failures joined.
func (c *Composite) Watch(ctx context.Context, onChange func(*Catalog)) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		w, ok := m.Source.(Watcher)
		if !ok {
			continue
		}
		wg.Go(func() {
			err := w.Watch(ctx, func(cat *Catalog) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.last[i] = cat
				if slices.Contains(c.last, nil) {
					return // not loaded yet: Load combines them
				}
				// Under mu, so notifications leave in the order the
				// combined catalogs were built.
				onChange(c.combine())
			})
			if err != nil && ctx.Err() == nil {
				c.logger.Warn("template source stopped watching; its templates are no longer updated",
					"source", m.Namespace, "error", err)
			}
			if err != nil {
				errs[i] = &MemberError{Namespace: m.Namespace, Err: err}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ReadResource reads NAMESPACE/PATH from that member: the combined
// catalog names the files templates list that way.
func (c *Composite) ReadResource(ctx context.Context, p string) ([]byte, string, error) {
	m, rest, err := c.resourceMember(p)
	if err != nil {
		return nil, "", err
	}
	return m.ReadResource(ctx, rest)
}

// CheckResource tells whether ReadResource would find NAMESPACE/PATH.
func (c *Composite) CheckResource(ctx context.Context, p string) error {
	m, rest, err := c.resourceMember(p)
	if err != nil {
		return err
	}
	return CheckResource(ctx, m, rest)
}

func (c *Composite) resourceMember(p string) (ResourceReader, string, error) {
	if m, rest, ok := c.member(p); ok && rest != "" {
		if rr, ok := m.Source.(ResourceReader); ok {
			return rr, rest, nil
		}
	}
	return nil, "", &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read %q", p),
		Why: "no source of this server serves that file",
		How: "name a file a template lists in its resources, as NAMESPACE/PATH"}
}

// member splits p into NAMESPACE/REST and finds the member it names.
func (c *Composite) member(p string) (Member, string, bool) {
	ns, rest, _ := strings.Cut(path.Clean(p), NamespaceSeparator)
	m, ok := c.named(ns)
	return m, rest, ok
}

// named finds the member whose namespace is ns.
func (c *Composite) named(ns string) (Member, bool) {
	i := slices.IndexFunc(c.members, func(m Member) bool { return m.Namespace == ns })
	if i < 0 {
		return Member{}, false
	}
	return c.members[i], true
}

// combine builds the combined catalog from c.last (all set); c.mu held.
func (c *Composite) combine() *Catalog {
	out := &Catalog{byName: map[string]*Entry{}, alias: map[string]*Entry{}, flowAlias: map[string]*FlowEntry{},
		info: c.Info(), loadedAt: c.now()}
	defined := map[string][]string{}      // bare name → namespaces, in order
	flowsDefined := map[string][]string{} // the same for flows
	for i, m := range c.members {
		cat := c.last[i]
		ns := m.Namespace
		for _, e := range cat.entries {
			bare := e.Template.Metadata.Name
			ne := namespaced(ns, e, cat)
			out.entries = append(out.entries, ne)
			out.byName[ne.Template.Metadata.Name] = ne
			if _, taken := out.alias[bare]; !taken {
				out.alias[bare] = ne
			}
			defined[bare] = append(defined[bare], ns)
		}
		for _, fe := range cat.Flows() {
			bare := fe.Flow.Name
			nf := namespacedFlow(ns, fe)
			out.flows = append(out.flows, nf)
			if _, taken := out.flowAlias[bare]; !taken {
				out.flowAlias[bare] = nf
			}
			flowsDefined[bare] = append(flowsDefined[bare], ns)
		}
		// A member's invalid flows are among its invalid files: they are
		// reported here with the rest.
		for _, inv := range cat.invalid {
			inv.Path = ns + NamespaceSeparator + inv.Path
			out.invalid = append(out.invalid, inv)
		}
		out.info.Members[i].Stale = cat.Stale()
		out.info.Members[i].Revision = cat.Info().Revision
	}
	out.stale = staleOf(out.info.Members)
	for name, nss := range defined {
		if len(nss) > 1 {
			out.conflicts = append(out.conflicts, Conflict{Name: name, Namespaces: nss})
		}
	}
	for name, nss := range flowsDefined {
		if len(nss) > 1 {
			out.conflicts = append(out.conflicts, Conflict{Name: name, Namespaces: nss, Flow: true})
		}
	}
	slices.SortFunc(out.conflicts, func(a, b Conflict) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), compareBool(a.Flow, b.Flow))
	})
	slices.SortFunc(out.entries, func(a, b *Entry) int { return strings.Compare(a.Template.Metadata.Name, b.Template.Metadata.Name) })
	slices.SortFunc(out.flows, func(a, b *FlowEntry) int { return strings.Compare(a.Flow.Name, b.Flow.Name) })
	slices.SortStableFunc(out.invalid, func(a, b Invalid) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// namespaced is e as the combined catalog serves it: named NS/NAME, its
// path NS/PATH, and its resources pointing into the same member, so a
// template never attaches another source's file or template.
func namespaced(ns string, e *Entry, member *Catalog) *Entry {
	t := *e.Template
	t.Metadata.Name = ns + NamespaceSeparator + e.Template.Metadata.Name
	if len(t.Resources) > 0 {
		t.Resources = make([]string, len(e.Template.Resources))
		for i, r := range e.Template.Resources {
			switch name, isTemplate := strings.CutPrefix(r, "template://"); {
			case isTemplate:
				if _, ok := member.Lookup(name); ok {
					r = "template://" + ns + NamespaceSeparator + name
				}
			case !strings.Contains(r, "://"):
				r = ns + NamespaceSeparator + path.Clean(r)
			}
			t.Resources[i] = r
		}
	}
	ne := *e
	ne.Template = &t
	ne.Path = ns + NamespaceSeparator + e.Path
	return &ne
}

// namespacedFlow is fe as the combined catalog serves it: named NS/NAME,
// its path NS/PATH, and each step's template NS/TEMPLATE, so the flow runs
// the templates of its own member even where another member serves the
// bare name. The member's Flow is shared by its readers, so it is copied,
// never changed; the digest stays the file's, so handles still tell
// versions apart.
func namespacedFlow(ns string, fe *FlowEntry) *FlowEntry {
	f := *fe.Flow
	f.Name = ns + NamespaceSeparator + fe.Flow.Name
	f.Steps = slices.Clone(fe.Flow.Steps)
	for i := range f.Steps {
		f.Steps[i].Template = ns + NamespaceSeparator + f.Steps[i].Template
	}
	return &FlowEntry{Flow: &f, Path: ns + NamespaceSeparator + fe.Path, Digest: fe.Digest}
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// BareName is name without its namespace ("Code_Review" for
// "team/Code_Review").
func BareName(name string) string {
	if i := strings.LastIndex(name, NamespaceSeparator); i >= 0 {
		return name[i+1:]
	}
	return name
}

// Only is the part of a Composite's catalog served from the members that
// namespaces name, as if the others were not configured: their templates,
// flows and invalid files, bare names resolving to the first of them (in
// precedence order) that defines one, the conflicts among them alone,
// their infos and their staleness. It is what a reader allowed those
// members alone may see. A catalog of a single source has no namespaces,
// so nothing of it is kept (the result is empty, with no source info).
// c is unchanged; the entries are shared.
func (c *Catalog) Only(namespaces []string) *Catalog {
	out := &Catalog{byName: map[string]*Entry{}}
	if c == nil || len(c.info.Members) == 0 {
		return out
	}
	// rank is each kept member's place in precedence order.
	rank := map[string]int{}
	out.info = c.info
	out.info.Members = nil
	var names []string
	for _, m := range c.info.Members {
		if slices.Contains(namespaces, m.Namespace) {
			rank[m.Namespace] = len(rank)
			out.info.Members = append(out.info.Members, m)
			names = append(names, m.Namespace)
		}
	}
	out.info.Location = strings.Join(names, ", ")
	out.alias, out.flowAlias = map[string]*Entry{}, map[string]*FlowEntry{}
	out.loadedAt, out.maxFileSize = c.loadedAt, c.maxFileSize
	kept := func(name string) (int, bool) {
		ns, _, _ := strings.Cut(name, NamespaceSeparator)
		r, ok := rank[ns]
		return r, ok
	}
	aliasRank := map[string]int{}
	for _, e := range c.entries {
		r, ok := kept(e.Template.Metadata.Name)
		if !ok {
			continue
		}
		out.entries = append(out.entries, e)
		out.byName[e.Template.Metadata.Name] = e
		bare := BareName(e.Template.Metadata.Name)
		if prev, taken := aliasRank[bare]; !taken || r < prev {
			out.alias[bare], aliasRank[bare] = e, r
		}
	}
	flowRank := map[string]int{}
	for _, fe := range c.flows {
		r, ok := kept(fe.Flow.Name)
		if !ok {
			continue
		}
		out.flows = append(out.flows, fe)
		bare := BareName(fe.Flow.Name)
		if prev, taken := flowRank[bare]; !taken || r < prev {
			out.flowAlias[bare], flowRank[bare] = fe, r
		}
	}
	for _, inv := range c.invalid {
		if _, ok := kept(inv.Path); ok {
			out.invalid = append(out.invalid, inv)
		}
	}
	for _, cf := range c.conflicts {
		cf.Namespaces = slices.DeleteFunc(slices.Clone(cf.Namespaces), func(ns string) bool { _, ok := rank[ns]; return !ok })
		if len(cf.Namespaces) > 1 {
			out.conflicts = append(out.conflicts, cf)
		}
	}
	out.stale = staleOf(out.info.Members)
	return out
}

// staleOf is the staleness of a combined catalog of members, as combine
// reports it: the first stale member's, since the earliest, its reason
// naming the stale members; nil when none is stale.
func staleOf(members []SourceInfo) *Staleness {
	var out *Staleness
	var stale []string
	for _, m := range members {
		if m.Stale == nil {
			continue
		}
		stale = append(stale, m.Namespace)
		if out == nil {
			cp := *m.Stale
			out = &cp
		} else if m.Stale.Since.Before(out.Since) {
			out.Since = m.Stale.Since
		}
	}
	switch {
	case len(stale) > 1:
		out.Reason = fmt.Sprintf("%d sources are stale (%s); first: %s", len(stale), strings.Join(stale, ", "), out.Reason)
	case len(stale) == 1:
		out.Reason = "source " + stale[0] + ": " + out.Reason
	}
	return out
}
