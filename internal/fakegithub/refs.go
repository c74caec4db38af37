package fakegithub

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// CommitOn commits files on branch with message and returns the new commit
// SHA. A branch that does not exist yet starts at the default branch's
// head, as a branch made in GitHub's web editor does.
func (s *Server) CommitOn(branch, message string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.branches[branch]; !ok {
		s.branches[branch] = s.branches[s.defaultBranch]
	}
	return s.commitLocked(branch, message, files, nil)
}

// BranchHead returns the commit SHA branch points at, "" when there is no
// such branch.
func (s *Server) BranchHead(branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.branches[branch]
}

// FileAt returns the content of path at ref (a branch, tag or commit SHA).
func (s *Server) FileAt(ref, path string) ([]byte, bool) {
	c := s.resolve(ref)
	if c == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sha, ok := c.files[path]
	if !ok {
		return nil, false
	}
	return slices.Clone(s.blobs[sha]), true
}

// refJSON is a ref as the git refs API shows it.
func (s *Server) refJSON(full, sha string) map[string]any {
	api := "https://api.github.com/repos/" + s.owner + "/" + s.repo
	return map[string]any{
		"ref": full, "node_id": hashHex("ref", full), "url": api + "/git/" + full,
		"object": map[string]any{"type": "commit", "sha": sha, "url": api + "/git/commits/" + sha},
	}
}

// refLocked finds a ref named as the refs API names it, "heads/NAME" or
// "tags/NAME" (with or without "refs/"); s.mu must be held.
func (s *Server) refLocked(name string) (table map[string]string, short string, ok bool) {
	name = strings.TrimPrefix(name, "refs/")
	if b, found := strings.CutPrefix(name, "heads/"); found {
		_, ok = s.branches[b]
		return s.branches, b, ok
	}
	if t, found := strings.CutPrefix(name, "tags/"); found {
		_, ok = s.tags[t]
		return s.tags, t, ok
	}
	return nil, "", false
}

// handleRefs lists every branch and tag, sorted by name.
func (s *Server) handleRefs(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	out := []map[string]any{}
	s.mu.Lock()
	for _, b := range slices.Sorted(maps.Keys(s.branches)) {
		out = append(out, s.refJSON("refs/heads/"+b, s.branches[b]))
	}
	for _, t := range slices.Sorted(maps.Keys(s.tags)) {
		out = append(out, s.refJSON("refs/tags/"+t, s.tags[t]))
	}
	s.mu.Unlock()
	s.writeJSON(w, r, http.StatusOK, out)
}

// handleRef reads one ref: GET git/ref/heads/BRANCH or git/ref/tags/TAG.
func (s *Server) handleRef(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	s.mu.Lock()
	table, name, ok := s.refLocked(r.PathValue("ref"))
	var sha string
	if ok {
		sha = table[name]
	}
	full := "refs/" + strings.TrimPrefix(r.PathValue("ref"), "refs/")
	s.mu.Unlock()
	if !ok {
		s.writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	s.writeJSON(w, r, http.StatusOK, s.refJSON(full, sha))
}

// handleCreateRef creates a branch or tag: POST git/refs with
// {"ref": "refs/heads/NAME", "sha": COMMIT}.
func (s *Server) handleCreateRef(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	if !strings.HasPrefix(body.Ref, "refs/") || strings.Count(body.Ref, "/") < 2 {
		s.writeError(w, r, http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.")
		return
	}
	s.mu.Lock()
	_, known := s.commits[body.SHA]
	table, name, exists := s.refLocked(body.Ref)
	var refused string
	switch {
	case table == nil:
		refused = "Reference name must start with 'refs/heads/' or 'refs/tags/'."
	case !known:
		refused = "Object does not exist"
	case exists:
		refused = "Reference already exists"
	default:
		table[name] = body.SHA
	}
	s.mu.Unlock()
	if refused != "" {
		s.writeError(w, r, http.StatusUnprocessableEntity, refused)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, s.refJSON(body.Ref, body.SHA))
}

// handleUpdateRef moves a ref: PATCH git/refs/heads/NAME with {"sha",
// "force"}; without force only a fast forward is allowed.
func (s *Server) handleUpdateRef(w http.ResponseWriter, r *http.Request) {
	var body struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	s.mu.Lock()
	table, name, exists := s.refLocked(r.PathValue("ref"))
	_, known := s.commits[body.SHA]
	var refused string
	switch {
	case !exists:
		refused = "Reference does not exist"
	case !known:
		refused = "Object does not exist"
	case !body.Force && !s.ancestorLocked(table[name], body.SHA):
		refused = "Update is not a fast forward"
	default:
		table[name] = body.SHA
	}
	s.mu.Unlock()
	if refused != "" {
		s.writeError(w, r, http.StatusUnprocessableEntity, refused)
		return
	}
	full := "refs/" + strings.TrimPrefix(r.PathValue("ref"), "refs/")
	s.writeJSON(w, r, http.StatusOK, s.refJSON(full, body.SHA))
}

// ancestorLocked reports whether commit a is b or one of b's ancestors;
// s.mu must be held.
func (s *Server) ancestorLocked(a, b string) bool {
	for c := s.commits[b]; c != nil; c = s.commits[c.parent] {
		if c.sha == a {
			return true
		}
	}
	return false
}
