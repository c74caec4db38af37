package github

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Change is one template file a proposal writes.
type Change struct {
	Name    string // the template's name (metadata.name)
	Content []byte // the whole file, our JSON format
}

// BranchPrefix starts the name of every branch a proposal makes.
const BranchPrefix = "flowyprompt/"

// maxBranchNames bounds how much of a proposal's branch name its
// templates' names take.
const maxBranchNames = 80

// SaveTemplate proposes the template as a pull request (see Propose): a
// GitHub library is never written where it is served.
func (s *Source) SaveTemplate(ctx context.Context, name string, content []byte, message string) (templates.Saved, error) {
	p, err := s.Propose(ctx, []Change{{Name: name, Content: content}}, message)
	if err != nil {
		return templates.Saved{}, err
	}
	return templates.Saved{Location: p.URL, Proposal: &p}, nil
}

// proposed is where one change goes: its path, and the served file it
// replaces (nil for a new one).
type proposed struct {
	Change
	path     string
	blob     string // the served file's blob SHA; "" for a new file
	served   []byte
	existing bool // the catalog serves a template of that name
}

// Propose commits changes on a branch of their own and opens a pull
// request against the served ref, or updates the one already open.
//
// The branch is BranchPrefix + the templates' names + "-" + a short id of
// who proposes: the member (auth.MemberOf) when members sign in, else
// this server's token, so each member has one pull request per template.
// When that branch has an open pull request, the files are committed on
// it and the request's body replaced (Proposal.Updated). Otherwise the
// branch is made (or, left from a pull request since closed or merged,
// moved) at the served commit, the files committed there, and the pull
// request opened against the served branch (Config.Ref, else the default
// branch). The served branch is never written. The body holds, for each
// file, its validation report, the diff of the file and of its rendered
// prompt against the served version, and its tests' results.
//
// A template the catalog serves is changed in its own file, as
// SaveTemplate always did (wherever that is, unless it is another
// format); a new name goes to Config.Path/NAME.json, unless that file
// holds another template (WRITE_CONFLICT). A token that may not write
// gets PERMISSION_DENIED naming what it needs; a pinned commit cannot
// be proposed to (WRITE_DISABLED).
func (s *Source) Propose(ctx context.Context, changes []Change, message string) (templates.Proposal, error) {
	if len(changes) == 0 {
		return templates.Proposal{}, fault.New(fault.InvalidArgument, "propose templates", "no template was given", "give one template file or more")
	}
	for _, c := range changes {
		if err := templates.ValidateName(c.Name); err != nil {
			return templates.Proposal{}, err
		}
	}
	if s.pinned {
		return templates.Proposal{}, fault.New(fault.WriteDisabled, "propose "+changes[0].Name,
			"the GitHub source is pinned to commit "+short(s.cfg.ref)+", which no pull request can target",
			"set GITHUB_REF to a branch to propose templates")
	}
	props, commit, err := s.places(ctx, changes)
	if err != nil {
		return templates.Proposal{}, err
	}
	base := s.cfg.ref
	if base == "" {
		if base, err = s.client.DefaultBranch(ctx); err != nil {
			return templates.Proposal{}, err
		}
	}
	branch := s.branchFor(ctx, changes)
	s.proposing.Lock()
	defer s.proposing.Unlock()
	if strings.TrimSpace(message) == "" {
		message = title(props)
	}

	open, err := s.client.openPull(ctx, branch)
	if err != nil {
		return templates.Proposal{}, err
	}
	if open == nil {
		if err := s.client.startBranch(ctx, branch, commit); err != nil {
			return templates.Proposal{}, err
		}
	}
	for _, t := range props {
		if err := s.commitOn(ctx, branch, t, open != nil, message); err != nil {
			return templates.Proposal{}, err
		}
	}
	body := proposalBody(props, s.cfg.maxFileSize, base, commit)
	var pr *pullRequest
	if open != nil {
		pr, err = s.client.editPull(ctx, open.number, firstLine(message), body)
	} else {
		pr, err = s.client.createPull(ctx, firstLine(message), branch, base, body)
	}
	if err != nil {
		return templates.Proposal{}, err
	}
	s.logger.Info("proposed templates as a pull request", "repository", s.cfg.webURL, "pull_request", pr.number,
		"branch", branch, "updated", open != nil, "templates", templateNames(props))
	return templates.Proposal{URL: pr.url, Number: pr.number, Branch: branch, Updated: open != nil}, nil
}

// places finds where each change goes in the served catalog, loading it
// first if need be, and returns the commit it was built from.
func (s *Source) places(ctx context.Context, changes []Change) ([]proposed, string, error) {
	s.mu.Lock()
	loaded := s.base != nil
	s.mu.Unlock()
	if !loaded {
		// Whether a name exists, and where, must come from GitHub:
		// guessing "new" would propose a second file for it.
		if _, err := s.Load(ctx); err != nil {
			return nil, "", err
		}
	}
	s.mu.Lock()
	base, blobs, commit := s.base, s.baseBlobs, s.commit
	s.mu.Unlock()
	out := make([]proposed, 0, len(changes))
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.Name] {
			return nil, "", fault.New(fault.InvalidArgument, "propose "+c.Name, "the template is given twice", "give each template once")
		}
		seen[c.Name] = true
		t := proposed{Change: c, path: s.defaultPath(c.Name)}
		if e, ok := base.Lookup(c.Name); ok {
			if err := templates.SaveOverFormat(c.Name, e.Path); err != nil {
				return nil, "", err
			}
			t.path, t.existing = e.Path, true
		} else if other := templateAt(base, t.path); other != "" {
			return nil, "", &fault.Error{Code: fault.WriteConflict, What: "propose template " + c.Name,
				Why:     fmt.Sprintf("%s holds template %q: writing %s there would delete it", t.path, other, c.Name),
				How:     fmt.Sprintf("rename %s to %s.json (the name it declares) in the repository, or propose the template under another name", t.path, other),
				Details: map[string]any{"file": t.path, "template": other, "repository": s.cfg.webURL},
				Err:     fmt.Errorf("%w: %s holds %s", ErrConflict, t.path, other)}
		}
		if err := s.client.checkWrite("propose "+t.path, t.path, c.Content, "proposal"); err != nil {
			return nil, "", err
		}
		if t.blob = blobs[t.path]; t.blob != "" {
			served, err := s.servedBlob(ctx, t.blob)
			if err != nil {
				return nil, "", err
			}
			t.served = served
		}
		out = append(out, t)
	}
	return out, commit, nil
}

// servedBlob is a served file's content: from the cache, which holds
// every template the catalog was built from, else from GitHub.
func (s *Source) servedBlob(ctx context.Context, sha string) ([]byte, error) {
	if b, ok := s.cache.View(s.blobNS + sha); ok {
		return b, nil
	}
	return s.client.Blob(ctx, sha)
}

// defaultPath is where a new template named name is written.
func (s *Source) defaultPath(name string) string {
	if s.cfg.path == "" {
		return name + ".json"
	}
	return s.cfg.path + "/" + name + ".json"
}

// commitOn commits t on branch. On a branch made for this proposal, the
// file is still the served version (t.blob); on the branch of an open
// pull request it may be an earlier proposal's, read first, and a file
// that already holds the content is left as it is.
func (s *Source) commitOn(ctx context.Context, branch string, t proposed, reused bool, message string) error {
	expect := t.blob
	if reused {
		data, sha, err := s.client.contentsAt(ctx, t.path, branch)
		switch {
		case errors.Is(err, ErrNotFound):
			expect = ""
		case err != nil:
			return err
		case bytes.Equal(data, t.Content):
			return nil
		default:
			expect = sha
		}
	}
	_, _, err := s.client.putFile(ctx, t.path, t.Content, message, branch, expect)
	if f := fault.As(err); f != nil && f.Code == fault.WriteConflict {
		// Someone else committed on the branch between the read and the
		// write: say so in a proposal's words.
		f.How = "propose again: the pull request's branch changed while it was written"
	}
	return err
}

// branchFor is the branch of a proposal of changes by whoever ctx says
// proposes it.
func (s *Source) branchFor(ctx context.Context, changes []Change) string {
	ns := make([]string, 0, len(changes))
	for _, c := range changes {
		ns = append(ns, c.Name)
	}
	slices.Sort(ns)
	part := strings.Join(ns, "+")
	if len(part) > maxBranchNames {
		part = fmt.Sprintf("%s+%d-more", ns[0], len(ns)-1)
	}
	return BranchPrefix + part + "-" + proposerID(ctx, s.authID, s.cfg.ref)
}

// proposerID is a short id of who proposes against base (the served ref;
// "" for the default branch): the signed-in member's issuer and subject,
// else the server's own credentials (tokenID, itself a digest: the token
// never appears in a branch name). The base is in it so that a member's
// proposals against two labels' refs are two pull requests.
func proposerID(ctx context.Context, authID, base string) string {
	who := "token\x00" + authID
	if m := auth.MemberOf(ctx); m != nil {
		who = "member\x00" + m.Issuer + "\x00" + m.Subject
	}
	sum := sha256.Sum256([]byte("flowyprompt proposer\x00" + who + "\x00" + base))
	return hex.EncodeToString(sum[:4])
}

// ProposedFile implements templates.Proposals: the file of template name
// at the head of pull request number's branch, in two requests (the pull
// request, then the file).
func (s *Source) ProposedFile(ctx context.Context, number int, name string) ([]byte, string, error) {
	if err := templates.ValidateName(name); err != nil {
		return nil, "", err
	}
	if number < 1 {
		return nil, "", fault.New(fault.InvalidArgument, fmt.Sprintf("read pull request #%d", number),
			"a pull request's number is 1 or more", "give the number a save or `flowyprompt propose` answered with")
	}
	cat, err := s.Load(ctx)
	if err != nil {
		return nil, "", err
	}
	p := s.defaultPath(name)
	if e, ok := cat.Lookup(name); ok {
		p = e.Path
	}
	pr, err := s.client.pull(ctx, number)
	if err != nil {
		return nil, "", err
	}
	data, _, err := s.client.contentsAt(ctx, p, pr.headSHA)
	if err != nil {
		return nil, "", err
	}
	return data, p, nil
}

var _ templates.Proposals = (*Source)(nil)

func title(props []proposed) string {
	if len(props) == 1 {
		if props[0].existing {
			return "Update " + props[0].Name
		}
		return "Add " + props[0].Name
	}
	return "Propose " + strings.Join(templateNames(props), ", ")
}

func templateNames(props []proposed) []string {
	out := make([]string, 0, len(props))
	for _, t := range props {
		out = append(out, t.Name)
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}
