package templates

import "context"

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
// GitHub source), read back by pull request number.
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
