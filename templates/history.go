package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// HistoryPage is the most commits one FileHistory lists: GitHub's first
// page, and the same for a folder's local repository so both answer alike.
const HistoryPage = 30

// History is implemented by sources that keep the earlier versions of
// their files: github.Source reads them from the repository's commits, a
// folder source from the Git work tree it is in (answering a
// VERSIONS_UNSUPPORTED fault when it is in none), and Composite forwards
// to the member a path's namespace names. Callers check for it with a
// type assertion; a source without it (the built-in examples) has no
// versions, which VersionsUnsupported explains.
//
// Paths are Entry.Path values of the source's own catalog.
type History interface {
	// FileHistory lists the commits that changed the file at p, newest
	// first, ending at the source's current revision: at most one page
	// (Revisions.Truncated says when there may be more). A Revision's
	// Version is set only when it is known without asking the source's
	// backend again (the file at that commit was read before; a folder's
	// local repository always reads them).
	FileHistory(ctx context.Context, p string) (Revisions, error)
	// FileAt returns the bytes of the file at p as of rev, a full commit
	// SHA or a tag (or branch) name. A file missing at rev is a
	// GITHUB_NOT_FOUND fault from GitHub, VERSION_NOT_FOUND from a folder.
	FileAt(ctx context.Context, p, rev string) ([]byte, error)
}

// Revisions is one page of a file's history.
type Revisions struct {
	Revisions []Revision `json:"revisions"`
	// Truncated is set when the page is full: older commits may exist.
	Truncated bool `json:"truncated"`
	// Ref is the commit or ref the history was read from.
	Ref string `json:"ref"`
}

// Revision is one commit that changed a file.
type Revision struct {
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
	Author  string    `json:"author"`
	Message string    `json:"message"` // its first line
	// Version is the file's metadata.version at this commit; "" when not
	// known yet or when the file has none.
	Version string `json:"version,omitempty"`
}

// VersionsUnsupported is the error for asking a source without History
// (or a member without it, kind naming the source) for versions.
func VersionsUnsupported(name, kind string) *fault.Error {
	return &fault.Error{Code: fault.VersionsUnsupported,
		What: fmt.Sprintf("cannot read the versions of template %q", name),
		Why:  "versions need a GitHub library or a folder in a Git work tree: this template comes from " + kind + ", which keeps only its current files",
		How: "omit version to use the current template, or serve the library from a GitHub repository " +
			"(GITHUB_REPO_URL=https://github.com/OWNER/REPO, --github-repo https://github.com/OWNER/REPO, " +
			"or one more --source name=NS,github=https://github.com/OWNER/REPO) or from a folder in a Git repository"}
}

// FileHistory forwards to the member the path's namespace names.
func (c *Composite) FileHistory(ctx context.Context, p string) (Revisions, error) {
	h, rest, err := c.historyMember(p)
	if err != nil {
		return Revisions{}, err
	}
	return h.FileHistory(ctx, rest)
}

// FileAt forwards to the member the path's namespace names.
func (c *Composite) FileAt(ctx context.Context, p, rev string) ([]byte, error) {
	h, rest, err := c.historyMember(p)
	if err != nil {
		return nil, err
	}
	return h.FileAt(ctx, rest, rev)
}

func (c *Composite) historyMember(p string) (History, string, error) {
	m, rest, ok := c.member(p)
	if !ok {
		return nil, "", VersionsUnsupported(p, "no source of this server")
	}
	if h, ok := m.Source.(History); ok && rest != "" {
		return h, rest, nil
	}
	return nil, "", VersionsUnsupported(p, m.Source.Info().Kind+" source "+m.Namespace)
}

var _ History = (*Composite)(nil)

// DeclaredVersion is the metadata.version a template file declares, "" if
// none: read without parsing the template, so an invalid file still shows
// the version it claims in a history.
func DeclaredVersion(data []byte) string {
	var t struct {
		Metadata struct {
			Version string `json:"version"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &t) != nil {
		return ""
	}
	return t.Metadata.Version
}
