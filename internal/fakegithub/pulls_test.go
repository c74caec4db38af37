package fakegithub

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

const (
	writer = "ghp_writer"
	reader = "github_pat_reader"
)

// TestProposalFlow walks a proposal through the fake as the GitHub source
// does: a branch from the served commit, a file committed on it, a pull
// request opened, found by its head, edited, and merged into its base.
func TestProposalFlow(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	s.SetToken(writer)
	s.SetReadOnlyToken(reader)
	base := s.PutFile("templates/A.json", []byte(`{"v":1}`))
	auth := map[string]string{"Authorization": "Bearer " + writer}
	branch := "flowyprompt/A-1234abcd"
	put := func(content, sha string) string {
		b := map[string]any{"message": "propose A", "content": base64.StdEncoding.EncodeToString([]byte(content)), "branch": branch}
		if sha != "" {
			b["sha"] = sha
		}
		j, _ := json.Marshal(b)
		return string(j)
	}

	steps := []struct {
		name       string
		call       call
		wantStatus int
		wantBody   string // substring
		wantRoute  string
	}{
		{"the branch does not exist yet", call{method: "GET", path: "repos/acme/prompts/git/ref/heads/" + branch}, 404, "Not Found", RouteRef},
		{"a ref needs refs/ and two slashes", call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"heads/x","sha":"` + base + `"}`}, 422, "must start with 'refs/'", RouteCreateRef},
		{"a ref to an unknown commit", call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"refs/heads/x","sha":"0000000000000000000000000000000000000000"}`}, 422, "Object does not exist", RouteCreateRef},
		{"create the branch", call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"refs/heads/` + branch + `","sha":"` + base + `"}`}, 201, `"sha":"` + base, RouteCreateRef},
		{"create it again", call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"refs/heads/` + branch + `","sha":"` + base + `"}`}, 422, "Reference already exists", RouteCreateRef},
		{"read the branch", call{method: "GET", path: "repos/acme/prompts/git/ref/heads/" + branch}, 200, `"ref":"refs/heads/` + branch, RouteRef},
		{"list the refs", call{method: "GET", path: "repos/acme/prompts/git/refs"}, 200, `"ref":"refs/heads/main"`, RouteRefs},
		{"no commits between the branch and its base", call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"t","head":"` + branch + `","base":"main"}`}, 422, "No commits between main and " + branch, RouteCreatePull},
		{"commit on the branch", call{method: "PUT", path: "repos/acme/prompts/contents/templates/A.json", body: put(`{"v":2}`, BlobSHA([]byte(`{"v":1}`)))}, 200, `"sha":"` + BlobSHA([]byte(`{"v":2}`)), RoutePut},
		{"the file on the branch", call{method: "GET", path: "repos/acme/prompts/contents/templates/A.json?ref=" + branch}, 200, `"sha":"` + BlobSHA([]byte(`{"v":2}`)), RouteContents},
		{"the file on the base is unchanged", call{method: "GET", path: "repos/acme/prompts/contents/templates/A.json?ref=main"}, 200, `"sha":"` + BlobSHA([]byte(`{"v":1}`)), RouteContents},
		{"a pull request needs a title", call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"head":"` + branch + `","base":"main"}`}, 422, `"field":"title"`, RouteCreatePull},
		{"a pull request from an unknown branch", call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"t","head":"nope","base":"main"}`}, 422, `"field":"head"`, RouteCreatePull},
		{"open the pull request", call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"Update A","head":"acme:` + branch + `","base":"main","body":"first"}`}, 201, `"number":1`, RouteCreatePull},
		{"open it twice", call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"Update A","head":"` + branch + `","base":"main"}`}, 422, "A pull request already exists for acme:" + branch, RouteCreatePull},
		{"find it by its head", call{method: "GET", path: "repos/acme/prompts/pulls?state=open&head=acme:" + branch}, 200, `"label":"acme:` + branch, RoutePulls},
		{"another head finds none", call{method: "GET", path: "repos/acme/prompts/pulls?head=acme:other"}, 200, "[]", RoutePulls},
		{"edit its body", call{method: "PATCH", path: "repos/acme/prompts/pulls/1", body: `{"body":"second"}`}, 200, `"body":"second"`, RouteEditPull},
		{"read it", call{method: "GET", path: "repos/acme/prompts/pulls/1"}, 200, `"merged":false`, RoutePull},
		{"an unknown pull request", call{method: "GET", path: "repos/acme/prompts/pulls/9"}, 404, "Not Found", RoutePull},
		{"an unknown ref does not move", call{method: "PATCH", path: "repos/acme/prompts/git/refs/heads/side", body: `{"sha":"` + base + `"}`}, 422, "Reference does not exist", RouteUpdateRef},
	}
	for _, st := range steps {
		st.call.header = auth
		resp, body := do(t, s, s.URL(), st.call)
		if resp.StatusCode != st.wantStatus || !strings.Contains(body, st.wantBody) {
			t.Fatalf("%s: status %d body %s; want %d containing %q", st.name, resp.StatusCode, body, st.wantStatus, st.wantBody)
		}
		if reqs := s.Requests(); reqs[len(reqs)-1].Pattern != st.wantRoute {
			t.Errorf("%s: route %q, want %q", st.name, reqs[len(reqs)-1].Pattern, st.wantRoute)
		}
	}
	if got := s.Head(); got != base {
		t.Fatalf("the base branch moved before the merge: %s", got)
	}

	// Another commit on the base meanwhile: the merge keeps it.
	other := s.PutFile("templates/B.json", []byte(`{"b":1}`))
	merged, err := s.Merge(1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Head() != merged || s.commits[merged].parent != other {
		t.Errorf("main is at %s (parent %s), want the merge %s on %s", s.Head(), s.commits[s.Head()].parent, merged, other)
	}
	for path, want := range map[string]string{"templates/A.json": `{"v":2}`, "templates/B.json": `{"b":1}`} {
		if got, ok := s.FileAt("main", path); !ok || string(got) != want {
			t.Errorf("after the merge main's %s = %q, want %q", path, got, want)
		}
	}
	prs := s.PullRequests()
	if len(prs) != 1 || !prs[0].Merged || prs[0].State != "closed" || prs[0].Body != "second" {
		t.Errorf("pull requests after the merge: %+v", prs)
	}
	if _, err := s.Merge(1); err == nil {
		t.Error("a merged pull request merged again")
	}
	// Over HTTP, as the process's tests merge.
	resp, body := do(t, s, s.URL(), call{method: "POST", path: "_merge/1"})
	if resp.StatusCode != 405 || !strings.Contains(body, "not open") {
		t.Errorf("POST /_merge/1 of a merged pull request: %d %s, want 405", resp.StatusCode, body)
	}
	resp, _ = do(t, s, s.URL(), call{method: "GET", path: "repos/acme/prompts/pulls?state=open&head=acme:" + branch, header: auth})
	if resp.StatusCode != 200 {
		t.Fatalf("pulls: %d", resp.StatusCode)
	}
}

// TestHTTPMerge: POST /_merge/{number} merges as Merge does.
func TestHTTPMerge(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	s.CommitOn("feature", "add X", map[string][]byte{"X.json": []byte("x")})
	_, body := do(t, s, s.URL(), call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"X","head":"feature","base":"main"}`})
	if !strings.Contains(body, `"number":1`) {
		t.Fatalf("open: %s", body)
	}
	resp, body := do(t, s, s.URL(), call{method: "POST", path: "_merge/1"})
	if resp.StatusCode != 200 || !strings.Contains(body, `"sha":"`+s.Head()) {
		t.Fatalf("POST /_merge/1: %d %s", resp.StatusCode, body)
	}
	if got, ok := s.FileAt("main", "X.json"); !ok || string(got) != "x" {
		t.Errorf("main's X.json after the merge = %q, %v", got, ok)
	}
	if resp, _ := do(t, s, s.URL(), call{method: "POST", path: "_merge/7"}); resp.StatusCode != 404 {
		t.Errorf("merge of an unknown pull request: %d, want 404", resp.StatusCode)
	}
	if n := s.Count(""); n != 0 {
		t.Errorf("%d merges counted as unknown API routes", n)
	}
}

// TestReadOnlyToken: a token that may only read reads, and every write is
// refused with GitHub's 403, as a fine-grained token without Contents or
// Pull requests write access is.
func TestReadOnlyToken(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	s.SetToken(writer)
	s.SetReadOnlyToken(reader)
	head := s.Head()
	tests := []struct {
		name  string
		token string
		call  call
		want  int
	}{
		{"read", reader, call{method: "GET", path: "repos/acme/prompts/git/refs"}, 200},
		{"create a branch", reader, call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"refs/heads/x","sha":"` + head + `"}`}, 403},
		{"write a file", reader, call{method: "PUT", path: "repos/acme/prompts/contents/A.json", body: `{"message":"m","content":"e30="}`}, 403},
		{"open a pull request", reader, call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"t","head":"main","base":"main"}`}, 403},
		{"edit a pull request", reader, call{method: "PATCH", path: "repos/acme/prompts/pulls/1", body: `{}`}, 403},
		{"a wrong token", "ghp_wrong", call{method: "GET", path: "repos/acme/prompts/git/refs"}, 401},
		{"the writer writes", writer, call{method: "POST", path: "repos/acme/prompts/git/refs", body: `{"ref":"refs/heads/x","sha":"` + head + `"}`}, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.header = map[string]string{"Authorization": "Bearer " + tt.token}
			resp, body := do(t, s, s.URL(), tt.call)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
			if tt.want == 403 && !strings.Contains(body, ReadOnlyMessage) {
				t.Errorf("403 body %s lacks %q", body, ReadOnlyMessage)
			}
		})
	}
	if s.BranchHead("x") != head || len(s.PullRequests()) != 0 {
		t.Error("a refused write changed the repository")
	}
}

// TestRefsAndPullsRevalidate: the new GETs answer 304 to their own ETag
// until what they show changes.
func TestRefsAndPullsRevalidate(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	s.CommitOn("feature", "add X", map[string][]byte{"X.json": []byte("x")})
	do(t, s, s.URL(), call{method: "POST", path: "repos/acme/prompts/pulls", body: `{"title":"X","head":"feature","base":"main"}`})
	tests := []struct {
		path   string
		change func()
	}{
		{"repos/acme/prompts/git/ref/heads/feature", func() { s.CommitOn("feature", "more", map[string][]byte{"Y.json": []byte("y")}) }},
		{"repos/acme/prompts/git/refs", func() { s.SetBranch("other", s.Head()) }},
		{"repos/acme/prompts/pulls?head=acme:feature", func() { s.CommitOn("feature", "again", map[string][]byte{"Z.json": []byte("z")}) }},
		{"repos/acme/prompts/pulls/1", func() {
			do(t, s, s.URL(), call{method: "PATCH", path: "repos/acme/prompts/pulls/1", body: `{"body":"edited ` + strconv.Itoa(s.Total()) + `"}`})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, _ := do(t, s, s.URL(), call{method: "GET", path: tt.path})
			etag := resp.Header.Get("ETag")
			if resp.StatusCode != 200 || etag == "" {
				t.Fatalf("status %d, ETag %q", resp.StatusCode, etag)
			}
			if resp, _ := do(t, s, s.URL(), call{method: "GET", path: tt.path, header: map[string]string{"If-None-Match": etag}}); resp.StatusCode != 304 {
				t.Errorf("unchanged: status %d, want 304", resp.StatusCode)
			}
			tt.change()
			if resp, _ := do(t, s, s.URL(), call{method: "GET", path: tt.path, header: map[string]string{"If-None-Match": etag}}); resp.StatusCode != 200 {
				t.Errorf("changed: status %d, want 200", resp.StatusCode)
			}
		})
	}
}

// TestUpdateRef: a ref moves forward, and backwards only when forced.
func TestUpdateRef(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	first := s.Head()
	second := s.CommitOn("feature", "add X", map[string][]byte{"X.json": []byte("x")})
	tests := []struct {
		name, body string
		want       int
		wantHead   string
	}{
		{"back without force", `{"sha":"` + first + `"}`, 422, second},
		{"back with force", `{"sha":"` + first + `","force":true}`, 200, first},
		{"forward", `{"sha":"` + second + `"}`, 200, second},
	}
	for _, tt := range tests {
		resp, body := do(t, s, s.URL(), call{method: "PATCH", path: "repos/acme/prompts/git/refs/heads/feature", body: tt.body})
		if resp.StatusCode != tt.want || s.BranchHead("feature") != tt.wantHead {
			t.Errorf("%s: %d %s, head %s; want %d, head %s", tt.name, resp.StatusCode, body, s.BranchHead("feature"), tt.want, tt.wantHead)
		}
	}
}
