package app

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/review"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Diff is what changed in a template between two of its versions: the
// unified diff of its file and of the prompt it renders with its example
// values (review.Examples), both through internal/review, so the diff
// tool, `flowyprompt diff` and a pull request's body read the same.
type Diff struct {
	Name     string // as served (namespaced with several sources)
	Path     string // the file's, in its source
	From, To Side
	// File and Rendered are unified diffs, "" when the two sides are
	// equal.
	File, Rendered string
}

// Changed reports whether the two sides differ, in their file or in what
// they render.
func (d *Diff) Changed() bool { return d.File != "" || d.Rendered != "" }

// Side is one side of a Diff as it was resolved.
type Side struct {
	// Requested is the from or to as given ("" for the served version).
	Requested string `json:"requested"`
	// Kind is how Requested was read: "served", "label", "version" (a
	// metadata.version, tag or commit SHA) or "pull" (a pull request).
	Kind    string `json:"kind"`
	Version string `json:"version"`          // the file's metadata.version
	Commit  string `json:"commit,omitempty"` // the commit read, when known
	Label   string `json:"label,omitempty"`
	Pull    int    `json:"pull,omitempty"`
	// Absent is true when the template does not exist on this side (a
	// template a pull request creates, compared with the served
	// version): its diffs are the whole template added or deleted.
	Absent bool `json:"absent,omitempty"`
}

// String names the side for a diff's header and a result's text.
func (s Side) String() string {
	switch s.Kind {
	case "served":
		return "served"
	case "pull":
		return fmt.Sprintf("#%d", s.Pull)
	}
	return s.Requested
}

// describe is the side in words: what it is and which version it holds.
func (s Side) describe() string {
	var b strings.Builder
	switch s.Kind {
	case "served":
		b.WriteString("the served version")
	case "label":
		fmt.Fprintf(&b, "label %s", s.Label)
	case "pull":
		fmt.Fprintf(&b, "pull request #%d", s.Pull)
	default:
		fmt.Fprintf(&b, "%q", s.Requested)
	}
	switch {
	case s.Absent:
		b.WriteString(" (no such template")
	case s.Version != "":
		fmt.Fprintf(&b, " (v%s", s.Version)
	default:
		b.WriteString(" (no version")
	}
	if s.Commit != "" {
		b.WriteString(", commit " + shortSHA(s.Commit))
	}
	b.WriteString(")")
	return b.String()
}

// Diff compares the template called name at from and at to, each one of:
// "" (the served version; not both), a pull request as #N or pr:N, a
// label, or a version as the get tool takes it (a metadata.version, a tag
// or a commit SHA). A name is read as a label first: labels are few and
// known without asking the source, a version search reads the file's
// history. `flowyprompt diff` calls it; the diff tool calls diff, which
// is this for a request.
//
// ctx carries who asks and, through viewOf, which label is served to
// them; a label named as from or to is read through labelView, as much of
// it as they may see.
func (a *App) Diff(ctx context.Context, name, from, to string) (*Diff, error) {
	v, err := a.viewOf(ctx, nil)
	if err != nil {
		return nil, err
	}
	return a.diff(ctx, v, name, from, to)
}

// diff is Diff in the view v, which serves the to that is "".
//
// A template need not exist on both sides: the side without it (the
// served version or a label that has no such template) is empty, and the
// diffs show the whole file and prompt as added or deleted, as a pull
// request that creates a template proposes it. A side that is a version
// is looked for in the served template's history, so it needs the
// template served. A name on neither side is TEMPLATE_NOT_FOUND, as it is
// everywhere else.
func (a *App) diff(ctx context.Context, v view, name, from, to string) (*Diff, error) {
	// lookup fails with TEMPLATE_NOT_FOUND alone: a name the view does
	// not have may still be on a side.
	e, notFound := v.lookup(name)
	if notFound == nil {
		name = e.Template.Metadata.Name
	}
	if from == "" && to == "" {
		if notFound != nil {
			return nil, notFound
		}
		return nil, &fault.Error{Code: fault.InvalidArgument, What: "from and to are both empty",
			Why: "each stands for the served version when empty: the diff would compare it with itself",
			How: "pass a label, a metadata.version, a tag, a commit SHA or a pull request (#N) as from, or as to"}
	}
	want := wanted{name: name, served: e, notFound: notFound}
	fe, fs, err := a.side(ctx, v, want, from)
	if err != nil {
		return nil, err
	}
	te, ts, err := a.side(ctx, v, want, to)
	if err != nil {
		return nil, err
	}
	if fe == nil && te == nil {
		if notFound == nil {
			// Served, but on neither side: two labels without it.
			return nil, &fault.Error{Code: fault.TemplateNotFound,
				What:    fmt.Sprintf("template %q is at neither %s nor %s", name, fs.describe(), ts.describe()),
				Why:     "it is in the library served to you, not in the libraries of the labels named",
				How:     "name a label, version or pull request that has it, or leave from or to out for the served version",
				Details: map[string]any{"name": name}}
		}
		return nil, notFound
	}
	found := cmp.Or(fe, te)
	name, path := found.Template.Metadata.Name, found.Path
	d := &Diff{Name: name, Path: path, From: fs, To: ts}
	d.File = review.Unified(header(fs, path), header(ts, path), raw(fe), raw(te))
	d.Rendered = review.Unified(header(fs, name+" rendered"), header(ts, name+" rendered"), exampleText(fe), exampleText(te))
	return d, nil
}

// wanted is the template a diff compares: its name (as served when it
// is), the served entry (nil when the view has none of that name), and
// the view's TEMPLATE_NOT_FOUND for it then.
type wanted struct {
	name     string
	served   *templates.Entry
	notFound error
}

// header names a side in a diff's header: what@side, or /dev/null, as
// git names the side of a file that does not exist.
func header(s Side, what string) string {
	if s.Absent {
		return "/dev/null"
	}
	return what + "@" + s.String()
}

// raw is e's file, "" for a side without the template.
func raw(e *templates.Entry) string {
	if e == nil {
		return ""
	}
	return string(e.Raw)
}

// exampleText is e's prompt with its example values, or why it does not
// render with them: a side that does not render is still compared. A
// side without the template has no prompt.
func exampleText(e *templates.Entry) string {
	if e == nil {
		return ""
	}
	s, err := review.Rendered(e.Template)
	if err != nil {
		return fmt.Sprintf("(does not render with its example values: %s: %v)\n", fault.CodeOf(err), err)
	}
	return s + "\n"
}

// pullSpec reads a pull request as #N or pr:N.
var pullSpec = regexp.MustCompile(`^(?:#|(?i:pr):)(\d{1,9})$`)

// side resolves spec to the template as it is there: served (w.served
// in v), a pull request, a label, else a version. The entry is nil, and
// the Side Absent, for the served version or a label without the
// template.
func (a *App) side(ctx context.Context, v view, w wanted, spec string) (*templates.Entry, Side, error) {
	if spec == "" {
		s := Side{Kind: "served", Commit: v.source().Info().Revision, Absent: w.served == nil}
		if w.served != nil {
			s.Version = w.served.Template.Metadata.Version
		}
		return w.served, s, nil
	}
	if m := pullSpec.FindStringSubmatch(spec); m != nil {
		n, _ := strconv.Atoi(m[1]) // at most 9 digits
		return a.proposed(ctx, v, w, spec, n)
	}
	if strings.HasPrefix(spec, "#") {
		return nil, Side{}, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("%q is not a pull request number", spec),
			Why: "a pull request is # and its number", How: "pass it as #12 or pr:12"}
	}
	lv, labelErr := a.labelView(ctx, spec)
	if labelErr == nil {
		s := Side{Requested: spec, Kind: "label", Label: spec, Commit: lv.source().Info().Revision}
		le, err := lv.lookup(w.name)
		if err != nil { // TEMPLATE_NOT_FOUND: the label has no such template
			s.Absent = true
			return nil, s, nil
		}
		s.Version = le.Template.Metadata.Version
		return le, s, nil
	}
	if fault.CodeOf(labelErr) != fault.UnknownLabel {
		return nil, Side{}, labelErr
	}
	if w.served == nil {
		// A version is found in the served template's history.
		return nil, Side{}, w.notFound
	}
	ve, at, err := a.atVersion(ctx, v, w.served, spec)
	if err != nil {
		return nil, Side{}, notALabel(err, labelErr)
	}
	commit := at.Commit
	if at.Current {
		commit = v.source().Info().Revision
	}
	return ve, Side{Requested: spec, Kind: "version", Version: at.Version, Commit: commit}, nil
}

// proposed is the template w as pull request n proposes it: the served
// one's file at the head of its branch, or, for a template the view does
// not have, the file the pull request creates. That one is read only
// from a source the caller may read (mayRead), so that a pull request
// does not show what an access policy hides; where the pull request
// has no such file either, the name is TEMPLATE_NOT_FOUND, saying so.
func (a *App) proposed(ctx context.Context, v view, w wanted, spec string, n int) (*templates.Entry, Side, error) {
	src := v.source()
	if w.served == nil && !a.mayRead(ctx, v, w.name) {
		return nil, Side{}, w.notFound
	}
	p, ok := src.(templates.Proposals)
	if !ok {
		if w.served == nil {
			return nil, Side{}, w.notFound
		}
		return nil, Side{}, templates.ProposalsUnsupported(w.name, n, describeKind(src.Info().Kind))
	}
	data, path, err := p.ProposedFile(ctx, n, w.name)
	if err != nil {
		if w.served == nil && absentFrom(err) {
			return nil, Side{}, notProposed(w.notFound, n, err)
		}
		return nil, Side{}, err
	}
	if w.served != nil {
		path = w.served.Path
	}
	t, _, err := templates.Parse(data, templates.ParseOptions{MaxFileSize: a.opts.MaxFileSize, FileName: path})
	if err != nil {
		return nil, Side{}, where(err, fmt.Sprintf("as pull request #%d proposes it", n))
	}
	t.Metadata.Name = w.name
	return &templates.Entry{Template: t, Path: path, Raw: data}, Side{Requested: spec, Kind: "pull", Pull: n, Version: t.Metadata.Version}, nil
}

// mayRead reports whether ctx's caller may read the source that name
// belongs to in v's library (sourceOf, as mayWrite asks), as visible
// decides for the catalog a view holds.
func (a *App) mayRead(ctx context.Context, v view, name string) bool {
	sources, all := a.readable(ctx)
	return all || slices.Contains(sources, sourceOf(v.lib.Catalog(), name))
}

// absentFrom reports whether err, a pull request's failure to give a
// file, says that it has none: no such pull request or file, a name no
// file can have, a source with no pull requests for that name.
func absentFrom(err error) bool {
	switch fault.CodeOf(err) {
	case fault.GitHubNotFound, fault.InvalidArgument, fault.VersionsUnsupported:
		return true
	}
	return false
}

// notProposed is notFound, the view's TEMPLATE_NOT_FOUND, saying that
// pull request n does not have the template either (pullErr, why).
func notProposed(notFound error, n int, pullErr error) error {
	f, pf := fault.As(notFound), fault.As(pullErr)
	if f == nil || pf == nil {
		return notFound
	}
	out := *f
	out.Why = strings.TrimSuffix(f.Why, ".") + fmt.Sprintf("; nor does pull request #%d add it: %s", n, firstNonEmpty(pf.Why, pf.What))
	return &out
}

// where is err saying which side of a diff it is about: its fault's
// What (which a result shows, not the chain) ends with at.
func where(err error, at string) error {
	f := fault.As(err)
	if f == nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	out := *f
	out.What = firstNonEmpty(f.What, f.Code) + " " + at
	return &out
}

// notALabel is err, a spec's failure as a version, saying that it is no
// label either (labelErr, UNKNOWN_LABEL, lists the labels there are).
func notALabel(err, labelErr error) error {
	f, lf := fault.As(err), fault.As(labelErr)
	if f == nil || lf == nil {
		return err
	}
	out := *f
	out.Why = strings.TrimSuffix(f.Why, ".") + "; nor is it a label: " + firstNonEmpty(lf.Why, lf.What)
	out.How = "pass one of the versions found, a tag or a full commit SHA (flowyprompt_template_history lists them), " +
		"a label or a pull request as #N; omit from or to for the served version"
	out.Details = maps.Clone(f.Details)
	if out.Details == nil {
		out.Details = map[string]any{}
	}
	for k, v := range lf.Details {
		if _, taken := out.Details[k]; !taken {
			out.Details[k] = v
		}
	}
	return &out
}
