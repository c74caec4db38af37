package fakegithub

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// pull is one pull request.
type pull struct {
	number      int
	title, body string
	head, base  string // branch names
	state       string // "open" or "closed"
	merged      bool
	mergeCommit string
}

// PullRequest is a pull request as a test sees it (and as cmd/fakegithub's
// GET /pulls lists it, in JSON).
type PullRequest struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Head   string `json:"head"`  // a branch name
	Base   string `json:"base"`  // a branch name
	State  string `json:"state"` // "open" or "closed"
	Merged bool   `json:"merged"`
}

// PullRequests returns every pull request, by number.
func (s *Server) PullRequests() []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PullRequest, 0, len(s.pulls))
	for _, p := range s.pulls {
		out = append(out, PullRequest{Number: p.number, Title: p.title, Body: p.body, Head: p.head, Base: p.base, State: p.state, Merged: p.merged})
	}
	return out
}

// ErrNotMergeable is Merge's answer for a pull request that is closed or
// merged already.
var ErrNotMergeable = errors.New("pull request is not open")

// Merge merges pull request number as GitHub's squash merge does: its base
// branch moves to a new commit holding what the head branch changed since
// it left the base (files written or deleted on the branch), over the
// base's current files, and the pull request is closed as merged. It
// returns the new commit's SHA.
func (s *Server) Merge(number int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(number)
	switch {
	case p == nil:
		return "", fmt.Errorf("no pull request #%d", number)
	case p.state != "open":
		return "", fmt.Errorf("#%d: %w", number, ErrNotMergeable)
	}
	head := s.commits[s.branches[p.head]]
	if head == nil {
		return "", fmt.Errorf("#%d: head branch %s is gone", number, p.head)
	}
	// The fork point: the newest commit of the head branch's history that
	// the base branch's history holds too.
	onBase := map[string]bool{}
	for c := s.commits[s.branches[p.base]]; c != nil; c = s.commits[c.parent] {
		onBase[c.sha] = true
	}
	forkFiles := map[string]string{}
	for c := head; c != nil; c = s.commits[c.parent] {
		if onBase[c.sha] {
			forkFiles = c.files
			break
		}
	}
	put := map[string][]byte{}
	var del []string
	for path, blob := range head.files {
		if forkFiles[path] != blob {
			put[path] = s.blobs[blob]
		}
	}
	for path := range forkFiles {
		if _, ok := head.files[path]; !ok {
			del = append(del, path)
		}
	}
	sha := s.commitLocked(p.base, fmt.Sprintf("%s (#%d)", p.title, p.number), put, del)
	p.state, p.merged, p.mergeCommit = "closed", true, sha
	return sha, nil
}

// serveMerge is POST /_merge/{number}: Merge over HTTP, for tests that run
// the fake as a process.
func (s *Server) serveMerge(w http.ResponseWriter, number string) {
	n, err := strconv.Atoi(number)
	var sha string
	if err == nil {
		sha, err = s.Merge(n)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch {
	case errors.Is(err, ErrNotMergeable):
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprintf(w, "{\"message\":%q}\n", err.Error())
	case err != nil:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "{\"message\":%q}\n", err.Error())
	default:
		fmt.Fprintf(w, "{\"merged\":true,\"sha\":%q,\"message\":\"Pull Request successfully merged\"}\n", sha)
	}
}

// pullLocked finds pull request number; s.mu must be held.
func (s *Server) pullLocked(number int) *pull {
	for _, p := range s.pulls {
		if p.number == number {
			return p
		}
	}
	return nil
}

// pullJSON is a pull request as the pulls API shows it; s.mu must be held.
func (s *Server) pullJSON(p *pull) map[string]any {
	repo := map[string]any{"name": s.repo, "full_name": s.owner + "/" + s.repo, "html_url": s.htmlURL(), "owner": map[string]any{"login": s.owner}}
	side := func(branch string) map[string]any {
		return map[string]any{"label": s.owner + ":" + branch, "ref": branch, "sha": s.branches[branch], "repo": repo}
	}
	m := map[string]any{
		"id": 1000 + p.number, "number": p.number, "state": p.state, "title": p.title, "body": p.body,
		"html_url": s.htmlURL("pull", strconv.Itoa(p.number)),
		"url":      "https://api.github.com/repos/" + s.owner + "/" + s.repo + "/pulls/" + strconv.Itoa(p.number),
		"head":     side(p.head), "base": side(p.base), "draft": false,
		"merged": p.merged, "user": map[string]any{"login": "fake-user"},
	}
	if p.merged {
		m["merge_commit_sha"] = p.mergeCommit
	}
	return m
}

// invalid is what GitHub's 422 "Validation Failed" says failed: a field
// (or none), a code and perhaps a message.
type invalid struct{ field, code, message string }

// validationFailed answers 422 as GitHub does when a pull request's fields
// are refused: "Validation Failed" and what failed in errors.
func (s *Server) validationFailed(w http.ResponseWriter, r *http.Request, bad invalid) {
	e := map[string]any{"resource": "PullRequest", "code": bad.code}
	if bad.field != "" {
		e["field"] = bad.field
	}
	if bad.message != "" {
		e["message"] = bad.message
	}
	s.writeErrorWith(w, r, http.StatusUnprocessableEntity, "Validation Failed", []any{e})
}

// handlePulls lists pull requests, newest first, filtered as GitHub does
// by state (open, closed, all; default open), head ("OWNER:BRANCH") and
// base.
func (s *Server) handlePulls(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var headOwner, headBranch string
	if h := q.Get("head"); h != "" {
		var ok bool
		if headOwner, headBranch, ok = strings.Cut(h, ":"); !ok {
			// GitHub wants user:ref-name; a bare name matches nothing.
			headOwner, headBranch = h, "\x00"
		}
	}
	out := []map[string]any{}
	s.mu.Lock()
	for _, p := range slices.Backward(s.pulls) {
		switch {
		case state != "all" && p.state != state,
			headBranch != "" && (headOwner != s.owner || p.head != headBranch),
			q.Get("base") != "" && p.base != q.Get("base"):
			continue
		}
		out = append(out, s.pullJSON(p))
	}
	s.mu.Unlock()
	s.writeJSON(w, r, http.StatusOK, out)
}

// handlePull reads one pull request.
func (s *Server) handlePull(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	n, _ := strconv.Atoi(r.PathValue("number"))
	s.mu.Lock()
	p := s.pullLocked(n)
	var m map[string]any
	if p != nil {
		m = s.pullJSON(p)
	}
	s.mu.Unlock()
	if m == nil {
		s.writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	s.writeJSON(w, r, http.StatusOK, m)
}

// handleCreatePull opens a pull request: {"title", "head", "base",
// "body"}, head being BRANCH or OWNER:BRANCH.
func (s *Server) handleCreatePull(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	head := body.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok && owner == s.owner {
		head = branch
	}
	s.mu.Lock()
	headSHA, headOK := s.branches[head]
	baseSHA, baseOK := s.branches[body.Base]
	var dup bool
	for _, p := range s.pulls {
		dup = dup || (p.state == "open" && p.head == head && p.base == body.Base)
	}
	var bad *invalid
	var m map[string]any
	switch {
	case strings.TrimSpace(body.Title) == "":
		bad = &invalid{"title", "missing_field", ""}
	case !headOK:
		bad = &invalid{"head", "invalid", ""}
	case !baseOK:
		bad = &invalid{"base", "invalid", ""}
	case dup:
		bad = &invalid{"", "custom", "A pull request already exists for " + s.owner + ":" + head + "."}
	case s.ancestorLocked(headSHA, baseSHA):
		bad = &invalid{"", "custom", "No commits between " + body.Base + " and " + head}
	default:
		p := &pull{number: len(s.pulls) + 1, title: body.Title, body: body.Body, head: head, base: body.Base, state: "open"}
		s.pulls = append(s.pulls, p)
		m = s.pullJSON(p)
	}
	s.mu.Unlock()
	if bad != nil {
		s.validationFailed(w, r, *bad)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, m)
}

// handleEditPull changes a pull request's title, body, state or base.
func (s *Server) handleEditPull(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	n, _ := strconv.Atoi(r.PathValue("number"))
	s.mu.Lock()
	p := s.pullLocked(n)
	var bad *invalid
	var m map[string]any
	switch {
	case p == nil:
	case body.State != nil && *body.State != "open" && *body.State != "closed":
		bad = &invalid{"state", "invalid", ""}
	case body.Base != nil && s.branches[*body.Base] == "":
		bad = &invalid{"base", "invalid", ""}
	case p.merged && body.State != nil:
		bad = &invalid{"state", "invalid", "a merged pull request cannot be reopened"}
	default:
		if body.Title != nil {
			p.title = *body.Title
		}
		if body.Body != nil {
			p.body = *body.Body
		}
		if body.State != nil {
			p.state = *body.State
		}
		if body.Base != nil {
			p.base = *body.Base
		}
		m = s.pullJSON(p)
	}
	s.mu.Unlock()
	switch {
	case p == nil:
		s.writeError(w, r, http.StatusNotFound, "Not Found")
	case bad != nil:
		s.validationFailed(w, r, *bad)
	default:
		s.writeJSON(w, r, http.StatusOK, m)
	}
}
