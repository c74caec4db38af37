package app

import (
	"context"
	"fmt"
	"github.com/flowyprompt/flowyprompt/mcp"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// history is the source's templates.History, or the error saying that
// versions need a GitHub library (or a folder in a Git work tree). A folder
// source always has History: whether its folder is in a work tree is known
// only when asked, and its own VERSIONS_UNSUPPORTED fault says why not.
func (a *App) history(v view, name string) (templates.History, error) {
	src := v.source()
	if h, ok := src.(templates.History); ok {
		return h, nil
	}
	return nil, templates.VersionsUnsupported(name, describeKind(src.Info().Kind))
}

func describeKind(kind string) string {
	switch kind {
	case "directory":
		return "a folder"
	case "embedded":
		return "the built-in examples"
	}
	return "a " + kind + " source"
}

// lookupAt finds the template called name, as it was at version when
// version is not "" (at then says which version that was, else nil).
func (a *App) lookupAt(ctx context.Context, r *mcp.Request, name, version string) (*templates.Entry, view, *versionAt, error) {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, v, nil, err
	}
	e, err := v.lookup(name)
	if err != nil || version == "" {
		return e, v, nil, err
	}
	e, at, err := a.atVersion(ctx, v, e, version)
	return e, v, at, err
}

// versionAt says which version a get or render used, for its result.
type versionAt struct {
	Requested string `json:"requested"`
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"` // "" when read at a tag
	Current   bool   `json:"current"`          // the version served now
}

// atVersion is e as it was at version: a metadata.version found in the
// file's history (newest first, reading the file at each commit until one
// matches; files already read cost nothing), else a tag or commit SHA.
// Only the file's text changes: the entry keeps its served name and path.
func (a *App) atVersion(ctx context.Context, v view, e *templates.Entry, version string) (*templates.Entry, *versionAt, error) {
	name := e.Template.Metadata.Name
	h, err := a.history(v, name)
	if err != nil {
		return nil, nil, err
	}
	// One lookup: its git runs (a folder's) share one budget.
	ctx = templates.WithLookup(ctx, 0)
	var data []byte
	at := &versionAt{Requested: version}
	if version == e.Template.Metadata.Version {
		// The catalog serves the newest commit of the file: asking GitHub
		// would find the same bytes.
		at.Version, at.Current = version, true
		return e, at, nil
	}
	var found []string
	if isFullSHA(version) {
		at.Commit = strings.ToLower(version)
		if data, err = h.FileAt(ctx, e.Path, version); err != nil {
			return nil, nil, err
		}
	} else {
		revs, err := h.FileHistory(ctx, e.Path)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range revs.Revisions {
			if r.Version != "" && r.Version != version {
				// Known already (a folder's history reads them all):
				// the file at this commit is not the one asked for.
				found = append(found, fmt.Sprintf("%s (%s)", r.Version, shortSHA(r.Commit)))
				continue
			}
			b, err := h.FileAt(ctx, e.Path, r.Commit)
			if err != nil {
				return nil, nil, err
			}
			v := templates.DeclaredVersion(b)
			found = append(found, fmt.Sprintf("%s (%s)", v, shortSHA(r.Commit)))
			if v == version {
				data, at.Commit = b, r.Commit
				break
			}
		}
		if data == nil {
			// Not a metadata.version of the listed commits: a tag, then.
			b, err := h.FileAt(ctx, e.Path, version)
			// GitHub answers GITHUB_NOT_FOUND, a folder's repository
			// VERSION_NOT_FOUND: either way no such tag or commit.
			if f := fault.As(err); f != nil && (f.Code == fault.GitHubNotFound || f.Code == fault.VersionNotFound) {
				more := ""
				if revs.Truncated {
					more = fmt.Sprintf(" (the newest %d commits; older ones are not searched)", len(revs.Revisions))
				}
				return nil, nil, &fault.Error{Code: fault.VersionNotFound,
					What:    fmt.Sprintf("template %q has no version %q", name, version),
					Why:     "no commit of its file declares metadata.version " + version + more + ", and no tag or commit has that name; versions found: " + strings.Join(found, ", "),
					How:     "pass one of the versions found, a tag or a full commit SHA (flowyprompt_template_history lists them), or omit version for the current one",
					Details: map[string]any{"versions": found}, Err: err}
			}
			if err != nil {
				return nil, nil, err
			}
			data = b
		}
	}
	t, _, err := templates.Parse(data, templates.ParseOptions{MaxFileSize: a.opts.MaxFileSize, FileName: e.Path})
	if err != nil {
		return nil, nil, err
	}
	// Served under the current entry's name (namespaced with several
	// sources), so results and follow-up calls name the same template.
	t.Metadata.Name = name
	at.Version = t.Metadata.Version
	return &templates.Entry{Template: t, Path: e.Path, Raw: data}, at, nil
}

func isFullSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range strings.ToLower(s) {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// describeAt is the line a versioned result adds.
func describeAt(at *versionAt) string {
	s := fmt.Sprintf("Version %s (asked for %q)", at.Version, at.Requested)
	if at.Commit != "" {
		s += " from commit " + shortSHA(at.Commit)
	}
	if at.Current {
		return s + ": the current one."
	}
	return s + ", not the current one."
}
