package templates

import (
	"context"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// Proposals is implemented by sources whose changes are proposed as pull
// requests (a GitHub source): the diff tool reads a template as a pull
// request would change it. Composite forwards to the member a path's
// namespace names. A source without it has no pull requests, which
// ProposalsUnsupported explains.
type Proposals interface {
	// ProposedFile returns the bytes of the file at p (an Entry.Path of
	// the source's own catalog) as pull request number proposes it: the
	// file at the head of its branch. A pull request that does not exist
	// or leaves no file at p is a fault saying which (GITHUB_NOT_FOUND
	// from GitHub).
	ProposedFile(ctx context.Context, number int, p string) ([]byte, error)
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

// ProposedFile forwards to the member the path's namespace names.
func (c *Composite) ProposedFile(ctx context.Context, number int, p string) ([]byte, error) {
	m, rest, ok := c.member(p)
	if !ok || rest == "" {
		return nil, ProposalsUnsupported(p, number, "no source of this server")
	}
	pr, ok := m.Source.(Proposals)
	if !ok {
		return nil, ProposalsUnsupported(p, number, m.Source.Info().Kind+" source "+m.Namespace)
	}
	return pr.ProposedFile(ctx, number, rest)
}

var _ Proposals = (*Composite)(nil)
