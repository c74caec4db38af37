package templates

import (
	"context"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// Saved says where a saved template landed.
type Saved struct {
	// Location is where to see it: the file written, or, for a proposal,
	// the pull request's URL.
	Location string
	// Proposal is the pull request that proposes the change; nil when the
	// template was written where it is served (a folder).
	Proposal *Proposal
}

// Proposal is a pull request that proposes templates for review instead
// of writing them where they are served.
type Proposal struct {
	URL    string // the pull request's web page
	Number int
	Branch string // the branch that holds the proposed files
	// Updated is true when an open pull request of the same templates
	// and author got a new commit, rather than a new pull request opened.
	Updated bool
}

// Proposals is a source whose changes are proposed as pull requests (the
// GitHub source), read back by pull request number: the diff tool reads a
// template as a pull request would change it. Composite forwards to the
// member a name's namespace names. A source without it has no pull
// requests, which ProposalsUnsupported explains.
type Proposals interface {
	// ProposedFile returns the file of the template named name as pull
	// request number proposes it (at the head of its branch), and that
	// file's path in the repository: the template's file in the served
	// catalog, else the folder's NAME.json, where a proposal creates it.
	// It fails with GITHUB_NOT_FOUND when there is no such pull request
	// or its branch has no such file; INVALID_ARGUMENT for a bad name or
	// a number below 1.
	// A pull request of any state (open, closed, merged) is read while
	// its branch exists.
	ProposedFile(ctx context.Context, number int, name string) (data []byte, path string, err error)
}

// ProposalsUnsupported is the error for asking a source without
// Proposals (kind naming it) for template name as pull request number
// proposes it.
func ProposalsUnsupported(name string, number int, kind string) *fault.Error {
	return &fault.Error{Code: fault.VersionsUnsupported,
		What: fmt.Sprintf("cannot read template %q as pull request #%d proposes it", name, number),
		Why:  "pull requests are a GitHub library's: this template comes from " + kind + ", which has none",
		How:  "compare versions instead (a metadata.version, tag or commit SHA), or serve the library from the GitHub repository the pull request is in"}
}

// ProposedFile forwards to the member the name's namespace names; the
// path it returns carries the namespace, as the combined catalog's do.
func (c *Composite) ProposedFile(ctx context.Context, number int, name string) ([]byte, string, error) {
	m, rest, ok := c.member(name)
	if !ok || rest == "" {
		return nil, "", ProposalsUnsupported(name, number, "no source of this server")
	}
	pr, ok := m.Source.(Proposals)
	if !ok {
		return nil, "", ProposalsUnsupported(name, number, m.Source.Info().Kind+" source "+m.Namespace)
	}
	data, p, err := pr.ProposedFile(ctx, number, rest)
	if err != nil {
		return nil, "", err
	}
	return data, m.Namespace + NamespaceSeparator + p, nil
}

var _ Proposals = (*Composite)(nil)
