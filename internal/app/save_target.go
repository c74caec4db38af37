package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Which source of several a save goes to. A template's metadata.name is
// bare; with several sources the save names its target, or its name
// picks the one source that has it. The name as served, SOURCE/NAME, is
// then what the update check looks up and the policy's write rules
// judge, and what the Writer (a Composite) saves to that member as NAME.

// saveTarget is the name the template name is saved as: name itself with
// one source (whose name, SourceDefault or SourceExamples, source may
// repeat), else SOURCE/name, SOURCE being source or, when it is empty,
// the one source of v that has name. A source v may not see is unknown,
// as if it were not configured.
func (a *App) saveTarget(ctx context.Context, v view, name, source string) (string, error) {
	info := v.lib.Catalog().Info()
	if len(info.Members) == 0 {
		if source != "" && source != singleName(info) {
			return "", &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("no source is named %.64q", source),
				Why: "this server serves one library, " + singleName(info), How: "leave source out"}
		}
		return name, nil
	}
	// The Composite that saves: the server's Writer, or the label's
	// source that writerOf picks.
	c, _ := a.writerOf(v).(*templates.Composite)
	var seen []string
	for _, m := range v.cat.Info().Members {
		seen = append(seen, m.Namespace)
	}
	if source != "" {
		if !slices.Contains(seen, source) {
			return "", &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("no source is named %.64q", source),
				Why: "the sources you may read are " + listOrNone(seen),
				How: a.writableHow(ctx, c, seen), Suggestions: closeNames(source, seen)}
		}
		return saveableTarget(c, source, name)
	}
	var has []string
	for _, ns := range seen {
		if _, ok := v.cat.Lookup(ns + templates.NamespaceSeparator + name); ok {
			has = append(has, ns)
		}
	}
	if len(has) == 1 {
		return saveableTarget(c, has[0], name)
	}
	why := "no source has a template called " + name + ", so a new one needs its source named"
	if len(has) > 1 {
		why = fmt.Sprintf("the sources %s each have a template called %s", strings.Join(has, ", "), name)
	}
	return "", &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("say which source to save %s to", name),
		Why: why, How: a.writableHow(ctx, c, seen)}
}

// saveableTarget is SOURCE/NAME, when source can save (a member of c,
// the Composite that saves, that cannot is WRITE_DISABLED, before an
// update's checks).
func saveableTarget(c *templates.Composite, source, name string) (string, error) {
	if c != nil {
		if err := c.CanSave(source); err != nil {
			return "", err
		}
	}
	return source + templates.NamespaceSeparator + name, nil
}

// writableHow says which of the sources seen ctx's caller may save to
// through c (see writable).
func (a *App) writableHow(ctx context.Context, c *templates.Composite, seen []string) string {
	w := a.writable(ctx, c, seen)
	if len(w) == 0 {
		return "you may save to none of this server's sources: ask its operator for a write rule (--auth-policy) on a folder or GitHub source"
	}
	return "give source, one of: " + strings.Join(w, ", ")
}

// writable is the part of sources ctx's caller may save to: those whose
// member of c, the Composite that saves (nil: none), can save (a folder
// or GitHub source) and, under a policy, that a write rule of theirs
// names.
func (a *App) writable(ctx context.Context, c *templates.Composite, sources []string) []string {
	saves := sources
	if c != nil {
		saves = c.Saves()
	}
	p, m := a.policy(), auth.MemberOf(ctx)
	var out []string
	for _, s := range sources {
		if slices.Contains(saves, s) && (p == nil || p.Writes(m, s)) {
			out = append(out, s)
		}
	}
	return out
}

// proposes reports whether every save of w is a proposal (a pull
// request) rather than a change of what is served: a GitHub source, or a
// Composite whose members that save are all GitHub sources.
func proposes(w TemplateWriter) bool {
	c, ok := w.(*templates.Composite)
	if !ok {
		_, ok := w.(templates.Proposals)
		return ok
	}
	saves := c.Saves()
	for _, m := range c.Members() {
		if _, ok := m.Source.(templates.Proposals); slices.Contains(saves, m.Namespace) && !ok {
			return false
		}
	}
	return len(saves) > 0
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
