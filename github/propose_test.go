package github

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// proposeLibrary has templates in the places a save must find them.
var proposeLibrary = map[string][]byte{
	"templates/Existing.json":       fakegithub.ValidTemplate("Existing", "old {{subject}}"),
	"templates/team/Sub.json":       fakegithub.ValidTemplate("Team_Sub", "old {{subject}}"),
	"templates/odd-file-name.json":  fakegithub.ValidTemplate("Renamed", "old {{subject}}"),
	"templates/Other.json":          fakegithub.ValidTemplate("Other", "old {{subject}}"),
	"templates/Broken_Invalid.json": []byte(`{"metadata": {"name": "Broken_Invalid"}}`),
}

// withTests is a valid template whose one test passes when content
// renders "ok".
func withTests(name, content string) []byte {
	return []byte(`{"metadata": {"name": "` + name + `", "description": "d", "version": "1.1.0"},
 "variables": [{"name": "subject", "type": "string", "description": "s", "required": true}],
 "results": [{"name": "Task", "content": "` + content + `"}],
 "tests": [{"name": "says ok", "arguments": {"subject": "ok"}, "expect": {"contains": ["ok"]}}]}`)
}

// TestProposeOpensThenUpdates: a save opens one pull request from a branch
// of its own made at the served commit, holding the file where the
// template lives; a second save by the same proposer updates it; the
// served branch never moves.
func TestProposeOpensThenUpdates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tmpl, wantPath string
		existing             bool
	}{
		{"update in place", "Existing", "templates/Existing.json", true},
		{"update in a subfolder", "Team_Sub", "templates/team/Sub.json", true},
		{"update under another file name", "Renamed", "templates/odd-file-name.json", true},
		{"new name creates NAME.json", "Brand_New", "templates/Brand_New.json", false},
		{"an invalid file with the name is replaced", "Broken_Invalid", "templates/Broken_Invalid.json", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakegithub.Library{Files: proposeLibrary})
			s := h.source(func(c *Config) { c.Ref = "" })
			if _, err := s.Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			served := h.fake.Head()
			// A teammate's commit after the load does not hold the
			// proposal up: its branch starts at the served commit.
			h.fake.PutFile("templates/Other.json", fakegithub.ValidTemplate("Other", "theirs {{subject}}"))
			main := h.fake.Head()

			first := withTests(tt.tmpl, "first {{subject}}")
			saved, err := s.SaveTemplate(ctxT(t), tt.tmpl, first, "propose "+tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			p := saved.Proposal
			if p == nil || p.Number != 1 || p.Updated || saved.Location != p.URL || !strings.HasSuffix(p.URL, "/pull/1") ||
				!strings.HasPrefix(p.Branch, BranchPrefix+tt.tmpl+"-") {
				t.Fatalf("saved = %+v, proposal %+v; want pull request #1 from %s%s-ID", saved, p, BranchPrefix, tt.tmpl)
			}
			if got, _ := h.fake.FileAt(p.Branch, tt.wantPath); string(got) != string(first) {
				t.Errorf("the branch's %s = %q, want the proposed file", tt.wantPath, got)
			}
			if h.fake.Head() != main {
				t.Error("the served branch moved")
			}
			if parent := firstParentOnBranch(t, h, p.Branch); parent != served {
				t.Errorf("the branch starts at %s, want the served commit %s", parent, served)
			}
			prs := h.fake.PullRequests()
			if len(prs) != 1 || prs[0].Base != "main" || prs[0].Head != p.Branch || prs[0].Title != "propose "+tt.tmpl {
				t.Fatalf("pull requests = %+v", prs)
			}
			body := prs[0].Body
			for _, want := range []string{"**Validation:** valid", "**Tests:** 1 passed, 0 failed", "PASS " + tt.tmpl + "/says ok",
				"+++ b/" + tt.wantPath, `+ "results": [{"name": "Task", "content": "first {{subject}}"}],`,
				"+++ b/" + tt.tmpl + " (rendered)", "+first ok"} {
				if !strings.Contains(body, want) {
					t.Errorf("the body lacks %q:\n%s", want, body)
				}
			}
			if tt.existing && !strings.Contains(body, "\n-      \"content\": \"old {{subject}}\"") {
				t.Errorf("the file's diff lacks the served text:\n%s", body)
			}

			second := withTests(tt.tmpl, "second {{subject}}")
			saved, err = s.SaveTemplate(ctxT(t), tt.tmpl, second, "propose "+tt.tmpl+" again")
			if err != nil {
				t.Fatal(err)
			}
			if q := saved.Proposal; q == nil || q.Number != 1 || !q.Updated || q.Branch != p.Branch {
				t.Fatalf("second save = %+v, want pull request #1 updated", q)
			}
			prs = h.fake.PullRequests()
			if len(prs) != 1 || !strings.Contains(prs[0].Body, "+second ok") || strings.Contains(prs[0].Body, "first ok") {
				t.Errorf("after the second save: %d pull requests, body:\n%s", len(prs), prs[0].Body)
			}
			if got, _ := h.fake.FileAt(p.Branch, tt.wantPath); string(got) != string(second) {
				t.Errorf("the branch's %s after the update = %q", tt.wantPath, got)
			}
			if h.fake.Head() != main {
				t.Error("the served branch moved")
			}
		})
	}
}

// firstParentOnBranch is the commit branch started from: the parent of
// its first commit not on main.
func firstParentOnBranch(t *testing.T, h *harness, branch string) string {
	t.Helper()
	c := h.client()
	revs, _, _, err := c.listCommits(ctxT(t), "", branch, "")
	if err != nil {
		t.Fatal(err)
	}
	// The branch's own commits come first; the first commit also on the
	// served history is where it started.
	for _, r := range revs {
		if !strings.HasPrefix(r.Message, "propose") {
			return r.Commit
		}
	}
	return ""
}

// TestProposeByMember: members get a pull request each; a merged one is
// not updated: the next save opens another, its branch moved to the
// served commit.
func TestProposeByMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{Files: proposeLibrary})
	s := h.source(func(c *Config) { c.Ref = "main" })
	ann := auth.WithMember(ctxT(t), &auth.Member{Issuer: "https://idp", Subject: "ann"})
	bob := auth.WithMember(ctxT(t), &auth.Member{Issuer: "https://idp", Subject: "bob"})
	save := func(ctx context.Context, content string) *templates.Proposal {
		t.Helper()
		saved, err := s.SaveTemplate(ctx, "Existing", withTests("Existing", content+" {{subject}}"), "change Existing")
		if err != nil {
			t.Fatal(err)
		}
		return saved.Proposal
	}
	a1, b1, a2 := save(ann, "ann's"), save(bob, "bob's"), save(ann, "ann's again")
	if a1.Number != 1 || b1.Number != 2 || a2.Number != 1 || !a2.Updated || a1.Branch == b1.Branch {
		t.Fatalf("ann %+v, bob %+v, ann again %+v: want one pull request per member", a1, b1, a2)
	}
	if _, err := h.fake.Merge(1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	a3 := save(ann, "ann's third")
	if a3.Number != 3 || a3.Updated || a3.Branch != a1.Branch {
		t.Fatalf("after the merge: %+v, want a new pull request #3 from the same branch", a3)
	}
	if got, _ := h.fake.FileAt(a3.Branch, "templates/Existing.json"); !strings.Contains(string(got), "ann's third") {
		t.Errorf("the branch holds %q", got)
	}

	data, path, err := s.ProposedFile(ctxT(t), 2, "Existing")
	if err != nil || path != "templates/Existing.json" || !strings.Contains(string(data), "bob's") {
		t.Errorf("ProposedFile(2) = %q, %q, %v; want bob's file", data, path, err)
	}
	if _, _, err := s.ProposedFile(ctxT(t), 9, "Existing"); fault.CodeOf(err) != fault.GitHubNotFound || !strings.Contains(err.Error(), "#9") {
		t.Errorf("ProposedFile(9) error = %v, want GITHUB_NOT_FOUND naming #9", err)
	}
	if _, _, err := s.ProposedFile(ctxT(t), 2, "Nowhere"); fault.CodeOf(err) != fault.GitHubNotFound {
		t.Errorf("ProposedFile of a file the branch lacks: %v, want GITHUB_NOT_FOUND", err)
	}
}

// TestProposeRefused: what cannot be proposed is refused before anything
// is written, and a token that may only read is told what it needs.
func TestProposeRefused(t *testing.T) {
	t.Parallel()
	const readOnly = "github_pat_ReadOnlyTokenThatMustNeverLeak0123"
	h := newHarness(t, fakegithub.Library{Files: proposeLibrary})
	h.fake.SetReadOnlyToken(readOnly)
	tests := []struct {
		name     string
		src      *Source
		tmpl     string
		wantCode string
		wantHow  []string
	}{
		{"bad name", h.source(), "../evil", fault.InvalidArgument, nil},
		{"pinned source", h.source(func(c *Config) { c.Ref = h.fake.Head() }), "X", fault.WriteDisabled, []string{"GITHUB_REF"}},
		{"read-only token", h.source(func(c *Config) { c.Token = readOnly }), "Existing", fault.PermissionDenied,
			[]string{"GITHUB_PAT", "Contents: Read and write", "Pull requests: Read and write", "acme/prompts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := h.fake.Head()
			_, err := tt.src.SaveTemplate(ctxT(t), tt.tmpl, withTests("Existing", "x {{subject}}"), "msg")
			f := fault.As(err)
			if f == nil || f.Code != tt.wantCode {
				t.Fatalf("SaveTemplate error = %v, want %s", err, tt.wantCode)
			}
			for _, want := range tt.wantHow {
				if !strings.Contains(f.How, want) {
					t.Errorf("the fix %q lacks %q", f.How, want)
				}
			}
			if strings.Contains(explainAll(f), readOnly) {
				t.Error("the error shows the token")
			}
			if len(h.fake.PullRequests()) != 0 || h.fake.Head() != head || h.fake.Count(fakegithub.RoutePut) != 0 {
				t.Error("a refused proposal wrote to GitHub")
			}
		})
	}
}

// explainAll is every text of f a client or a log may see.
func explainAll(f *fault.Error) string {
	s := fmt.Sprintf("%s %s %s %v", f.Error(), f.Why, f.How, f.Details)
	if f.Err != nil {
		s += f.Err.Error()
	}
	return s
}

// TestProposeAtOnce: saves of one template by one proposer at the same
// time make one pull request, opened by one and updated by the others,
// rather than racing for its branch.
func TestProposeAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{Files: proposeLibrary})
	s := h.source()
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const n = 4
	errs := make(chan error, n)
	updated := make(chan bool, n)
	for i := range n {
		go func() {
			saved, err := s.SaveTemplate(ctxT(t), "Existing", withTests("Existing", fmt.Sprintf("take %d {{subject}}", i)), "change Existing")
			if err == nil {
				updated <- saved.Proposal.Updated
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	opened := 0
	for range n {
		if !<-updated {
			opened++
		}
	}
	if prs := h.fake.PullRequests(); len(prs) != 1 || opened != 1 {
		t.Errorf("%d pull requests, %d saves opened one; want one opened and updated %d times", len(prs), opened, n-1)
	}
}
