package templates

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
)

// File is one candidate template file handed to Build.
type File struct {
	// Path is the file's path within its source ("templates/a.json"),
	// slash-separated.
	Path string
	Data []byte
	// Err, when set, reports the file invalid without parsing it: a source
	// uses it for files it refused to read (too large by the tree's size,
	// unreadable).
	Err error
}

// BuildOptions tune Build.
type BuildOptions struct {
	// MaxFileSize is passed to Parse; 0 means DefaultMaxFileSize.
	MaxFileSize int
	// Info says where the files came from.
	Info SourceInfo
	// Logger is the logger of a source built with these options
	// (folder.New). Build itself logs nothing: a problem (a warning, an
	// invalid file) is logged by the Library that serves the catalog, once
	// when it appears and once when it is resolved (LogProblems).
	Logger *slog.Logger
	// Now stamps LoadedAt; nil means time.Now. Tests inject a clock.
	Now func() time.Time
}

// Entry is one valid template with where it came from.
type Entry struct {
	Template *Template
	Path     string
	// Raw is the file exactly as read; shared, do not modify.
	Raw []byte
	// Digest is the hex SHA-256 of Raw: it tells changed templates apart
	// without comparing contents.
	Digest string
	// PartialsDigest is the hex SHA-256 of the partials the template
	// includes, their names and contents, or "" when it includes none:
	// a change to a partial changes what the template renders, not its
	// file.
	PartialsDigest string
	Warnings       []Warning
	// parsed is Template before its partials were linked in, which a
	// Rebuild links again when it reuses the file.
	parsed *Template
}

// Invalid is a file left out of the catalog, with the reason.
type Invalid struct {
	Path string
	Err  error
	// Kept is set when the file's last valid version is still being served
	// (the folder source keeps it while an editor is half-way through a
	// save).
	Kept bool
}

// Catalog is an immutable set of templates: build a new one to change it.
// It is safe for any number of concurrent readers.
type Catalog struct {
	entries []*Entry // sorted by name
	byName  map[string]*Entry
	// alias resolves bare names in a Composite's catalog: NAME to the
	// first source's NAMESPACE/NAME. nil for a single source.
	alias     map[string]*Entry
	conflicts []Conflict   // sorted by name
	invalid   []Invalid    // sorted by path
	flows     []*FlowEntry // sorted by name
	// partials are the library's valid partials, sorted by path, for
	// export: the templates have them linked in already.
	partials []Partial
	// flowAlias resolves bare flow names in a Composite's catalog, as
	// alias does for templates. nil for a single source.
	flowAlias map[string]*FlowEntry
	info      SourceInfo
	loadedAt  time.Time
	stale     *Staleness
	// maxFileSize is the limit the templates were parsed with (Rebuild
	// reuses them only under the same one).
	maxFileSize int
}

// Build parses files into a catalog. It never fails: invalid files are left
// out and listed by Invalid, and never hide the valid ones. Only library
// files (IsLibraryFile) are considered, and dot-files (editor droppings) are
// skipped; a path that could escape its folder is refused. When two files
// declare the same metadata.name, the first by path wins and the other is
// reported invalid. The partials (partials/NAME.md, dotprompt's
// _NAME.prompt) are read first and linked into the templates that include
// them: a template whose partials are missing, in a cycle or nested too
// deep is invalid.
func Build(files []File, opts BuildOptions) *Catalog {
	return build(nil, files, opts)
}

// Rebuild is Build for a source that built prev from an earlier state of
// the same files: a file whose path and bytes are those of one of prev's
// templates is not parsed again, its entry is shared with prev (entries
// are immutable). The result is the catalog Build would return; a
// rebuild after a change to one file parses that file alone, and holds
// the others once however many catalogs share them.
//
// prev must have been built (by Build or Rebuild) from the same source;
// nil is Build. Its entries are reused only under the same MaxFileSize.
func Rebuild(prev *Catalog, files []File, opts BuildOptions) *Catalog {
	return build(prev, files, opts)
}

func build(prev *Catalog, files []File, opts BuildOptions) *Catalog {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	maxSize := opts.MaxFileSize
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	c := &Catalog{byName: map[string]*Entry{}, info: opts.Info, loadedAt: now(), maxFileSize: maxSize}
	var reusable map[string]*Entry
	if prev != nil && prev.maxFileSize == maxSize {
		reusable = make(map[string]*Entry, len(prev.entries))
		for _, e := range prev.entries {
			reusable[e.Path] = e
		}
	}

	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })

	partials := c.buildPartials(sorted, maxSize)
	var flowFiles []File
	for _, f := range sorted {
		if !IsLibraryFile(f.Path) {
			continue
		}
		if _, ok := PartialName(f.Path); ok || isDotpromptPartial(f.Path) {
			// A piece templates include, not a template.
			continue
		}
		format, _ := FormatOf(f.Path)
		if IsFlowPath(f.Path) && format == FormatJSON {
			// Flows are checked against the templates, so they wait until
			// every template is in.
			flowFiles = append(flowFiles, f)
			continue
		}
		if !c.readable(f) {
			continue
		}
		e, ok := reusable[f.Path]
		fresh := !ok || !bytes.Equal(e.Raw, f.Data)
		if fresh {
			t, warnings, err := Parse(f.Data, ParseOptions{MaxFileSize: opts.MaxFileSize, FileName: f.Path})
			if err != nil {
				c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: err})
				continue
			}
			sum := sha256.Sum256(f.Data)
			e = &Entry{Template: t, Path: f.Path, Raw: f.Data, Digest: hex.EncodeToString(sum[:]), Warnings: warnings, parsed: t}
		}
		// Linked again on every build, as its partials may have changed;
		// an entry whose partials did not is shared as it is.
		linked, digest, problems := partials.link(e.parsed)
		if problems != nil {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: invalid(f.Path, problems, nil)})
			continue
		}
		switch {
		case fresh:
			e.Template, e.PartialsDigest = linked, digest
		case digest != e.PartialsDigest:
			cp := *e
			cp.Template, cp.PartialsDigest = linked, digest
			e = &cp
		}
		t := e.Template
		if first, dup := c.byName[t.Metadata.Name]; dup {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: &fault.Error{
				Code: fault.InvalidTemplate,
				What: fmt.Sprintf("template file %s is invalid", f.Path),
				Why:  fmt.Sprintf("duplicate name: %s already defines template %q", first.Path, t.Metadata.Name),
				How:  "give one of the two files a different metadata.name, or delete one",
				Details: map[string]any{
					"file":      f.Path,
					"name":      t.Metadata.Name,
					"firstPath": first.Path,
					"problems":  []Problem{{Pointer: "/metadata/name", Message: fmt.Sprintf("duplicate name: %s already defines %q", first.Path, t.Metadata.Name)}},
				},
			}})
			continue
		}
		c.byName[t.Metadata.Name] = e
		c.entries = append(c.entries, e)
	}
	slices.SortFunc(c.entries, func(a, b *Entry) int { return strings.Compare(a.Template.Metadata.Name, b.Template.Metadata.Name) })
	if len(flowFiles) > 0 {
		c.buildFlows(flowFiles, opts.MaxFileSize)
		slices.SortStableFunc(c.invalid, func(a, b Invalid) int { return strings.Compare(a.Path, b.Path) })
	}
	return c
}

// buildPartials compiles the partial files among sorted (by path): a
// partial that does not compile, or a second one of the same name, joins
// Invalid, and so does one in a cycle of partials.
func (c *Catalog) buildPartials(sorted []File, maxSize int) *partialSet {
	byName := map[string]*partial{}
	for _, f := range sorted {
		name, ok := PartialName(f.Path)
		if !ok || !IsLibraryFile(f.Path) || !c.readable(f) {
			continue
		}
		if first, dup := byName[name]; dup {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: invalidPartialFile(f.Path,
				fmt.Sprintf("duplicate partial: %s already defines partial %q", first.path, name),
				"rename one of the two files, or delete one")})
			continue
		}
		p := compilePartial(f, name, maxSize)
		byName[name] = p
		if p.err != nil {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: p.err})
		} else {
			c.partials = append(c.partials, Partial{Name: name, Path: f.Path, Text: partialBody(f.Path, f.Data)})
		}
	}
	ps := newPartialSet(byName)
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if cyc, p := ps.cycle[name], byName[name]; p.err == nil && cyc != nil && slices.Contains(cyc[:len(cyc)-1], name) {
			c.invalid = append(c.invalid, Invalid{Path: p.path, Err: invalidPartialFile(p.path,
				fmt.Sprintf("partials include each other in a cycle (%s)", strings.Join(ps.cycle[name], " → ")),
				"remove one of those inclusions")})
		}
	}
	if len(byName) > 0 {
		slices.SortStableFunc(c.invalid, func(a, b Invalid) int { return strings.Compare(a.Path, b.Path) })
	}
	return ps
}

func invalidPartialFile(file, why, how string) error {
	return &fault.Error{
		Code:    fault.InvalidTemplate,
		What:    fmt.Sprintf("partial file %s is invalid", file),
		Why:     why,
		How:     how,
		Details: map[string]any{"file": file, "problems": []Problem{{Message: why}}},
	}
}

// readable reports whether f can be parsed: its path is one the catalog
// serves and it was read. A file that cannot joins Invalid.
func (c *Catalog) readable(f File) bool {
	err := checkPath(f.Path)
	if err == nil {
		err = f.Err
	}
	if err != nil {
		c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: err})
	}
	return err == nil
}

// buildFlows parses the flow files against the catalog's templates; an
// invalid flow, or a second flow of the same name, joins Invalid.
func (c *Catalog) buildFlows(files []File, maxSize int) {
	byName := map[string]*FlowEntry{}
	for _, f := range files {
		if !c.readable(f) {
			continue
		}
		fl, err := ParseFlow(f.Data, f.Path, maxSize, c.Lookup)
		if err != nil {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: err})
			continue
		}
		if first, dup := byName[fl.Name]; dup {
			c.invalid = append(c.invalid, Invalid{Path: f.Path, Err: invalidFlow(f.Path,
				[]Problem{{Pointer: "/name", Message: fmt.Sprintf("duplicate name: %s already defines flow %q", first.Path, fl.Name)}}, nil)})
			continue
		}
		sum := sha256.Sum256(f.Data)
		e := &FlowEntry{Flow: fl, Path: f.Path, Digest: hex.EncodeToString(sum[:])}
		byName[fl.Name] = e
		c.flows = append(c.flows, e)
	}
	slices.SortFunc(c.flows, func(a, b *FlowEntry) int { return strings.Compare(a.Flow.Name, b.Flow.Name) })
}

// Flows lists the valid flows, sorted by name. A Composite's catalog lists
// each member's as NAMESPACE/NAME (the bare names are found by LookupFlow).
func (c *Catalog) Flows() []*FlowEntry {
	if c == nil {
		return nil
	}
	return c.flows
}

// LookupFlow finds a flow by name. In a Composite's catalog a bare NAME
// finds the first source's NAMESPACE/NAME, by the sources' order, as
// Lookup does for templates.
func (c *Catalog) LookupFlow(name string) (*FlowEntry, bool) {
	if c == nil {
		return nil, false
	}
	if i, ok := slices.BinarySearchFunc(c.flows, name, func(e *FlowEntry, name string) int {
		return strings.Compare(e.Flow.Name, name)
	}); ok {
		return c.flows[i], true
	}
	e, ok := c.flowAlias[name]
	return e, ok
}

// LogProblems logs what changed in the problems cur reports against old
// (nil or empty for the first catalog): a Warn record for each template
// warning and each invalid file that appeared, an Info record for each that
// was resolved, and nothing for those that stay. A file that turned invalid
// while its last valid version is kept (Invalid.Kept) is logged as that,
// once, rather than as left out.
func LogProblems(logger *slog.Logger, old, cur *Catalog) {
	type warnKey struct{ path, template, variable, kind, message string }
	type invKey struct {
		path, err string
		kept      bool
	}
	warnings := func(c *Catalog) map[warnKey]bool {
		m := map[warnKey]bool{}
		for _, e := range c.Templates() {
			for _, w := range e.Warnings {
				m[warnKey{e.Path, w.Template, w.Variable, w.Kind, w.Message}] = true
			}
		}
		return m
	}
	invalid := func(c *Catalog) (map[invKey]bool, map[string]bool) {
		m, paths := map[invKey]bool{}, map[string]bool{}
		for _, inv := range c.Invalid() {
			m[invKey{inv.Path, inv.Err.Error(), inv.Kept}] = true
			paths[inv.Path] = true
		}
		return m, paths
	}
	oldW, curW := warnings(old), warnings(cur)
	oldI, _ := invalid(old)
	_, curInvalidPaths := invalid(cur)
	servedAt := map[string]*Entry{}
	for _, e := range cur.Templates() {
		servedAt[e.Path] = e
	}

	for _, inv := range old.Invalid() {
		if curInvalidPaths[inv.Path] {
			continue // still invalid; a new reason is logged below
		}
		if e, ok := servedAt[inv.Path]; ok {
			logger.Info("template file is valid again", "path", inv.Path, "template", e.Template.Metadata.Name)
		} else {
			logger.Info("invalid template file is gone", "path", inv.Path)
		}
	}
	for _, e := range old.Templates() {
		for _, w := range e.Warnings {
			if !curW[warnKey{e.Path, w.Template, w.Variable, w.Kind, w.Message}] {
				logger.Info("template warning resolved", "template", w.Template, "variable", w.Variable, "kind", w.Kind, "path", e.Path)
			}
		}
	}
	for _, e := range cur.Templates() {
		for _, w := range e.Warnings {
			if !oldW[warnKey{e.Path, w.Template, w.Variable, w.Kind, w.Message}] {
				logger.Warn("template warning", "template", w.Template, "variable", w.Variable, "kind", w.Kind, "path", e.Path, "detail", w.Message)
			}
		}
	}
	// A flow and a template may share a name without conflicting: the
	// kind is part of the key.
	type conflictKey struct {
		name string
		flow bool
	}
	oldC, curC := map[conflictKey]string{}, map[conflictKey]bool{}
	for _, c := range old.Conflicts() {
		oldC[conflictKey{c.Name, c.Flow}] = c.Error()
	}
	for _, c := range cur.Conflicts() {
		curC[conflictKey{c.Name, c.Flow}] = true
	}
	for _, c := range old.Conflicts() {
		if !curC[conflictKey{c.Name, c.Flow}] {
			logger.Info(c.kind()+" name conflict resolved", c.kind(), c.Name)
		}
	}
	for _, c := range cur.Conflicts() {
		if oldC[conflictKey{c.Name, c.Flow}] != c.Error() {
			logger.Warn(c.kind()+" name conflict", c.kind(), c.Name, "sources", c.Namespaces, "detail", c.Error())
		}
	}
	for _, inv := range cur.Invalid() {
		if oldI[invKey{inv.Path, inv.Err.Error(), inv.Kept}] {
			continue
		}
		if e, ok := servedAt[inv.Path]; ok && inv.Kept {
			logger.Warn("template file is invalid; serving its last valid version",
				"path", inv.Path, "template", e.Template.Metadata.Name, "code", fault.CodeOf(inv.Err), "error", inv.Err)
			continue
		}
		logger.Warn("invalid template left out", "path", inv.Path, "code", fault.CodeOf(inv.Err), "error", inv.Err)
	}
}

// checkPath refuses paths that could name something outside the source's
// folder or that are not plain file names.
func checkPath(p string) error {
	bad := func(why string) error {
		return &fault.Error{
			Code:    fault.InvalidTemplate,
			What:    fmt.Sprintf("template file %q is refused", p),
			Why:     why,
			How:     "rename the file to NAME.json using letters, digits, '_', '-' and '.'",
			Details: map[string]any{"file": p},
		}
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return bad("the path is absolute or contains a backslash")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return bad("the path has an empty, '.' or '..' element")
		}
	}
	for _, r := range path.Base(p) {
		if r == utf8.RuneError || unicode.IsControl(r) || r == ':' {
			return bad("the file name contains a control character, ':' or invalid UTF-8")
		}
	}
	return nil
}

// Templates returns every valid template, sorted by name; never nil.
func (c *Catalog) Templates() []*Entry {
	if c == nil || len(c.entries) == 0 {
		return []*Entry{}
	}
	return slices.Clone(c.entries)
}

// Lookup returns the template named name (case-sensitive, as clients send
// it). In a Composite's catalog a bare NAME finds the first source's
// NAMESPACE/NAME, by the sources' order.
func (c *Catalog) Lookup(name string) (*Entry, bool) {
	if c == nil {
		return nil, false
	}
	if e, ok := c.byName[name]; ok {
		return e, ok
	}
	e, ok := c.alias[name]
	return e, ok
}

// Conflicts lists the names that more than one source of a Composite
// defines, sorted by name; never nil.
func (c *Catalog) Conflicts() []Conflict {
	if c == nil || len(c.conflicts) == 0 {
		return []Conflict{}
	}
	return slices.Clone(c.conflicts)
}

// Partial is one partial of a library, as a template includes it.
type Partial struct {
	Name string // what {{> NAME}} names
	Path string // partials/NAME.md or _NAME.prompt, within its source
	Text string // what it puts in place (a _NAME.prompt's body)
}

// Partials returns the library's valid partials, sorted by path, for
// writing the library out again; the slice is shared: do not modify it. A
// Composite's catalog has none of its own.
func (c *Catalog) Partials() []Partial { return c.partials }

// Invalid returns the files left out, sorted by path; never nil.
func (c *Catalog) Invalid() []Invalid {
	if c == nil || len(c.invalid) == 0 {
		return []Invalid{}
	}
	return slices.Clone(c.invalid)
}

// Len returns the number of valid templates.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Info says where the catalog came from.
func (c *Catalog) Info() SourceInfo {
	if c == nil {
		return SourceInfo{}
	}
	return c.info
}

// LoadedAt is when the catalog was built.
func (c *Catalog) LoadedAt() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.loadedAt
}

// Stale is non-nil when the catalog is served although refreshing it failed.
func (c *Catalog) Stale() *Staleness {
	if c == nil {
		return nil
	}
	return c.stale
}

// WithStale returns a copy of c marked stale (or fresh again, with nil);
// c itself is unchanged, as readers may hold it.
func (c *Catalog) WithStale(s *Staleness) *Catalog {
	cp := *c
	cp.stale = s
	return &cp
}

// WithInvalid returns a copy of c that also reports extra invalid files;
// c itself is unchanged, as readers may hold it. A source uses it to report
// files it serves an earlier version of (Invalid.Kept): the files it built
// c from are not the ones on disk.
func (c *Catalog) WithInvalid(extra []Invalid) *Catalog {
	cp := *c
	cp.invalid = append(slices.Clone(c.invalid), extra...)
	slices.SortStableFunc(cp.invalid, func(a, b Invalid) int { return strings.Compare(a.Path, b.Path) })
	return &cp
}

// Suggest returns up to n template names close to name, best first, for
// "did you mean": a case-insensitive match, then names equal once '_' and
// '-' are ignored, then prefix and substring matches, then names within a
// small edit distance.
func (c *Catalog) Suggest(name string, n int) []string {
	if c == nil || n <= 0 || strings.TrimSpace(name) == "" {
		return []string{}
	}
	type scored struct {
		name  string
		score int
	}
	q, qn := strings.ToLower(name), normalizeName(name)
	var found []scored
	for _, e := range c.entries {
		n := e.Template.Metadata.Name
		if n == name {
			continue
		}
		// A namespaced name is matched by its bare part: "Code_Reviw"
		// should find "team/Code_Review".
		l, ln := strings.ToLower(n), normalizeName(n)
		if b := BareName(n); b != n && !strings.Contains(name, NamespaceSeparator) {
			l, ln = strings.ToLower(b), normalizeName(b)
		}
		score := -1
		switch {
		case l == q:
			score = 0
		case ln == qn && qn != "":
			score = 1
		case len(qn) >= 3 && strings.HasPrefix(ln, qn):
			score = 2
		case len(qn) >= 3 && strings.Contains(ln, qn):
			score = 3
		default:
			// Scale the allowed distance with the name so "a" does not
			// match every two-letter name.
			limit := min(3, max(1, utf8.RuneCountInString(q)/3))
			if d := suggest.Distance(q, l, limit+1); d <= limit {
				score = 4 + d
			}
		}
		if score >= 0 {
			found = append(found, scored{n, score})
		}
	}
	slices.SortFunc(found, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.name, b.name))
	})
	out := make([]string, 0, min(n, len(found)))
	for _, f := range found[:min(n, len(found))] {
		out = append(out, f.name)
	}
	return out
}

// normalizeName lowercases and drops separators, so "brand positioning"
// meets "Brand_Positioning".
func normalizeName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Changes lists template names that differ between two catalogs, and
// apart from them the flow names that do.
type Changes struct {
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Removed []string `json:"removed"`
	// Flows are kept out of Added, Changed and Removed: those name
	// templates, which a listener maps to template:// resources and counts
	// as templates. Zero when no flow changed, so a catalog without flows
	// reports (and marshals) as it did before flows existed.
	Flows FlowChanges `json:"flows,omitzero"`
}

// FlowChanges lists flow names that differ between two catalogs. When any
// flow changed, all three lists are non-nil, so they marshal as [].
type FlowChanges struct {
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Removed []string `json:"removed"`
}

// Empty reports whether no flow changed.
func (fc FlowChanges) Empty() bool {
	return len(fc.Added) == 0 && len(fc.Changed) == 0 && len(fc.Removed) == 0
}

// Empty reports whether nothing changed, templates or flows: a flow is
// listed as a prompt too, so its change is one clients must hear of.
func (ch Changes) Empty() bool {
	return len(ch.Added) == 0 && len(ch.Changed) == 0 && len(ch.Removed) == 0 && ch.Flows.Empty()
}

// Diff compares two catalogs by name and digest, templates and flows
// apart; either may be nil (empty). The template lists are sorted and
// never nil, so they marshal as []; so are the flow lists when a flow
// changed.
func Diff(prev, next *Catalog) Changes {
	ch := Changes{Added: []string{}, Changed: []string{}, Removed: []string{}, Flows: diffFlows(prev, next)}
	for _, e := range next.Templates() {
		name := e.Template.Metadata.Name
		switch o, ok := prev.Lookup(name); {
		case !ok:
			ch.Added = append(ch.Added, name)
		case o.Digest != e.Digest || o.PartialsDigest != e.PartialsDigest:
			ch.Changed = append(ch.Changed, name)
		}
	}
	for _, e := range prev.Templates() {
		if _, ok := next.Lookup(e.Template.Metadata.Name); !ok {
			ch.Removed = append(ch.Removed, e.Template.Metadata.Name)
		}
	}
	return ch
}

func diffFlows(prev, next *Catalog) FlowChanges {
	var fc FlowChanges
	for _, e := range next.Flows() {
		switch o, ok := prev.LookupFlow(e.Flow.Name); {
		case !ok:
			fc.Added = append(fc.Added, e.Flow.Name)
		case o.Digest != e.Digest:
			fc.Changed = append(fc.Changed, e.Flow.Name)
		}
	}
	for _, e := range prev.Flows() {
		if _, ok := next.LookupFlow(e.Flow.Name); !ok {
			fc.Removed = append(fc.Removed, e.Flow.Name)
		}
	}
	if fc.Empty() {
		return FlowChanges{}
	}
	return FlowChanges{Added: nonNil(fc.Added), Changed: nonNil(fc.Changed), Removed: nonNil(fc.Removed)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// NotFound is the TEMPLATE_NOT_FOUND error for name, with "did you mean"
// suggestions from c (which may be nil).
func NotFound(name string, c *Catalog) *fault.Error {
	var sugg []string
	if len(name) > 2*MaxNameLength+1 {
		// Longer than any NAMESPACE/NAME: nothing is like it, and a client
		// sending megabytes of name must not get them back.
		name = truncate(name, 64)
	} else {
		sugg = c.Suggest(name, 3)
	}
	how := "list the available names with the flowyprompt_list_templates tool (or prompts/list); names are case-sensitive"
	if len(sugg) > 0 {
		how = fmt.Sprintf("did you mean %q? Otherwise %s", sugg[0], how)
	}
	why := fmt.Sprintf("no template has metadata.name %q", name)
	if c != nil {
		info := c.Info()
		why = fmt.Sprintf("none of the %d templates in %s has metadata.name %q", c.Len(), describeSource(info), name)
	}
	details := map[string]any{"name": name}
	if inv, ok := c.invalidFile(name); ok {
		// The file that would hold it is there but failed to load: that,
		// not the name, is what to fix.
		reason := inv.Err.Error()
		if f := fault.As(inv.Err); f != nil && f.Why != "" {
			reason = f.Why
		}
		why = fmt.Sprintf("the file %s exists but is invalid, so it is not served: %s", inv.Path, truncate(reason, 2000))
		how = fmt.Sprintf("fix %s where its problems say and the server loads it again; check a fix first with "+
			"flowyprompt_validate_template(template=\"<the file's contents>\", file_name=%q)", inv.Path, path.Base(inv.Path))
		details["file"] = inv.Path
		if f := fault.As(inv.Err); f != nil {
			if ps, ok := f.Details["problems"].([]Problem); ok {
				problems := make([]string, 0, len(ps))
				for _, p := range ps {
					ptr := p.Pointer
					if ptr == "" {
						ptr = "(document)"
					}
					problems = append(problems, ptr+": "+p.Message)
				}
				details["problems"] = problems
			}
		}
	}
	return &fault.Error{
		Code:        fault.TemplateNotFound,
		What:        fmt.Sprintf("template %q not found", name),
		Why:         why,
		How:         how,
		Suggestions: sugg,
		Details:     details,
	}
}

// invalidFile returns the invalid file that would hold the template name:
// NAME.json, or NAME in another format, in any folder.
func (c *Catalog) invalidFile(name string) (Invalid, bool) {
	if c == nil {
		return Invalid{}, false
	}
	for _, inv := range c.invalid {
		if _, stem := FormatOf(inv.Path); stem == BareName(name) {
			return inv, true
		}
	}
	return Invalid{}, false
}

func describeSource(info SourceInfo) string {
	switch {
	case info.Kind == "directory":
		// A folder's location is a path on the server's machine: not
		// for clients to see (the operator's log names it).
		return "the template folder"
	case info.Kind == "" && info.Location == "":
		return "the catalog"
	case info.Location == "":
		return "the " + info.Kind + " source"
	case info.Ref != "":
		return fmt.Sprintf("%s (%s@%s)", info.Kind, info.Location, info.Ref)
	}
	return fmt.Sprintf("%s (%s)", info.Kind, info.Location)
}

// ValidateName checks a template name that came from a client: the
// metadata.name rule, at most MaxNameLength characters. Checking it before
// any lookup keeps "../secrets" away from file systems and URLs.
func ValidateName(name string) error {
	bad := func(why string) error {
		return &fault.Error{
			Code:    fault.InvalidArgument,
			What:    fmt.Sprintf("invalid template name %q", truncate(name, 64)),
			Why:     why,
			How:     "use a name from flowyprompt_list_templates (or prompts/list): letters, digits, '_' and '-' only",
			Details: map[string]any{"field": "name"},
		}
	}
	switch {
	case name == "":
		return bad("the name is empty")
	case len(name) > MaxNameLength:
		return bad(fmt.Sprintf("the name is %d characters long; the maximum is %d", len(name), MaxNameLength))
	}
	for _, r := range name {
		if r >= utf8.RuneSelf || (!isNameByte(byte(r)) && r != '-') {
			return bad(fmt.Sprintf("%q is not allowed in a template name", r))
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
