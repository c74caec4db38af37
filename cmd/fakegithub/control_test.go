package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// TestDefaultBranchControl: the default branch moves to an existing
// branch only; naming another is the test's mistake, answered 400 with
// the default left as it was.
func TestDefaultBranchControl(t *testing.T) {
	gh := fakegithub.New("acme", "prompts")
	t.Cleanup(gh.Close)
	gh.CommitOn("side", "start side", map[string][]byte{"a.json": []byte("{}")})
	h := control(gh)
	for _, tt := range []struct {
		name, query string
		status      int
		wantDefault string
	}{
		{"no name", "", http.StatusBadRequest, "main"},
		{"a branch that does not exist", "?name=nope", http.StatusBadRequest, "main"},
		{"an existing branch", "?name=side", http.StatusOK, "side"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/default-branch"+tt.query, nil))
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if got := defaultBranch(t, gh); got != tt.wantDefault {
				t.Errorf("default branch %q, want %q", got, tt.wantDefault)
			}
		})
	}
}

// defaultBranch is the default branch the fake's API reports.
func defaultBranch(t *testing.T, gh *fakegithub.Server) string {
	t.Helper()
	resp, err := http.Get(gh.URL() + "/repos/acme/prompts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var repo struct {
		DefaultBranch string `json:"default_branch"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&repo); err != nil {
		t.Fatal(err)
	}
	return repo.DefaultBranch
}

// TestPullsControl: GET /pulls lists the pull requests under the JSON
// names the end-to-end tests read.
func TestPullsControl(t *testing.T) {
	gh := fakegithub.New("acme", "prompts")
	t.Cleanup(gh.Close)
	gh.CommitOn("side", "change a", map[string][]byte{"a.json": []byte("{}")})
	resp, err := http.Post(gh.URL()+"/repos/acme/prompts/pulls", "application/json",
		strings.NewReader(`{"title":"Change a","head":"side","base":"main","body":"why"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("opening the pull request: %s", resp.Status)
	}
	rec := httptest.NewRecorder()
	control(gh).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/pulls", nil))
	var got []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"number": 1.0, "title": "Change a", "body": "why", "head": "side", "base": "main", "state": "open", "merged": false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /pulls (-want +got):\n%s", diff)
	}
}
