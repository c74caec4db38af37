package main

import (
	"net/http"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// branchControl lets a test move branches, as a push or a label's move
// does on GitHub: POST /branch?name=N&commit=SHA points branch N at a
// commit (creating it), and POST /default-branch?name=N makes the
// existing branch N the one /files commits to, so that a commit can be
// made for one branch without moving another.
func branchControl(mux *http.ServeMux, gh *fakegithub.Server) {
	mux.HandleFunc("POST /branch", func(w http.ResponseWriter, r *http.Request) {
		name, sha := r.URL.Query().Get("name"), r.URL.Query().Get("commit")
		if name == "" || sha == "" {
			http.Error(w, "give ?name=BRANCH&commit=SHA", http.StatusBadRequest)
			return
		}
		gh.SetBranch(name, sha)
		writeJSON(w, map[string]string{"branch": name, "commit": sha})
	})
	mux.HandleFunc("POST /default-branch", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" || gh.BranchHead(name) == "" {
			http.Error(w, "give ?name=BRANCH, an existing branch", http.StatusBadRequest)
			return
		}
		gh.SetDefaultBranch(name)
		writeJSON(w, map[string]string{"default": name})
	})
}
