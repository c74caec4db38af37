package fakegithub

import (
	"encoding/json"
	"testing"
)

// TestCommitsList: the commits list names, newest first, the commits that
// changed a path, from a ref, a page at a time, and answers 304 to its own
// ETag.
func TestCommitsList(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	a1 := s.CommitFiles("A one", map[string][]byte{"t/A.json": []byte("1")})
	s.CommitFiles("B only", map[string][]byte{"t/B.json": []byte("b")})
	a2 := s.CommitFiles("A two", map[string][]byte{"t/A.json": []byte("2")})
	s.SetTag("first", a1)

	tests := []struct {
		name  string
		query string
		want  []string // commit SHAs, in order
	}{
		{"a path's commits, newest first", "path=t/A.json&sha=main", []string{a2, a1}},
		{"from a tag", "path=t/A.json&sha=first", []string{a1}},
		{"one per page", "path=t/A.json&sha=main&per_page=1", []string{a2}},
		{"a path no commit changed", "path=t/C.json", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Reset()
			resp, body := do(t, s, s.URL(), call{method: "GET", path: "repos/acme/prompts/commits?" + tt.query})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var list []struct {
				SHA    string `json:"sha"`
				Commit struct {
					Message string `json:"message"`
					Author  struct{ Name, Date string }
				} `json:"commit"`
			}
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, c := range list {
				got = append(got, c.SHA)
				if c.Commit.Author.Name != CommitAuthor || c.Commit.Author.Date == "" || c.Commit.Message == "" {
					t.Errorf("commit %s lacks its author, date or message: %+v", c.SHA, c.Commit)
				}
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) || (len(got) > 1 && got[1] != tt.want[1]) {
				t.Errorf("commits %v, want %v", got, tt.want)
			}
			resp2, _ := do(t, s, s.URL(), call{method: "GET", path: "repos/acme/prompts/commits?" + tt.query,
				header: map[string]string{"If-None-Match": resp.Header.Get("ETag")}})
			if resp2.StatusCode != 304 {
				t.Errorf("conditional request: status %d, want 304", resp2.StatusCode)
			}
			if n := s.Count(RouteCommits); n != 2 {
				t.Errorf("Count(RouteCommits) = %d, want 2", n)
			}
		})
	}
	resp, _ := do(t, s, s.URL(), call{method: "GET", path: "repos/acme/prompts/commits?sha=nope"})
	if resp.StatusCode != 404 {
		t.Errorf("unknown ref: status %d, want 404", resp.StatusCode)
	}
}
