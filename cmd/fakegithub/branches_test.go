package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

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
