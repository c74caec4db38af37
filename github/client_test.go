package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
)

func (h *harness) client(edit ...func(*Config)) *Client {
	h.t.Helper()
	cfg := h.config()
	for _, e := range edit {
		e(&cfg)
	}
	st, err := cfg.resolve()
	if err != nil {
		h.t.Fatalf("resolve: %v", err)
	}
	return newClient(st)
}

// hookTransport runs before for each request, then sends it; edit may
// rewrite the response.
type hookTransport struct {
	mu     sync.Mutex
	before func(*http.Request)
	after  func(*http.Request, *http.Response) *http.Response
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	before, after := h.before, h.after
	h.mu.Unlock()
	if before != nil {
		before(r)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && after != nil {
		resp = after(r, resp)
	}
	return resp, err
}

func TestResolveRef(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{Files: map[string][]byte{"templates/A.json": fakegithub.ValidTemplate("A", "a {{subject}}")}})
	head := h.fake.Head()
	h.fake.SetBranch("feature/x", head)
	h.fake.SetTag("v1.0.0", head)
	c := h.client()
	ctx := ctxT(t)

	sha, etag, notMod, err := c.ResolveRef(ctx, "main", "")
	if err != nil || sha != head || etag == "" || notMod {
		t.Fatalf("ResolveRef(main) = %q, %q, %v, %v; want %s with an ETag", sha, etag, notMod, err, head)
	}
	if !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag %s is not a quoted strong ETag", etag)
	}
	reqs := h.fake.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Accept, "sha") {
		t.Errorf("requests = %+v, want one with the SHA media type", reqs)
	}

	tests := []struct {
		name        string
		ref, etag   string
		prepare     func()
		wantSHA     func() string
		wantNotMod  bool
		wantStatus  []int
		wantETagNew bool
	}{
		{name: "unchanged with the ETag is a 304", ref: "main", etag: etag, wantNotMod: true, wantStatus: []int{304}},
		{name: "the ETag is sent verbatim", ref: "main", etag: "W/" + etag, wantNotMod: true, wantStatus: []int{304}},
		{name: "a stale ETag gets the new commit", ref: "main", etag: `"something-else"`, wantSHA: func() string { return head }, wantStatus: []int{200}},
		{name: "branch with a slash", ref: "feature/x", wantSHA: func() string { return head }, wantStatus: []int{200}},
		{name: "tag", ref: "v1.0.0", wantSHA: func() string { return head }, wantStatus: []int{200}},
		{name: "full SHA", ref: head, wantSHA: func() string { return head }, wantStatus: []int{200}},
		{name: "empty ref is the default branch, asked as HEAD", ref: "", wantSHA: func() string { return head }, wantStatus: []int{200}},
		{name: "a new commit changes the answer", ref: "main", etag: etag,
			prepare: func() { h.fake.PutFile("templates/B.json", []byte("{}")) },
			wantSHA: func() string { return h.fake.Head() }, wantStatus: []int{200}, wantETagNew: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prepare != nil {
				tt.prepare()
			}
			h.fake.Reset()
			sha, newETag, notMod, err := c.ResolveRef(ctx, tt.ref, tt.etag)
			if err != nil {
				t.Fatal(err)
			}
			if notMod != tt.wantNotMod {
				t.Errorf("notModified = %v, want %v", notMod, tt.wantNotMod)
			}
			if tt.wantNotMod && (sha != "" || newETag != tt.etag) {
				t.Errorf("on 304: sha %q etag %q; want no SHA and the same ETag", sha, newETag)
			}
			if tt.wantSHA != nil && sha != tt.wantSHA() {
				t.Errorf("sha = %s, want %s", sha, tt.wantSHA())
			}
			if tt.wantETagNew && (newETag == tt.etag || newETag == "") {
				t.Errorf("ETag not renewed: %q", newETag)
			}
			var statuses []int
			for _, r := range h.fake.Requests() {
				statuses = append(statuses, r.Status)
				want := "/repos/acme/prompts/commits/" + tt.ref
				if tt.ref == "" {
					want += "HEAD"
				}
				if r.Path != want {
					t.Errorf("asked %s, want %s", r.Path, want)
				}
				if tt.etag != "" && r.Pattern == fakegithub.RouteCommit && r.IfNoneMatch != tt.etag {
					t.Errorf("If-None-Match = %q, want %q verbatim", r.IfNoneMatch, tt.etag)
				}
			}
			if diff := cmp.Diff(tt.wantStatus, statuses); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnterpriseAPIURL(t *testing.T) {
	t.Parallel()
	// The fake answers under /api/v3/ as GitHub Enterprise Server does;
	// the URL is used as given.
	h := newHarness(t, standardLibrary())
	s := h.source(func(c *Config) {
		c.RepoURL = "https://ghe.example.com/acme/prompts"
		c.APIURL = h.fake.EnterpriseURL()
	})
	cat, err := s.Load(ctxT(t))
	if err != nil || cat.Len() != len(h.lib.Valid) {
		t.Fatalf("Load via the Enterprise prefix = %d templates, %v", cat.Len(), err)
	}
	if loc := cat.Info().Location; loc != "https://ghe.example.com/acme/prompts" {
		t.Errorf("location = %q, want the Enterprise web URL", loc)
	}
	for _, r := range h.fake.Requests() {
		if r.Pattern == "" {
			t.Errorf("request %s %s matched no route", r.Method, r.Path)
		}
	}
}

func TestTree(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"templates/A.json":      []byte("a"),
		"templates/team/B.json": []byte("bb"),
		"templates/notes.md":    []byte("x"),
		// The formats teams already keep are templates too; other YAML is not.
		"templates/summarize.prompt.yml": []byte("s"),
		"templates/greet.prompt":         []byte("g"),
		"templates/chat.prompty":         []byte("c"),
		"templates/config.yml":           []byte("x"),
		"templates/.drafts/X.json":       []byte("x"), // hidden: never a template, as in a folder source
		"templates/.Y.json":              []byte("y"),
		".github/Z.json":                 []byte("z"),
		"templates-old/C.json":           []byte("c"),
		"other/D.json":                   []byte("d"),
		"README.json":                    []byte("r"),
		"prompts/sub/deep/E.json":        []byte("eeeee"),
	}
	entry := func(p string) TreeEntry {
		return TreeEntry{Path: p, SHA: fakegithub.BlobSHA(files[p]), Size: len(files[p])}
	}
	tests := []struct {
		path    string
		want    []TreeEntry
		wantErr string
	}{
		{path: "templates", want: []TreeEntry{entry("templates/A.json"), entry("templates/chat.prompty"), entry("templates/greet.prompt"),
			entry("templates/summarize.prompt.yml"), entry("templates/team/B.json")}},
		{path: "prompts/sub", want: []TreeEntry{entry("prompts/sub/deep/E.json")}},
		{path: ".", want: []TreeEntry{entry("README.json"), entry("other/D.json"), entry("prompts/sub/deep/E.json"),
			entry("templates-old/C.json"), entry("templates/A.json"), entry("templates/chat.prompty"), entry("templates/greet.prompt"),
			entry("templates/summarize.prompt.yml"), entry("templates/team/B.json")}},
		{path: "missing", wantErr: fault.GitHubNotFound},
	}
	h := newHarness(t, fakegithub.Library{Files: files})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c := h.client(func(c *Config) { c.Path = tt.path })
			got, _, _, err := c.treeFiles(ctxT(t), h.fake.Head())
			if tt.wantErr != "" {
				if fault.CodeOf(err) != tt.wantErr || !strings.Contains(fault.As(err).Why, `folder "missing"`) {
					t.Fatalf("Tree error = %v, want %s naming the folder", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlob(t *testing.T) {
	t.Parallel()
	content := fakegithub.ValidTemplate("A", "a {{subject}}")
	h := newHarness(t, fakegithub.Library{Files: map[string][]byte{"templates/A.json": content}})
	sha := fakegithub.BlobSHA(content)
	hook := &hookTransport{}
	c := h.client(func(c *Config) { c.HTTPClient = &http.Client{Transport: hook} })

	got, err := c.Blob(ctxT(t), sha)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("Blob = %q, %v", got, err)
	}
	if r := h.fake.Requests(); len(r) != 1 || !strings.Contains(r[0].Accept, "raw") {
		t.Errorf("requests = %+v, want one raw blob request", r)
	}

	// A body that does not hash to the SHA (a meddling proxy) is refused.
	hook.after = func(_ *http.Request, resp *http.Response) *http.Response {
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader("tampered"))
		resp.ContentLength = -1
		return resp
	}
	if _, err := c.Blob(ctxT(t), sha); fault.CodeOf(err) != fault.NetworkError || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("tampered blob: %v, want NETWORK_ERROR about the SHA", err)
	}
	hook.after = nil

	if _, err := c.Blob(ctxT(t), strings.Repeat("0", 40)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing blob: %v, want ErrNotFound", err)
	}
}

func TestBlobsBoundedParallelism(t *testing.T) {
	t.Parallel()
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 40})
	h := newHarness(t, lib)
	var mu sync.Mutex
	inFlight, peak, released := 0, 0, false
	full := make(chan struct{}) // closed once blobParallelism requests are in flight together
	hook := &hookTransport{
		before: func(r *http.Request) {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			if inFlight == blobParallelism && !released {
				released = true
				close(full)
			}
			mu.Unlock()
			// The first requests wait for each other: a fast server could
			// otherwise answer each before the next starts, and the peak
			// would say nothing about parallelism. A client that never
			// has that many in flight fails on the deadline instead.
			select {
			case <-full:
			case <-r.Context().Done():
			}
		},
		after: func(_ *http.Request, r *http.Response) *http.Response {
			mu.Lock()
			inFlight--
			mu.Unlock()
			return r
		},
	}
	c := h.client(func(c *Config) { c.HTTPClient = &http.Client{Transport: hook} })
	var shas []string
	for _, content := range lib.Files {
		shas = append(shas, fakegithub.BlobSHA(content))
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	got, err := c.Blobs(ctx, shas)
	if err != nil || len(got) != len(shas) {
		t.Fatalf("Blobs = %d, %v; want %d (never %d requests in flight at once?)", len(got), err, len(shas), blobParallelism)
	}
	if peak < 2 || peak > blobParallelism {
		t.Errorf("%d requests in flight at once, want more than one and at most %d", peak, blobParallelism)
	}
	// One failure fails the batch.
	if _, err := c.Blobs(ctxT(t), append(shas[:3:3], strings.Repeat("0", 40))); !errors.Is(err, ErrNotFound) {
		t.Errorf("Blobs with a missing blob: %v, want ErrNotFound", err)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	c := h.client()
	rl, err := c.RateLimit(ctxT(t))
	if err != nil || rl.Limit != 5000 || rl.Remaining != h.fake.Remaining() || rl.Reset.IsZero() {
		t.Fatalf("RateLimit = %+v, %v", rl, err)
	}

	reset := time.Now().Add(time.Hour)
	h.fake.SetRateLimited(reset)
	h.fake.Reset()
	_, _, _, err = c.ResolveRef(ctxT(t), "main", "")
	f := fault.As(err)
	if f == nil || f.Code != fault.GitHubRateLimited || f.RetryAfter < 50*time.Minute {
		t.Fatalf("rate-limited ResolveRef = %v, want GITHUB_RATE_LIMITED with RetryAfter near an hour", err)
	}
	// go-github now answers from what it knows, without calling out; that
	// is a rate-limit error too, not a generic failure.
	_, _, _, err = c.ResolveRef(ctxT(t), "main", "")
	if fault.CodeOf(err) != fault.GitHubRateLimited || !errors.Is(err, ErrRateLimited) {
		t.Errorf("pre-checked ResolveRef = %v, want GITHUB_RATE_LIMITED", err)
	}
	if n := h.fake.Count(fakegithub.RouteCommit); n != 1 {
		t.Errorf("%d commit requests reached GitHub while rate-limited, want 1", n)
	}
	// The rate_limit endpoint itself still answers.
	if rl, err := c.RateLimit(ctxT(t)); err != nil || rl.Remaining != 0 || !rl.Reset.Equal(reset.Truncate(time.Second)) {
		t.Errorf("RateLimit while limited = %+v, %v; want 0 remaining until %v", rl, err, reset)
	}
}

func TestPutFile(t *testing.T) {
	t.Parallel()
	existing := fakegithub.ValidTemplate("Existing", "old {{subject}}")
	newer := fakegithub.ValidTemplate("Existing", "new {{subject}}")
	tests := []struct {
		name       string
		path       string
		content    []byte
		message    string
		branch     string
		expect     []byte                     // the version the change is based on; nil: a new file
		between    func(f *fakegithub.Server) // runs before the write
		wantCode   string
		wantStatus int // of the PUT
		wantNoReq  bool
	}{
		{name: "create", path: "templates/New.json", content: fakegithub.ValidTemplate("New", "x {{subject}}"), message: "add New", wantStatus: 201},
		{name: "update", path: "templates/Existing.json", content: newer, expect: existing, message: "update Existing", wantStatus: 200},
		{name: "update on a named branch", path: "templates/Existing.json", content: newer, expect: existing, message: "update", branch: "main", wantStatus: 200},
		{name: "in a hidden folder", path: ".github/prompts/New.json", content: newer, message: "add", wantStatus: 201},
		{name: "someone changed the file meanwhile", path: "templates/Existing.json", content: newer, expect: existing, message: "update",
			between: func(f *fakegithub.Server) {
				f.PutFile("templates/Existing.json", fakegithub.ValidTemplate("Existing", "theirs {{subject}}"))
			},
			wantCode: fault.WriteConflict, wantStatus: 409},
		{name: "someone created the file meanwhile", path: "templates/Race.json", content: newer, message: "add",
			between: func(f *fakegithub.Server) {
				f.PutFile("templates/Race.json", fakegithub.ValidTemplate("Race", "theirs {{subject}}"))
			},
			wantCode: fault.WriteConflict, wantStatus: 422},
		{name: "unknown branch", path: "templates/New.json", content: newer, message: "add", branch: "nope",
			wantCode: fault.GitHubNotFound, wantStatus: 404},
		{name: "too large", path: "templates/Big.json", content: bytes.Repeat([]byte("x"), DefaultMaxFileSize+1), message: "add",
			wantCode: fault.TemplateTooLarge, wantNoReq: true},
		{name: "path escapes", path: "templates/../../etc/x.json", content: newer, message: "add", wantCode: fault.InvalidArgument, wantNoReq: true},
		{name: "absolute path", path: "/templates/x.json", content: newer, message: "add", wantCode: fault.InvalidArgument, wantNoReq: true},
		{name: "path not clean", path: "templates/./x.json", content: newer, message: "add", wantCode: fault.InvalidArgument, wantNoReq: true},
		{name: "no path", path: "", content: newer, message: "add", wantCode: fault.InvalidArgument, wantNoReq: true},
		{name: "no message", path: "templates/New.json", content: newer, message: " ", wantCode: fault.InvalidArgument, wantNoReq: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakegithub.Library{Files: map[string][]byte{"templates/Existing.json": existing}})
			hook := &hookTransport{}
			hook.before = func(r *http.Request) {
				if r.Method == http.MethodPut && tt.between != nil {
					tt.between(h.fake)
				}
			}
			c := h.client(func(c *Config) { c.HTTPClient = &http.Client{Transport: hook} })
			expect := ""
			if tt.expect != nil {
				expect = fakegithub.BlobSHA(tt.expect)
			}
			url, sha, err := c.putFile(ctxT(t), tt.path, tt.content, tt.message, tt.branch, expect)
			if tt.wantNoReq && h.fake.Total() != 0 {
				t.Errorf("%d requests for a write refused locally", h.fake.Total())
			}
			var put *fakegithub.Request
			for _, r := range h.fake.Requests() {
				if r.Pattern == fakegithub.RoutePut {
					put = &r
				}
			}
			if tt.wantStatus != 0 && (put == nil || put.Status != tt.wantStatus) {
				t.Errorf("PUT = %+v, want status %d", put, tt.wantStatus)
			}
			if tt.wantCode != "" {
				f := fault.As(err)
				if f == nil || f.Code != tt.wantCode || f.How == "" {
					t.Fatalf("putFile error = %v, want %s with a fix", err, tt.wantCode)
				}
				if tt.wantCode == fault.WriteConflict && (!errors.Is(err, ErrConflict) || !strings.Contains(f.How, "refresh")) {
					t.Errorf("conflict = %v / %q; want ErrConflict and advice to refresh and retry", err, f.How)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			head := h.fake.Head()
			if url != "https://github.com/acme/prompts/commit/"+head || sha != head {
				t.Errorf("commit URL = %q, SHA %q; want the new head %s", url, sha, head)
			}
			blob, err := c.Blob(ctxT(t), fakegithub.BlobSHA(tt.content))
			if err != nil || !bytes.Equal(blob, tt.content) {
				t.Errorf("saved content not in the repository: %v", err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	s := h.source(func(c *Config) { c.Ref = "" })
	r, err := s.Check(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Repository != "https://github.com/acme/prompts" || r.Branch != "main" || r.Commit != h.fake.Head() ||
		r.Valid != len(h.lib.Valid) || len(r.Invalid) != len(h.lib.Invalid)+len(h.lib.Oversized) ||
		r.RateLimit == nil || r.RateLimit.Limit != 5000 || !r.Authenticated || r.Stale != nil {
		t.Errorf("report = %+v", r)
	}
	// Lists are lists in JSON even when empty, as in the folder's check.
	if b, err := json.Marshal(r); err != nil || !bytes.Contains(b, []byte(`"flows":[]`)) || !bytes.Contains(b, []byte(`"missingResources":[]`)) {
		t.Errorf("report JSON = %s, %v; want empty lists for flows and missingResources", b, err)
	}
	text := r.String()
	for _, want := range []string{"https://github.com/acme/prompts", "default branch main -> " + h.fake.Head(),
		"140 valid, 10 invalid", "TEMPLATE_TOO_LARGE", "INVALID_TEMPLATE", "requests left"} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}

	h.fake.SetFault(503)
	r, err = s.Check(ctxT(t))
	if fault.CodeOf(err) != fault.NetworkError || r == nil || r.Stale == nil || r.Valid != len(h.lib.Valid) || r.Fix == "" {
		t.Fatalf("Check during an outage = %+v, %v; want the cached counts, stale, and the error", r, err)
	}
	if text := r.String(); !strings.Contains(text, "stale:") || !strings.Contains(text, "GitHub returned 503") || !strings.Contains(text, "fix:") {
		t.Errorf("outage report text:\n%s", text)
	}
}

func TestCheckReachesGitHub(t *testing.T) {
	t.Parallel()
	// A pinned commit whose catalog is on disk needs nothing from GitHub to
	// serve, but check must still find out whether GitHub answers.
	tests := []struct {
		name      string
		breakIt   func(f *fakegithub.Server)
		wantCode  string // "" for a passing check
		wantRoute []string
	}{
		{name: "healthy", breakIt: func(*fakegithub.Server) {}, wantRoute: []string{fakegithub.RouteRateLimit, fakegithub.RouteCommit}},
		{name: "token revoked", breakIt: func(f *fakegithub.Server) { f.SetToken("ghp_someoneElsesToken000000000000000000") },
			wantCode: fault.GitHubAuthFailed},
		{name: "GitHub failing", breakIt: func(f *fakegithub.Server) { f.SetFault(503) }, wantCode: fault.NetworkError},
		{name: "commit gone", breakIt: func(f *fakegithub.Server) {}, wantCode: fault.GitHubNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			sha := h.fake.Head()
			if tt.wantCode == fault.GitHubNotFound {
				// Cached from a commit the repository no longer has (a
				// force-push, or another repository).
				sha = strings.Repeat("ab", 20)
				pinned := h.source(func(c *Config) { c.Ref = h.fake.Head() })
				if _, err := pinned.Load(ctxT(t)); err != nil {
					t.Fatal(err)
				}
				movePinnedCache(t, pinned, h, sha)
			} else if _, err := h.source(func(c *Config) { c.Ref = sha }).Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			s := h.source(func(c *Config) { c.Ref = sha })
			h.fake.Reset()
			if cat, err := s.Load(ctxT(t)); err != nil || cat.Len() != len(h.lib.Valid) || h.fake.Total() != 0 {
				t.Fatalf("warm pinned start: %d templates, %v, %d requests; want the cache alone", cat.Len(), err, h.fake.Total())
			}
			tt.breakIt(h.fake)
			r, err := s.Check(ctxT(t))
			if r == nil {
				t.Fatal("no report")
			}
			if h.fake.Total() == 0 {
				t.Fatal("check made no request to GitHub")
			}
			if tt.wantCode == "" {
				if err != nil || r.Error != "" || r.RateLimit == nil || r.Commit != sha || r.Valid != len(h.lib.Valid) {
					t.Fatalf("healthy check = %+v, %v", r, err)
				}
				for _, route := range tt.wantRoute {
					if h.fake.Count(route) != 1 {
						t.Errorf("%s asked %d times, want once (%v)", routeName(route), h.fake.Count(route), h.costs())
					}
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != tt.wantCode || f.What == "" || f.Why == "" || f.How == "" {
				t.Fatalf("check error = %v, want %s with what, why and how", err, tt.wantCode)
			}
			if r.Error != f.Error() || r.Fix != f.How {
				t.Errorf("report error %q fix %q; want the fault's %q and %q", r.Error, r.Fix, f.Error(), f.How)
			}
			text := r.String()
			if !strings.Contains(text, "error:") || !strings.Contains(text, "fix:") {
				t.Errorf("report text lacks the error and the fix:\n%s", text)
			}
			if strings.Contains(text+err.Error(), testToken[4:]) {
				t.Error("the report or the error contains the token")
			}
		})
	}
}

// movePinnedCache rewrites the disk cache s wrote so that it claims to hold
// commit sha: the listing key and the cache file name both name the ref.
func movePinnedCache(t *testing.T, s *Source, h *harness, sha string) {
	t.Helper()
	moved := h.source(func(c *Config) { c.Ref = sha })
	l, e, ok := s.loadListing()
	if !ok {
		t.Fatal("nothing cached")
	}
	l.Commit = sha
	value, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range s.cache.Keys(s.blobNS) {
		if be, ok := s.cache.Peek(k); ok {
			moved.cache.Put(be)
		}
	}
	e.Key, e.Value = moved.listKey, value
	moved.cache.Put(e)
	moved.persist()
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	// The token goes to the configured API only: a redirect to another host
	// or scheme is not followed (GitHub's own redirects, for a renamed
	// repository, stay on the API's host and are).
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var mu sync.Mutex
	var elsewhere []string // Authorization of each request the other host got
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, sha)
	}))
	t.Cleanup(other.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/repos/acme/prompts/commits/") {
		case "to-another-host":
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		case "to-https":
			http.Redirect(w, r, "https://"+r.Host+r.URL.Path, http.StatusMovedPermanently)
		case "moved":
			http.Redirect(w, r, "/repos/acme/prompts/commits/target", http.StatusMovedPermanently)
		case "target":
			if r.Header.Get("Authorization") != "Bearer "+testToken {
				http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
				return
			}
			io.WriteString(w, sha)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)

	tests := []struct {
		ref      string
		wantSHA  string
		wantCode string
	}{
		{ref: "moved", wantSHA: sha},
		{ref: "to-another-host", wantCode: fault.NetworkError},
		{ref: "to-https", wantCode: fault.NetworkError},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			h := newHarness(t, fakegithub.Library{})
			c := h.client(func(c *Config) { c.APIURL = api.URL })
			got, _, _, err := c.ResolveRef(ctxT(t), tt.ref, "")
			if tt.wantCode == "" {
				if err != nil || got != tt.wantSHA {
					t.Fatalf("ResolveRef(%s) = %q, %v; want %s", tt.ref, got, err, tt.wantSHA)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != tt.wantCode || !strings.Contains(f.Why, "redirected") || !strings.Contains(f.How, "GITHUB_API_URL") {
				t.Fatalf("ResolveRef(%s) error = %v, want %s explaining the redirect", tt.ref, err, tt.wantCode)
			}
			if strings.Contains(err.Error(), testToken[4:]) {
				t.Errorf("the error holds the token: %v", err)
			}
		})
	}
	if len(elsewhere) != 0 {
		t.Errorf("the other host got %d requests (Authorization %q), want none", len(elsewhere), elsewhere)
	}
}

func TestAuthTransport(t *testing.T) {
	t.Parallel()
	// The token is added for the API's scheme and host only, whatever
	// asks the client to send a request elsewhere.
	var sent http.Header
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header.Clone()
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})
	at := &authTransport{base: base, token: testToken, scheme: "https", host: "api.github.com"}
	for url, want := range map[string]string{
		"https://api.github.com/repos/acme/prompts": "Bearer " + testToken,
		"https://API.GitHub.com/rate_limit":         "Bearer " + testToken,
		"http://api.github.com/repos/acme/prompts":  "",
		"https://evil.example.com/repos":            "",
		"https://api.github.com:8443/repos":         "",
	} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := at.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if got := sent.Get("Authorization"); got != want {
			t.Errorf("%s sent Authorization %q, want %q", url, got, want)
		}
		if req.Header.Get("Authorization") != "" {
			t.Errorf("%s: the caller's request was modified", url)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSaveTemplateKeepsOtherTemplates(t *testing.T) {
	t.Parallel()
	// A new name is written to GITHUB_TEMPLATES_PATH/NAME.json, but never
	// over a file that holds another, valid template: GitHub would accept
	// the update (flowyprompt has that file's SHA) and the template would
	// be gone.
	bar := fakegithub.ValidTemplate("Bar", "bar {{subject}}")
	tests := []struct {
		name  string
		files map[string][]byte
		save  string
	}{
		{name: "NAME.json holds another template", files: map[string][]byte{"templates/Foo.json": bar}, save: "Foo"},
		{name: "with the repository root as the folder", files: map[string][]byte{"Foo.json": bar}, save: "Foo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakegithub.Library{Files: tt.files})
			s := h.source(func(c *Config) {
				if _, ok := tt.files["Foo.json"]; ok {
					c.Path = "."
				}
			})
			if _, err := s.Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			head := h.fake.Head()
			h.fake.Reset()
			_, err := s.SaveTemplate(ctxT(t), tt.save, fakegithub.ValidTemplate(tt.save, "ours {{subject}}"), "add "+tt.save)
			f := fault.As(err)
			if f == nil || f.Code != fault.WriteConflict || !errors.Is(err, ErrConflict) || !strings.Contains(f.Why, `"Bar"`) || f.How == "" {
				t.Fatalf("SaveTemplate error = %v, want WRITE_CONFLICT naming template Bar, with a fix", err)
			}
			if n := h.fake.Count(fakegithub.RoutePut); n != 0 || h.fake.Head() != head {
				t.Errorf("%d writes reached GitHub (head moved: %v), want none", n, h.fake.Head() != head)
			}
			cat, _ := s.Load(ctxT(t))
			if _, ok := cat.Lookup("Bar"); !ok {
				t.Error("Bar is gone from the catalog")
			}
		})
	}
}

func TestCheckRequests(t *testing.T) {
	t.Parallel()
	// What check asks GitHub: enough to prove it answers, nothing twice.
	tests := []struct {
		name      string
		ref       func(h *harness) string
		warm      bool // a catalog is held before the check
		breakIt   func(f *fakegithub.Server)
		wantCode  string
		wantCount map[string]int // route → requests
	}{
		// Loading lists the commit's tree: that proves the commit, so it
		// is not resolved as well.
		{name: "pinned, nothing cached", ref: func(h *harness) string { return h.fake.Head() },
			wantCount: map[string]int{fakegithub.RouteTree: 1, fakegithub.RouteCommit: 0, fakegithub.RouteRateLimit: 1}},
		{name: "pinned, catalog held", ref: func(h *harness) string { return h.fake.Head() }, warm: true,
			wantCount: map[string]int{fakegithub.RouteTree: 0, fakegithub.RouteCommit: 1, fakegithub.RouteRateLimit: 1}},
		{name: "branch", ref: func(*harness) string { return "main" }, warm: true,
			wantCount: map[string]int{fakegithub.RouteTree: 0, fakegithub.RouteCommit: 1, fakegithub.RouteRateLimit: 1}},
		// GitHub could not be reached: the rate limit would only wait for
		// the same network again.
		{name: "GitHub failing", ref: func(*harness) string { return "main" }, warm: true,
			breakIt: func(f *fakegithub.Server) { f.SetFault(503) }, wantCode: fault.NetworkError,
			wantCount: map[string]int{fakegithub.RouteCommit: 1, fakegithub.RouteRateLimit: 0}},
		{name: "token refused", ref: func(*harness) string { return "main" }, warm: true,
			breakIt: func(f *fakegithub.Server) { f.SetToken("ghp_someoneElsesToken000000000000000000") }, wantCode: fault.GitHubAuthFailed,
			wantCount: map[string]int{fakegithub.RouteCommit: 1, fakegithub.RouteRateLimit: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			s := h.source(func(c *Config) { c.Ref = tt.ref(h) })
			if tt.warm {
				if _, err := s.Load(ctxT(t)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.breakIt != nil {
				tt.breakIt(h.fake)
			}
			h.fake.Reset()
			r, err := s.Check(ctxT(t))
			if fault.CodeOf(err) != tt.wantCode && !(tt.wantCode == "" && err == nil) {
				t.Fatalf("Check error = %v, want %q", err, tt.wantCode)
			}
			if r == nil || (tt.wantCode == "" && (r.RateLimit == nil || r.Commit != h.fake.Head())) {
				t.Errorf("report = %+v", r)
			}
			for route, want := range tt.wantCount {
				if got := h.fake.Count(route); got != want {
					t.Errorf("%s asked %d times, want %d (%v)", routeName(route), got, want, h.costs())
				}
			}
		})
	}
}

// TestSaveTemplateKeepsOtherFormats: a save writes our JSON, so it never
// replaces a template the repository keeps in another format.
func TestSaveTemplateKeepsOtherFormats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{Files: map[string][]byte{
		"templates/greet.prompt": []byte("---\nname: Greeter\n---\nHello {{who}}"),
	}})
	s := h.source()
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	h.fake.Reset()
	_, err := s.SaveTemplate(ctxT(t), "greet", fakegithub.ValidTemplate("greet", "ours {{subject}}"), "replace greet")
	f := fault.As(err)
	if f == nil || f.Code != fault.WriteConflict || !strings.Contains(f.Why, "templates/greet.prompt holds it as a dotprompt file") {
		t.Fatalf("SaveTemplate error = %v, want WRITE_CONFLICT naming the file and its format", err)
	}
	if n := h.fake.Count(fakegithub.RoutePut); n != 0 {
		t.Errorf("%d writes reached GitHub, want none", n)
	}
}
