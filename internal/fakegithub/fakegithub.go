// Package fakegithub is an in-process fake of the few GitHub REST endpoints
// flowyprompt uses, for tests: repository metadata, commits/{ref} (SHA and
// JSON media types), recursive trees, blobs (raw and JSON), contents get and
// put on any branch, git refs (read, create, move), pull requests (open,
// edit, list by head, read), rate_limit, and repository archives (tarball).
// A test merges a pull request with Merge, or over HTTP with
// POST /_merge/{number}, which is no GitHub route.
//
// It behaves like GitHub where our code depends on it: strong quoted ETags
// that vary with Accept and Authorization, If-None-Match answered with 304
// that does not count against the rate limit, rate-limit headers on every
// answer, 401 for a wrong token, 403 for a write with a token that may only
// read (SetReadOnlyToken), 422 for an unknown ref, 409/422 for a stale
// file SHA on write, and the 403 rate-limit answer go-github recognises. It
// counts requests per route so tests can assert what a sync costs, and it can
// fail on demand (a fixed status, for every route or one, dropped
// connections, rate limiting).
//
// An archive is served in two steps, as GitHub does: the tarball route is an
// API request (counted, subject to the token, faults and the rate limit)
// that answers 302 with a Location on the download "host",
// /_codeload/OWNER/REPO/legacy.tar.gz/SHA?token=T, where T is a random
// temporary token. The download needs no Authorization, answers 404 to a
// wrong or missing token as codeload does, is not an API request (Total and
// Count leave it out; Downloads counts it) and is not affected by SetFault,
// SetDown or rate limits: it has faults of its own (SetDownloadFault,
// SetDownloadCut). The archive is a real gzip-compressed tar of the commit's
// files under OWNER-REPO-SHA7/, with a strong ETag.
//
// Routes are served both at the root (api.github.com style) and under
// /api/v3/ (GitHub Enterprise style).
package fakegithub

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Route patterns, as Count and Request.Pattern name them.
const (
	RouteRepo      = "GET /repos/{owner}/{repo}"
	RouteCommit    = "GET /repos/{owner}/{repo}/commits/{ref...}"
	RouteCommits   = "GET /repos/{owner}/{repo}/commits"
	RouteTree      = "GET /repos/{owner}/{repo}/git/trees/{sha}"
	RouteBlob      = "GET /repos/{owner}/{repo}/git/blobs/{sha}"
	RouteContents  = "GET /repos/{owner}/{repo}/contents/{path...}"
	RoutePut       = "PUT /repos/{owner}/{repo}/contents/{path...}"
	RouteRateLimit = "GET /rate_limit"
	RouteTarball   = "GET /repos/{owner}/{repo}/tarball/{ref...}"

	RouteRefs       = "GET /repos/{owner}/{repo}/git/refs"
	RouteRef        = "GET /repos/{owner}/{repo}/git/ref/{ref...}"
	RouteCreateRef  = "POST /repos/{owner}/{repo}/git/refs"
	RouteUpdateRef  = "PATCH /repos/{owner}/{repo}/git/refs/{ref...}"
	RoutePulls      = "GET /repos/{owner}/{repo}/pulls"
	RoutePull       = "GET /repos/{owner}/{repo}/pulls/{number}"
	RouteCreatePull = "POST /repos/{owner}/{repo}/pulls"
	RouteEditPull   = "PATCH /repos/{owner}/{repo}/pulls/{number}"
)

// mergePrefix is the path of the test-only merge of a pull request,
// POST /_merge/{number}: no GitHub route, so none of the API's rules apply.
const mergePrefix = "/_merge/"

// ReadOnlyMessage is GitHub's answer to a write with a fine-grained token
// that may only read.
const ReadOnlyMessage = "Resource not accessible by personal access token"

// downloadPrefix is the path of archive downloads, the fake's stand-in for
// codeload.github.com.
const downloadPrefix = "/_codeload/"

// archiveTokenLife is how long a redirect's temporary token is honoured
// (GitHub's last about five minutes).
const archiveTokenLife = 5 * time.Minute

// RateLimitMessage is the message GitHub sends with a primary rate-limit 403.
const RateLimitMessage = "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID."

const defaultLimit = 5000

// Request is one request the fake answered, for assertions.
type Request struct {
	Method      string
	Path        string // without the /api/v3 prefix and without the query
	Query       string
	Pattern     string // one of the Route constants; "" when nothing matched
	Status      int    // 0 when the connection was dropped
	Accept      string
	IfNoneMatch string
	Authorized  bool // an Authorization header was sent (its value is never kept)
}

type commit struct {
	sha, tree, parent, message string
	date                       time.Time
	files                      map[string]string // path → blob SHA
}

// commitEpoch dates the fake's commits: each one an hour after the last,
// from here, so that dates are distinct and the same in every run.
var commitEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// CommitAuthor is the author and committer of every commit of the fake.
const CommitAuthor = "Fake Author"

// Server is a fake GitHub API. Its methods are safe for concurrent use.
type Server struct {
	srv         *httptest.Server
	owner, repo string

	mu            sync.Mutex
	defaultBranch string
	token         string
	readOnly      string            // a token that may read but not write; "" none
	branches      map[string]string // name → commit SHA
	tags          map[string]string
	commits       map[string]*commit
	trees         map[string]string // tree SHA → commit SHA
	blobs         map[string][]byte
	requests      []Request
	fault         int
	routeFaults   map[string]int
	down          bool
	limitedTill   time.Time
	remaining     int
	reset         time.Time
	seq           int
	pulls         []*pull

	grants          map[string]grant // temporary archive token → what it opens
	downloads       []Request
	downloadFault   int
	downloadCut     int
	archiveOverride map[string][]byte // path → content served in archives instead; nil: left out
}

// grant is what one temporary archive token opens, until when.
type grant struct {
	sha     string
	expires time.Time
}

// New starts a fake for repository owner/repo whose default branch "main"
// holds one commit with a README. Close it when done.
func New(owner, repo string) *Server {
	s := &Server{
		owner:         owner,
		repo:          repo,
		defaultBranch: "main",
		branches:      map[string]string{},
		tags:          map[string]string{},
		commits:       map[string]*commit{},
		trees:         map[string]string{},
		blobs:         map[string][]byte{},
		grants:        map[string]grant{},
		remaining:     defaultLimit,
		reset:         time.Now().Add(time.Hour).Truncate(time.Second),
	}
	s.commitLocked(s.defaultBranch, "initial commit", map[string][]byte{"README.md": []byte("# " + repo + "\n")}, nil)

	mux := http.NewServeMux()
	mux.HandleFunc(RouteRepo, s.handleRepo)
	mux.HandleFunc(RouteCommit, s.handleCommit)
	mux.HandleFunc(RouteCommits, s.handleCommits)
	mux.HandleFunc(RouteTree, s.handleTree)
	mux.HandleFunc(RouteBlob, s.handleBlob)
	mux.HandleFunc(RouteContents, s.handleGetContents)
	mux.HandleFunc(RoutePut, s.handlePutContents)
	mux.HandleFunc(RouteRateLimit, s.handleRateLimit)
	mux.HandleFunc(RouteTarball, s.handleTarball)
	mux.HandleFunc(RouteRefs, s.handleRefs)
	mux.HandleFunc(RouteRef, s.handleRef)
	mux.HandleFunc(RouteCreateRef, s.handleCreateRef)
	mux.HandleFunc(RouteUpdateRef, s.handleUpdateRef)
	mux.HandleFunc(RoutePulls, s.handlePulls)
	mux.HandleFunc(RoutePull, s.handlePull)
	mux.HandleFunc(RouteCreatePull, s.handleCreatePull)
	mux.HandleFunc(RouteEditPull, s.handleEditPull)
	s.srv = httptest.NewServer(s.front(mux))
	return s
}

// URL is the API base URL, with the trailing slash go-github requires.
func (s *Server) URL() string { return s.srv.URL + "/" }

// EnterpriseURL is the same API under GitHub Enterprise's /api/v3/ prefix.
func (s *Server) EnterpriseURL() string { return s.srv.URL + "/api/v3/" }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// RepoURL is the repository's web URL as a user would configure it.
func (s *Server) RepoURL() string { return "https://github.com/" + s.owner + "/" + s.repo }

// SetToken makes every request carry this token (as "Bearer" or "token");
// others get 401. The empty token accepts anonymous requests.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetReadOnlyToken accepts token beside SetToken's as a fine-grained
// token with read access only: GET answers as usual, and every write
// (PUT, POST, PATCH, DELETE) gets GitHub's 403 ReadOnlyMessage. The
// empty token removes it.
func (s *Server) SetReadOnlyToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly = token
}

// SetFault answers every request with status (and a GitHub-style error
// body) until called with 0.
func (s *Server) SetFault(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = status
}

// FaultDrop, given to SetRouteFault or SetDownloadFault, drops the
// connection without answering instead of answering a status.
const FaultDrop = -1

// SetRouteFault answers the requests of one route (a Route constant) with
// status and a GitHub-style error body, or drops them (FaultDrop), until
// called with 0; the other routes answer as usual. The request is counted
// like any other.
func (s *Server) SetRouteFault(pattern string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routeFaults == nil {
		s.routeFaults = map[string]int{}
	}
	s.routeFaults[pattern] = status
}

// SetDown makes the server drop every connection without answering, as an
// unreachable host or a dead proxy does. Going down also closes the
// connections clients hold open: a GET that fails on a reused keep-alive
// connection is sent again by net/http, so without this one attempt would
// be counted up to once per pooled connection, which a host that is
// really gone never sees.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
	if down {
		s.srv.CloseClientConnections()
	}
}

// SetRateLimited answers 403 with X-RateLimit-Remaining: 0 and a reset at
// until, as GitHub does when the primary rate limit is spent. The zero time
// ends it. GET /rate_limit still answers, as on GitHub.
func (s *Server) SetRateLimited(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limitedTill = until
}

// SetRemaining sets the primary rate-limit budget left in this hour; at 0
// every request but GET /rate_limit is refused with the rate-limit 403.
func (s *Server) SetRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining = n
}

// Remaining is the fake's primary rate-limit budget left.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remaining
}

// BlobSHA is git's object name for content, as GitHub reports it.
func BlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// PutFile commits content at path on the default branch and returns the new
// commit SHA.
func (s *Server) PutFile(path string, content []byte) string {
	return s.PutFiles(map[string][]byte{path: content})
}

// PutFiles commits several files in one commit on the default branch.
func (s *Server) PutFiles(files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(s.defaultBranch, fmt.Sprintf("update %d files", len(files)), files, nil)
}

// CommitFiles commits files on the default branch with message and
// returns the new commit SHA.
func (s *Server) CommitFiles(message string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(s.defaultBranch, message, files, nil)
}

// DeleteFile removes path in a new commit on the default branch.
func (s *Server) DeleteFile(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(s.defaultBranch, "delete "+path, nil, []string{path})
}

// Head returns the commit SHA the default branch points at.
func (s *Server) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.branches[s.defaultBranch]
}

// SetBranch points branch name at commit sha (creating the branch).
func (s *Server) SetBranch(name, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branches[name] = sha
}

// RenameBranch renames a branch, as GitHub's branch rename does; renaming
// the default branch changes the default.
func (s *Server) RenameBranch(from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branches[to] = s.branches[from]
	delete(s.branches, from)
	if s.defaultBranch == from {
		s.defaultBranch = to
	}
}

// SetDefaultBranch makes name, an existing branch, the default branch (and
// so what HEAD resolves to), as a repository's settings do.
func (s *Server) SetDefaultBranch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.branches[name]; !ok {
		panic("fakegithub: SetDefaultBranch of unknown branch " + name)
	}
	s.defaultBranch = name
}

// SetTag points tag name at commit sha.
func (s *Server) SetTag(name, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags[name] = sha
}

func (s *Server) commitLocked(branch, message string, put map[string][]byte, del []string) string {
	parent := s.branches[branch]
	files := map[string]string{}
	if p := s.commits[parent]; p != nil {
		maps.Copy(files, p.files)
	}
	for p, content := range put {
		sha := BlobSHA(content)
		s.blobs[sha] = append([]byte(nil), content...)
		files[p] = sha
	}
	for _, p := range del {
		delete(files, p)
	}
	s.seq++
	c := &commit{parent: parent, message: message, files: files, date: commitEpoch.Add(time.Duration(s.seq) * time.Hour)}
	c.sha = hashHex("commit", strconv.Itoa(s.seq), parent, message)
	c.tree = hashHex("tree", c.sha)
	s.commits[c.sha] = c
	s.trees[c.tree] = c.sha
	s.branches[branch] = c.sha
	return c.sha
}

func hashHex(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Count returns how many requests matched pattern (a Route constant).
func (s *Server) Count(pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Pattern == pattern {
			n++
		}
	}
	return n
}

// Total returns how many requests reached the server, dropped ones included.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns every request recorded since the last Reset.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Reset forgets the recorded requests and downloads.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.downloads = nil
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// front does what GitHub does before routing: drop connections when down,
// fail on demand, check the token, enforce the rate limit. It also records
// every request.
func (s *Server) front(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		if p, ok := strings.CutPrefix(r2.URL.Path, "/api/v3/"); ok {
			r2.URL.Path = "/" + p
			r2.URL.RawPath = ""
		}
		rec := Request{
			Method:      r.Method,
			Path:        r2.URL.Path,
			Query:       r2.URL.RawQuery,
			Accept:      r.Header.Get("Accept"),
			IfNoneMatch: r.Header.Get("If-None-Match"),
			Authorized:  r.Header.Get("Authorization") != "",
		}
		if strings.HasPrefix(r2.URL.Path, downloadPrefix) {
			// Another host on GitHub: none of the API's rules apply.
			s.serveDownload(w, r2)
			return
		}
		if n, ok := strings.CutPrefix(r2.URL.Path, mergePrefix); ok && r.Method == http.MethodPost {
			s.serveMerge(w, n)
			return
		}
		_, rec.Pattern = mux.Handler(r2)
		r2.Pattern = rec.Pattern
		recorded := false
		record := func() {
			s.mu.Lock()
			s.requests = append(s.requests, rec)
			s.mu.Unlock()
			recorded = true
		}
		defer func() {
			if !recorded {
				record()
			}
		}()

		s.mu.Lock()
		down, fault, token, readOnly, limitedTill := s.down, s.fault, s.token, s.readOnly, s.limitedTill
		routeFault := s.routeFaults[rec.Pattern]
		if s.remaining <= 0 && limitedTill.Before(s.reset) {
			limitedTill = s.reset // the budget is spent until the reset
		}
		s.mu.Unlock()

		if down || routeFault == FaultDrop {
			// Recorded before the connection drops: a client that has seen
			// the drop finds its request in Requests.
			record()
			drop(w)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { rec.Status = sw.status }()
		switch {
		case fault != 0:
			s.writeError(sw, r2, fault, http.StatusText(fault))
			return
		case routeFault != 0:
			s.writeError(sw, r2, routeFault, http.StatusText(routeFault))
			return
		case token != "" && !hasToken(r, token) && (readOnly == "" || !hasToken(r, readOnly)):
			msg := "Bad credentials"
			if r.Header.Get("Authorization") == "" {
				msg = "Requires authentication"
			}
			s.writeError(sw, r2, http.StatusUnauthorized, msg)
			return
		case readOnly != "" && hasToken(r, readOnly) && r.Method != http.MethodGet && r.Method != http.MethodHead:
			s.writeError(sw, r2, http.StatusForbidden, ReadOnlyMessage)
			return
		case rec.Pattern != RouteRateLimit && time.Now().Before(limitedTill):
			s.writeError(sw, r2, http.StatusForbidden, RateLimitMessage)
			return
		}
		mux.ServeHTTP(sw, r2)
	})
}

// drop closes the connection without answering.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func hasToken(r *http.Request, token string) bool {
	auth := r.Header.Get("Authorization")
	for _, scheme := range []string{"Bearer ", "token "} {
		if v, ok := strings.CutPrefix(auth, scheme); ok && v == token {
			return true
		}
	}
	return false
}

// rateHeaders writes the rate-limit headers and, unless the answer is a 304
// or the rate_limit endpoint, spends one request of the budget.
func (s *Server) rateHeaders(w http.ResponseWriter, r *http.Request, spend bool) {
	s.mu.Lock()
	if spend && r.Pattern != RouteRateLimit && s.remaining > 0 {
		s.remaining--
	}
	remaining, reset := s.remaining, s.reset
	if time.Now().Before(s.limitedTill) {
		remaining, reset = 0, s.limitedTill
	}
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(defaultLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(defaultLimit-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.writeErrorWith(w, r, status, message, nil)
}

// writeErrorWith is writeError with GitHub's list of what failed (a 422's
// "errors"), left out when nil.
func (s *Server) writeErrorWith(w http.ResponseWriter, r *http.Request, status int, message string, errs []any) {
	s.rateHeaders(w, r, true)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	doc := "https://docs.github.com/rest"
	if status == http.StatusForbidden && message == RateLimitMessage {
		doc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	}
	body := map[string]any{"message": message, "documentation_url": doc, "status": strconv.Itoa(status)}
	if errs != nil {
		body["errors"] = errs
	}
	json.NewEncoder(w).Encode(body)
}

// writeBody answers 200 (or status) with a strong ETag over the
// representation, which varies with Accept and the caller's credentials as
// GitHub's does, or 304 when If-None-Match names that ETag.
func (s *Server) writeBody(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	etag := `"` + hashHex(r.Header.Get("Accept"), r.Header.Get("Authorization"), string(body)) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	if r.Method == http.MethodGet && etagMatch(r.Header.Get("If-None-Match"), etag) {
		s.rateHeaders(w, r, false)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.rateHeaders(w, r, true)
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(body)
}

// etagMatch applies If-None-Match's weak comparison (RFC 9110 13.1.2).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.writeBody(w, r, status, "application/json; charset=utf-8", body)
}

// repoOK answers 404 for any repository but the fake's.
func (s *Server) repoOK(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("owner") == s.owner && r.PathValue("repo") == s.repo {
		return true
	}
	s.writeError(w, r, http.StatusNotFound, "Not Found")
	return false
}

// readBody is the start of every write: it checks the repository r names
// (404 as repoOK) and decodes r's JSON body into v, answering 400 as
// GitHub does when it is not JSON.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if !s.repoOK(w, r) {
		return false
	}
	data, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err := json.Unmarshal(data, v); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (s *Server) htmlURL(parts ...string) string {
	return "https://github.com/" + path.Join(append([]string{s.owner, s.repo}, parts...)...)
}

func (s *Server) handleRepo(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"id": 1, "name": s.repo, "full_name": s.owner + "/" + s.repo,
		"default_branch": s.defBranch(), "private": false, "html_url": s.htmlURL(),
	})
}

func (s *Server) defBranch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.defaultBranch
}

// resolve finds the commit a ref names: a branch, a tag, HEAD, or a full SHA.
// s.mu must not be held.
func (s *Server) resolve(ref string) *commit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref == "HEAD" {
		ref = s.defaultBranch
	}
	if sha, ok := s.branches[ref]; ok {
		return s.commits[sha]
	}
	if sha, ok := s.tags[ref]; ok {
		return s.commits[sha]
	}
	return s.commits[ref]
}

func (s *Server) handleCommit(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	ref := r.PathValue("ref")
	c := s.resolve(ref)
	if c == nil {
		s.writeError(w, r, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), ".sha") {
		s.writeBody(w, r, http.StatusOK, "application/vnd.github.sha; charset=utf-8", []byte(c.sha))
		return
	}
	parents := []map[string]string{}
	if c.parent != "" {
		parents = append(parents, map[string]string{"sha": c.parent})
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"sha":      c.sha,
		"html_url": s.htmlURL("commit", c.sha),
		"commit":   map[string]any{"message": c.message, "tree": map[string]string{"sha": c.tree}},
		"parents":  parents,
	})
}

// handleCommits lists, newest first, the commits reachable from sha (a
// ref; default: the default branch) that changed path (every commit when
// path is empty), per_page of them (GitHub's default 30). The fake's
// history is linear, so "changed" is "the blob differs from the parent's".
func (s *Server) handleCommits(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	q := r.URL.Query()
	ref := q.Get("sha")
	if ref == "" {
		ref = "HEAD"
	}
	c := s.resolve(ref)
	if c == nil {
		s.writeError(w, r, http.StatusNotFound, "No commit found for SHA: "+ref)
		return
	}
	perPage := 30
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n > 0 {
		perPage = min(n, 100)
	}
	p := strings.Trim(q.Get("path"), "/")
	out := []map[string]any{}
	s.mu.Lock()
	for ; c != nil && len(out) < perPage; c = s.commits[c.parent] {
		if p != "" {
			var before string
			if parent := s.commits[c.parent]; parent != nil {
				before = parent.files[p]
			}
			if c.files[p] == before {
				continue
			}
		}
		who := map[string]any{"name": CommitAuthor, "email": "author@example.com", "date": c.date.Format(time.RFC3339)}
		out = append(out, map[string]any{
			"sha":      c.sha,
			"html_url": s.htmlURL("commit", c.sha),
			"commit":   map[string]any{"message": c.message, "author": who, "committer": who, "tree": map[string]string{"sha": c.tree}},
		})
	}
	s.mu.Unlock()
	s.writeJSON(w, r, http.StatusOK, out)
}

type treeEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size *int   `json:"size,omitempty"`
}

func (s *Server) handleTree(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	sha := r.PathValue("sha")
	s.mu.Lock()
	if commitSHA, ok := s.trees[sha]; ok {
		sha = commitSHA
	}
	s.mu.Unlock()
	c := s.resolve(sha)
	if c == nil {
		s.writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	recursive := r.URL.Query().Get("recursive") != ""
	var entries []treeEntry
	dirs := map[string]bool{}
	s.mu.Lock()
	for p, blob := range c.files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		if !recursive && strings.Contains(p, "/") {
			continue
		}
		size := len(s.blobs[blob])
		entries = append(entries, treeEntry{Path: p, Mode: "100644", Type: "blob", SHA: blob, Size: &size})
	}
	s.mu.Unlock()
	for d := range dirs {
		if !recursive && strings.Contains(d, "/") {
			continue
		}
		entries = append(entries, treeEntry{Path: d, Mode: "040000", Type: "tree", SHA: hashHex("dir", c.sha, d)})
	}
	slices.SortFunc(entries, func(a, b treeEntry) int { return strings.Compare(a.Path, b.Path) })
	s.writeJSON(w, r, http.StatusOK, map[string]any{"sha": c.tree, "tree": entries, "truncated": false})
}

func (s *Server) handleBlob(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	sha := r.PathValue("sha")
	s.mu.Lock()
	content, ok := s.blobs[sha]
	s.mu.Unlock()
	if !ok {
		s.writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	if strings.Contains(r.Header.Get("Accept"), ".raw") {
		s.writeBody(w, r, http.StatusOK, "application/vnd.github.raw", content)
		return
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"sha": sha, "size": len(content), "encoding": "base64", "content": wrapBase64(content),
	})
}

// wrapBase64 encodes as GitHub does: base64 in lines of 60 characters.
func wrapBase64(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	for len(enc) > 60 {
		sb.WriteString(enc[:60])
		sb.WriteByte('\n')
		enc = enc[60:]
	}
	sb.WriteString(enc)
	sb.WriteByte('\n')
	return sb.String()
}

func (s *Server) fileJSON(ref, p, sha string, content []byte, withContent bool) map[string]any {
	m := map[string]any{
		"type": "file", "name": path.Base(p), "path": p, "sha": sha, "size": len(content),
		"html_url": s.htmlURL("blob", ref, p),
	}
	if withContent {
		m["encoding"] = "base64"
		m["content"] = wrapBase64(content)
	}
	return m
}

func (s *Server) handleGetContents(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = s.defBranch()
	}
	c := s.resolve(ref)
	if c == nil {
		s.writeError(w, r, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	p := strings.Trim(r.PathValue("path"), "/")
	s.mu.Lock()
	sha, isFile := c.files[p]
	content := s.blobs[sha]
	var dir []map[string]any
	for fp, fsha := range c.files {
		if path.Dir(fp) == p {
			dir = append(dir, s.fileJSON(ref, fp, fsha, s.blobs[fsha], false))
		}
	}
	s.mu.Unlock()
	switch {
	case isFile:
		s.writeJSON(w, r, http.StatusOK, s.fileJSON(ref, p, sha, content, true))
	case len(dir) > 0:
		slices.SortFunc(dir, func(a, b map[string]any) int { return strings.Compare(a["path"].(string), b["path"].(string)) })
		s.writeJSON(w, r, http.StatusOK, dir)
	default:
		s.writeError(w, r, http.StatusNotFound, "Not Found")
	}
}

func (s *Server) handlePutContents(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message *string `json:"message"`
		Content *string `json:"content"`
		SHA     *string `json:"sha"`
		Branch  *string `json:"branch"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	if body.Message == nil || body.Content == nil {
		s.writeError(w, r, http.StatusUnprocessableEntity, "Invalid request.\n\n\"message\" and \"content\" are required.")
		return
	}
	content, err := base64.StdEncoding.DecodeString(*body.Content)
	if err != nil {
		s.writeError(w, r, http.StatusUnprocessableEntity, "content is not valid Base64")
		return
	}
	p := strings.Trim(r.PathValue("path"), "/")

	s.mu.Lock()
	branch := s.defaultBranch
	if body.Branch != nil {
		branch = *body.Branch
	}
	head, ok := s.branches[branch]
	if !ok {
		s.mu.Unlock()
		s.writeError(w, r, http.StatusNotFound, "Branch "+branch+" not found")
		return
	}
	current, exists := s.commits[head].files[p]
	switch {
	case exists && body.SHA == nil:
		s.mu.Unlock()
		s.writeError(w, r, http.StatusUnprocessableEntity, "Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	case exists && *body.SHA != current, !exists && body.SHA != nil:
		s.mu.Unlock()
		s.writeError(w, r, http.StatusConflict, p+" does not match "+derefOr(body.SHA, ""))
		return
	}
	sha := s.commitLocked(branch, *body.Message, map[string][]byte{p: content}, nil)
	s.mu.Unlock()

	status := http.StatusOK
	if !exists {
		status = http.StatusCreated
	}
	s.writeJSON(w, r, status, map[string]any{
		"content": s.fileJSON(branch, p, BlobSHA(content), content, false),
		"commit":  map[string]any{"sha": sha, "html_url": s.htmlURL("commit", sha), "message": *body.Message},
	})
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func (s *Server) handleRateLimit(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	remaining, reset := s.remaining, s.reset
	if time.Now().Before(s.limitedTill) {
		remaining, reset = 0, s.limitedTill
	}
	s.mu.Unlock()
	core := map[string]any{"limit": defaultLimit, "remaining": remaining, "reset": reset.Unix(), "used": defaultLimit - remaining, "resource": "core"}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"resources": map[string]any{"core": core}, "rate": core})
}

// Library is a generated template library: the files to commit and what a
// correct loader must make of them.
type Library struct {
	Files     map[string][]byte // repository path → content
	Valid     []string          // template names a catalog must list, sorted
	Invalid   []string          // paths a catalog must report invalid (bad content), sorted
	Oversized []string          // paths over MaxFileSize, sorted
	Ignored   []string          // paths a loader must not even look at (not .json, or outside Dir)
}

// LibraryOptions sizes a generated library.
type LibraryOptions struct {
	Dir         string // default "templates"
	Valid       int
	Invalid     int
	Oversized   int
	MaxFileSize int // default 102400; oversized files are a little larger
	// TemplateBytes, when set, makes each valid template about that many
	// bytes, with several variables and a placeholder every few words, as
	// a real library's templates are: memory and load tests need files of
	// a realistic size and density, not a one-line section.
	TemplateBytes int
}

// GenerateLibrary builds a deterministic library of templates in the format
// TEMPLATES.md describes. Invalid files cycle through the ways templates go
// wrong (malformed JSON, missing results, bad version, non-string variable,
// empty results, missing description).
func GenerateLibrary(opts LibraryOptions) Library {
	if opts.Dir == "" {
		opts.Dir = "templates"
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = 102400
	}
	lib := Library{Files: map[string][]byte{}}
	for i := range opts.Valid {
		name := fmt.Sprintf("Generated_%03d", i)
		if opts.TemplateBytes > 0 {
			lib.Files[opts.Dir+"/"+name+".json"] = denseTemplate(name, i, opts.TemplateBytes)
		} else {
			lib.Files[opts.Dir+"/"+name+".json"] = ValidTemplate(name, fmt.Sprintf("Write about {{subject}} (template %d).", i))
		}
		lib.Valid = append(lib.Valid, name)
	}
	for i := range opts.Invalid {
		name := fmt.Sprintf("Broken_%03d", i)
		p := opts.Dir + "/" + name + ".json"
		lib.Files[p] = invalidTemplate(name, i)
		lib.Invalid = append(lib.Invalid, p)
	}
	for i := range opts.Oversized {
		name := fmt.Sprintf("Huge_%03d", i)
		p := opts.Dir + "/" + name + ".json"
		pad := strings.Repeat("lorem ipsum ", opts.MaxFileSize/12+100)
		lib.Files[p] = ValidTemplate(name, pad+"{{subject}}")
		lib.Oversized = append(lib.Oversized, p)
	}
	lib.Files[opts.Dir+"/README.md"] = []byte("Templates live here.\n")
	lib.Files["other/Outside.json"] = ValidTemplate("Outside", "not in the templates folder {{subject}}")
	lib.Ignored = []string{opts.Dir + "/README.md", "other/Outside.json"}
	slices.Sort(lib.Valid)
	slices.Sort(lib.Invalid)
	slices.Sort(lib.Oversized)
	return lib
}

// ValidTemplate returns a valid template named name with one required
// variable, subject, and one section with the given content.
func ValidTemplate(name, content string) []byte {
	t := map[string]any{
		"metadata": map[string]any{
			"name": name, "description": "Generated template " + name, "version": "1.0.0",
			"author": "fakegithub", "tags": []string{"generated"}, "category": "Testing",
		},
		"variables": []map[string]any{{"name": "subject", "type": "string", "description": "What to write about", "required": true}},
		"results":   []map[string]any{{"name": "Task", "content": content, "format": "markdown"}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// denseVariables are the variables of a dense template; its sections use
// all of them.
var denseVariables = []string{"subject", "audience", "tone", "goal", "product", "region", "deadline", "format"}

// denseTemplate returns a valid template named name of about size bytes:
// the variables above, with descriptions and examples, and three sections
// of sentences that each use two of them.
func denseTemplate(name string, i, size int) []byte {
	vars := make([]map[string]any, 0, len(denseVariables))
	for j, v := range denseVariables {
		vars = append(vars, map[string]any{
			"name": v, "type": "string", "required": j < 3,
			"description": "The " + v + " the prompt is about",
			"examples":    []string{"first " + v, "second " + v},
		})
	}
	results := make([]map[string]any, 0, 3)
	per := max(size-2600, 300) / 3
	for s := range 3 {
		var b strings.Builder
		for k := 0; b.Len() < per; k++ {
			a := denseVariables[(i+s+k)%len(denseVariables)]
			c := denseVariables[(i+2*s+3*k+1)%len(denseVariables)]
			fmt.Fprintf(&b, "Step %d: explain {{%s}} to {{%s}} and keep it short.\n", k+1, a, c)
		}
		results = append(results, map[string]any{"name": fmt.Sprintf("Section %d", s+1), "content": b.String(), "format": "markdown", "order": s + 1})
	}
	t := map[string]any{
		"metadata": map[string]any{
			"name": name, "description": "Generated template " + name + " with dense placeholders", "version": "1.0.0",
			"author": "fakegithub", "tags": []string{"generated", fmt.Sprintf("group%d", i%10)}, "category": "Testing",
			"lastUpdated": "2025-01-06",
		},
		"variables": vars,
		"results":   results,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func invalidTemplate(name string, i int) []byte {
	meta := `"metadata": {"name": "` + name + `", "description": "Broken on purpose", "version": "1.0.0"}`
	vars := `"variables": [{"name": "subject", "type": "string", "description": "What"}]`
	results := `"results": [{"name": "Task", "content": "About {{subject}}"}]`
	switch i % 6 {
	case 0:
		return []byte(`{` + meta + `, ` + vars + `, "results": [`) // malformed JSON
	case 1:
		return []byte(`{` + meta + `, ` + vars + `}`) // no results
	case 2:
		return []byte(`{"metadata": {"name": "` + name + `", "description": "Bad version", "version": "v1"}, ` + vars + `, ` + results + `}`)
	case 3:
		return []byte(`{` + meta + `, "variables": [{"name": "subject", "type": "int", "description": "What"}], ` + results + `}`)
	case 4:
		return []byte(`{` + meta + `, ` + vars + `, "results": []}`)
	default:
		return []byte(`{"metadata": {"name": "` + name + `", "version": "1.0.0"}, ` + vars + `, ` + results + `}`)
	}
}
