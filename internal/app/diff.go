package app

import (
	"context"
	"fmt"
	"maps"
	"regexp"
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
	if s.Version != "" {
		fmt.Fprintf(&b, " (v%s", s.Version)
	} else {
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
func (a *App) diff(ctx context.Context, v view, name, from, to string) (*Diff, error) {
	e, err := v.lookup(name)
	if err != nil {
		return nil, err
	}
	if from == "" && to == "" {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: "from and to are both empty",
			Why: "each stands for the served version when empty: the diff would compare it with itself",
			How: "pass a label, a metadata.version, a tag, a commit SHA or a pull request (#N) as from, or as to"}
	}
	fe, fs, err := a.side(ctx, v, e, from)
	if err != nil {
		return nil, err
	}
	te, ts, err := a.side(ctx, v, e, to)
	if err != nil {
		return nil, err
	}
	name = e.Template.Metadata.Name
	d := &Diff{Name: name, Path: e.Path, From: fs, To: ts}
	d.File = review.Unified(e.Path+"@"+fs.String(), e.Path+"@"+ts.String(), string(fe.Raw), string(te.Raw))
	d.Rendered = review.Unified(name+" rendered@"+fs.String(), name+" rendered@"+ts.String(), exampleText(fe.Template), exampleText(te.Template))
	return d, nil
}

// exampleText is t's prompt with its example values, or why it does not
// render with them: a side that does not render is still compared.
func exampleText(t *templates.Template) string {
	s, err := review.Rendered(t)
	if err != nil {
		return fmt.Sprintf("(does not render with its example values: %s: %v)\n", fault.CodeOf(err), err)
	}
	return s + "\n"
}

// pullSpec reads a pull request as #N or pr:N.
var pullSpec = regexp.MustCompile(`^(?:#|(?i:pr):)(\d{1,9})$`)

// side resolves spec to the template as it is there: served (e in v),
// a pull request, a label, else a version.
func (a *App) side(ctx context.Context, v view, e *templates.Entry, spec string) (*templates.Entry, Side, error) {
	name := e.Template.Metadata.Name
	if spec == "" {
		return e, Side{Kind: "served", Version: e.Template.Metadata.Version, Commit: v.source().Info().Revision}, nil
	}
	if m := pullSpec.FindStringSubmatch(spec); m != nil {
		n, _ := strconv.Atoi(m[1]) // at most 9 digits
		return a.proposed(ctx, v, e, spec, n)
	}
	if strings.HasPrefix(spec, "#") {
		return nil, Side{}, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("%q is not a pull request number", spec),
			Why: "a pull request is # and its number", How: "pass it as #12 or pr:12"}
	}
	lv, labelErr := a.labelView(ctx, spec)
	if labelErr == nil {
		le, err := lv.lookup(name)
		if err != nil {
			return nil, Side{}, where(err, "at label "+spec)
		}
		return le, Side{Requested: spec, Kind: "label", Label: spec, Version: le.Template.Metadata.Version,
			Commit: lv.source().Info().Revision}, nil
	}
	if fault.CodeOf(labelErr) != fault.UnknownLabel {
		return nil, Side{}, labelErr
	}
	ve, at, err := a.atVersion(ctx, v, e, spec)
	if err != nil {
		return nil, Side{}, notALabel(err, labelErr)
	}
	commit := at.Commit
	if at.Current {
		commit = v.source().Info().Revision
	}
	return ve, Side{Requested: spec, Kind: "version", Version: at.Version, Commit: commit}, nil
}

// proposed is e as pull request n proposes it.
func (a *App) proposed(ctx context.Context, v view, e *templates.Entry, spec string, n int) (*templates.Entry, Side, error) {
	name := e.Template.Metadata.Name
	src := v.source()
	p, ok := src.(templates.Proposals)
	if !ok {
		return nil, Side{}, templates.ProposalsUnsupported(name, n, describeKind(src.Info().Kind))
	}
	data, _, err := p.ProposedFile(ctx, n, name)
	if err != nil {
		return nil, Side{}, err
	}
	t, _, err := templates.Parse(data, templates.ParseOptions{MaxFileSize: a.opts.MaxFileSize, FileName: e.Path})
	if err != nil {
		return nil, Side{}, where(err, fmt.Sprintf("as pull request #%d proposes it", n))
	}
	t.Metadata.Name = name
	return &templates.Entry{Template: t, Path: e.Path, Raw: data}, Side{Requested: spec, Kind: "pull", Pull: n, Version: t.Metadata.Version}, nil
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
