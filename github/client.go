package github

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v66/github"
	"golang.org/x/sync/errgroup"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// blobParallelism bounds concurrent blob downloads: enough to hide latency,
// few enough not to trip GitHub's secondary (burst) rate limit.
const blobParallelism = 8

// Client is a thin layer over go-github for the requests the template
// library needs. Every error it returns went through mapError.
type Client struct {
	gh          *gh.Client
	owner, repo string
	webURL      string
	apiURL      string
	path        string
	maxFileSize int
	token       string // kept only to redact it
	tokenVar    string // the variable messages name for the token
	now         func() time.Time
	logger      *slog.Logger
	// download fetches archives from the host GitHub redirects to: the
	// caller's transport without the token, since the redirect's URL
	// carries its own temporary credential.
	download  *http.Client
	apiScheme string
}

// TreeEntry is one file in a commit's tree.
type TreeEntry struct {
	Path string `json:"path"`
	SHA  string `json:"sha"` // the git blob SHA: content-addressed
	Size int    `json:"size"`
}

// RateLimit is GitHub's primary (core) rate limit for our credentials.
type RateLimit struct {
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	Reset     time.Time `json:"reset"`
}

func newClient(s settings) *Client {
	// A copy: the caller's client (Config.HTTPClient) is not ours to change.
	hc := *s.httpClient
	traced := hc.Transport
	if traced == nil {
		traced = http.DefaultTransport
	}
	traced = tracingTransport{base: traced}
	hc.Transport = traced
	download := &http.Client{Transport: traced, CheckRedirect: downloadRedirects}
	if s.token != "" {
		hc.Transport = &authTransport{base: traced, token: s.token, scheme: s.api.Scheme, host: s.api.Host}
	}
	hc.CheckRedirect = sameOriginRedirects(hc.CheckRedirect)
	g := gh.NewClient(&hc)
	// Set BaseURL directly rather than with WithEnterpriseURLs, which would
	// append api/v3/ to any URL lacking it (the fake server, proxies); the
	// user gives the full API root instead.
	base := *s.api
	g.BaseURL = &base
	g.UserAgent = "flowyprompt"
	return &Client{
		gh: g, owner: s.owner, repo: s.repo, webURL: s.webURL, apiURL: s.apiURL,
		path: s.path, maxFileSize: s.maxFileSize, token: s.token, tokenVar: s.tokenVar, now: s.now, logger: s.logger,
		download: download, apiScheme: s.api.Scheme,
	}
}

// authTransport sends the token to the API's scheme and host only. (go-
// github's WithAuthToken sets it on every request the client sends,
// whatever its host, redirects included.)
type authTransport struct {
	base         http.RoundTripper
	token        string
	scheme, host string
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != t.scheme || !strings.EqualFold(r.URL.Host, t.host) {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not modify the request it is given
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// errRedirectElsewhere is why a redirect to another host or scheme is not
// followed.
var errRedirectElsewhere = errors.New("redirect to another host or scheme refused")

// sameOriginRedirects follows redirects within the API's scheme and host
// (GitHub redirects a renamed repository's requests that way) and refuses
// any other: a redirect may carry a request, and its token, to a host the
// user never configured, or from https down to http. next, the caller's
// own policy, still applies to the redirects followed.
func sameOriginRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if req.URL.Scheme != from.Scheme || !strings.EqualFold(req.URL.Host, from.Host) {
			return fmt.Errorf("%w: from %s://%s to %s://%s", errRedirectElsewhere, from.Scheme, from.Host, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects") // net/http's own limit
		}
		return nil
	}
}

func (c *Client) repoName() string { return c.owner + "/" + c.repo }

// DefaultBranch returns the repository's default branch (one request).
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, resp, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err := c.mapError(op{what: "read repository " + c.repoName(), target: targetRepo}, resp, err); err != nil {
		return "", err
	}
	if b := r.GetDefaultBranch(); b != "" {
		return b, nil
	}
	return "", fault.New(fault.GitHubNotFound, "read repository "+c.repoName(),
		"the repository has no default branch (it is empty)", "push a first commit, or set GITHUB_REF")
}

// ResolveRef turns a branch, tag or SHA into the commit SHA it points at with
// one conditional request. Given the ETag of a previous answer, an unchanged
// ref costs a 304, which GitHub does not count against the rate limit: then
// notModified is true, sha is empty and newETag is etag. An empty ref means
// the default branch: HEAD, which GitHub resolves to the default branch's
// head in the same one request, whatever that branch is called today.
func (c *Client) ResolveRef(ctx context.Context, ref, etag string) (sha, newETag string, notModified bool, err error) {
	o := op{what: "resolve " + ref + " in " + c.repoName(), target: targetRef, name: ref}
	if ref == "" {
		ref = "HEAD"
		o = op{what: "resolve the default branch of " + c.repoName(), target: targetRef, name: ref}
	}
	req, err := c.gh.NewRequest(http.MethodGet, "repos/"+url.PathEscape(c.owner)+"/"+url.PathEscape(c.repo)+"/commits/"+escapeRef(ref), nil)
	if err != nil {
		return "", "", false, c.mapError(o, nil, err)
	}
	// The SHA media type answers with 40 bytes instead of a commit's JSON.
	req.Header.Set("Accept", "application/vnd.github.sha")
	if etag != "" {
		req.Header.Set("If-None-Match", etag) // verbatim, quotes included
	}
	var buf bytes.Buffer
	resp, err := c.gh.Do(ctx, req, &buf)
	if err := c.mapError(o, resp, err); err != nil {
		if errors.Is(err, ErrNotModified) {
			return "", etag, true, nil
		}
		return "", "", false, err
	}
	sha = strings.TrimSpace(buf.String())
	if !IsCommitSHA(sha) {
		// A proxy that drops the Accept header sends the commit's JSON.
		var commit struct {
			SHA string `json:"sha"`
		}
		if json.Unmarshal(buf.Bytes(), &commit) != nil || !IsCommitSHA(commit.SHA) {
			return "", "", false, fault.New(fault.NetworkError, o.what,
				"GitHub's answer is not a commit SHA", "check GITHUB_API_URL points at the GitHub API")
		}
		sha = commit.SHA
	}
	return strings.ToLower(sha), resp.Header.Get("ETag"), false, nil
}

// escapeRef escapes each segment of a ref but keeps the slashes of names
// such as feature/x, as GitHub expects.
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// treeFiles lists, in one request, the files under the configured folder
// at commit sha with their blob SHAs and sizes: the .json files (tmpl) and
// the others, which templates may list as resources. Sizes let the caller
// refuse oversized files without downloading them. Hidden files and folders
// are left out of both, as the folder source leaves them out: they are
// never served (templates/.drafts/X.json is no template), and a folder such
// as .github would only grow the listing. other is never nil, so that a
// persisted listing tells "no other files" from "not listed" (older caches).
// archiveSize bounds the size of the commit's whole tar archive (see
// tarSize); 0 when the listing was truncated and so cannot bound it.
func (c *Client) treeFiles(ctx context.Context, sha string) (tmpl, other []TreeEntry, archiveSize int64, err error) {
	t, resp, err := c.gh.Git.GetTree(ctx, c.owner, c.repo, sha, true)
	if err := c.mapError(op{what: "list the templates of " + c.repoName() + " at " + short(sha), target: targetCommit, name: sha}, resp, err); err != nil {
		return nil, nil, 0, err
	}
	if t.GetTruncated() {
		c.logger.Warn("GitHub truncated the repository listing; some templates may be missing",
			"repository", c.repoName(), "commit", sha)
	} else {
		archiveSize = tarSize(t.Entries)
	}
	prefix := ""
	if c.path != "" {
		prefix = c.path + "/"
	}
	found := c.path == ""
	other = []TreeEntry{}
	for _, e := range t.Entries {
		p := e.GetPath()
		if e.GetType() == "tree" && p == c.path {
			found = true
		}
		// Symlinks (120000) are blobs whose content is a path, neither a
		// template nor a file worth serving.
		if e.GetType() != "blob" || e.GetMode() == "120000" || !strings.HasPrefix(p, prefix) {
			continue
		}
		found = true
		if templates.Hidden(strings.TrimPrefix(p, prefix)) {
			continue
		}
		te := TreeEntry{Path: p, SHA: e.GetSHA(), Size: e.GetSize()}
		if templates.IsLibraryFile(p) {
			tmpl = append(tmpl, te)
		} else {
			other = append(other, te)
		}
	}
	if !found {
		return nil, nil, 0, c.notFound(func(code string, sentinel error, why, how string) *fault.Error {
			return &fault.Error{Code: code, What: "list the templates of " + c.repoName(), Why: why, How: how,
				Details: map[string]any{"repository": c.repoName(), "path": c.path, "commit": sha},
				Err:     fmt.Errorf("%w: folder %s at %s", sentinel, c.path, sha)}
		}, op{target: targetTree, name: c.path})
	}
	byPath := func(a, b TreeEntry) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(tmpl, byPath)
	slices.SortFunc(other, byPath)
	return tmpl, other, archiveSize, nil
}

// Blob fetches one blob's bytes and checks them against the SHA, so a
// corrupted answer never enters the content-addressed cache.
func (c *Client) Blob(ctx context.Context, sha string) ([]byte, error) {
	o := op{what: "read file object " + short(sha) + " from " + c.repoName(), target: targetBlob, name: sha}
	data, resp, err := c.gh.Git.GetBlobRaw(ctx, c.owner, c.repo, sha)
	if err := c.mapError(o, resp, err); err != nil {
		return nil, err
	}
	if len(sha) == 40 && gitBlobSHA(data) != strings.ToLower(sha) {
		return nil, fault.New(fault.NetworkError, o.what,
			"the content GitHub sent does not match its SHA", "retry; a proxy may be altering responses")
	}
	return data, nil
}

// Blobs fetches several blobs with bounded parallelism; the first failure
// cancels the rest.
func (c *Client) Blobs(ctx context.Context, shas []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(shas))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobParallelism)
	for _, sha := range shas {
		g.Go(func() error {
			b, err := c.Blob(gctx, sha)
			if err != nil {
				return err
			}
			mu.Lock()
			out[sha] = b
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// RateLimit returns the core rate limit; the request does not count against it.
func (c *Client) RateLimit(ctx context.Context) (RateLimit, error) {
	l, resp, err := c.gh.RateLimit.Get(ctx)
	if err := c.mapError(op{what: "read the GitHub rate limit", target: targetRateLimit}, resp, err); err != nil {
		return RateLimit{}, err
	}
	core := l.GetCore()
	if core == nil {
		return RateLimit{}, nil
	}
	return RateLimit{Limit: core.Limit, Remaining: core.Remaining, Reset: core.Reset.Time}, nil
}

// checkWrite refuses locally what GitHub would refuse anyway, or what must
// never reach it (a path leaving the repository).
func (c *Client) checkWrite(what, filePath string, content []byte, message string) error {
	// A hidden folder is allowed: the configured folder may be one
	// (.github/prompts).
	if clean, err := templates.RelPath(filePath); clean != filePath || (err != nil && !errors.Is(err, templates.ErrPathHidden)) {
		return fault.New(fault.InvalidArgument, what, "the path must be a plain relative path inside the repository",
			"use a path such as templates/NAME.json")
	}
	if strings.TrimSpace(message) == "" {
		return fault.New(fault.InvalidArgument, what, "a commit message is required", "describe the change in one line")
	}
	if len(content) > c.maxFileSize {
		return templates.TooLarge(filePath, int64(len(content)), int64(c.maxFileSize))
	}
	return nil
}

// putFile writes content at filePath on branch in one commit, without
// reading anything first. expectSHA is the blob SHA of the version the
// caller based its change on: GitHub updates the file only if it is still
// that version. An empty expectSHA creates the file, which GitHub refuses if
// it exists. Either refusal is WRITE_CONFLICT.
func (c *Client) putFile(ctx context.Context, filePath string, content []byte, message, branch, expectSHA string) (commitURL, commitSHA string, err error) {
	what := "save " + filePath + " to " + c.repoName()
	if err := c.checkWrite(what, filePath, content, message); err != nil {
		return "", "", err
	}
	put := &gh.RepositoryContentFileOptions{Message: gh.String(message), Content: content}
	if branch != "" {
		put.Branch = gh.String(branch)
	}
	write := c.gh.Repositories.CreateFile
	if expectSHA != "" {
		put.SHA = gh.String(expectSHA)
		write = c.gh.Repositories.UpdateFile
	}
	res, resp, err := write(ctx, c.owner, c.repo, filePath, put)
	if err := c.mapError(op{what: what, target: targetWrite, name: filePath}, resp, err); err != nil {
		return "", "", err
	}
	commitSHA = res.Commit.GetSHA()
	commitURL = res.Commit.GetHTMLURL()
	if commitURL == "" && commitSHA != "" {
		commitURL = c.webURL + "/commit/" + commitSHA
	}
	return commitURL, commitSHA, nil
}

// gitBlobSHA is git's object name for content.
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// tokenID identifies credentials without revealing them, so a cached ETag
// (GitHub's ETags vary with Authorization) is only reused with the token it
// was obtained with.
func tokenID(token string) string {
	if token == "" {
		return "anonymous"
	}
	sum := sha256.Sum256([]byte("flowyprompt github token id\x00" + token))
	return hex.EncodeToString(sum[:8])
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
