package github

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// Sentinels, matchable with errors.Is through the *fault.Error that carries
// them (fault.Error.Err).
var (
	ErrNotModified  = errors.New("not modified")
	ErrUnauthorized = errors.New("github refused the credentials")
	ErrRateLimited  = errors.New("github rate limit exceeded")
	ErrNotFound     = errors.New("not found on github")
	ErrUnavailable  = errors.New("github unavailable")
	ErrConflict     = errors.New("write conflict")
)

// target says what a request was about, so a 404 can say whether the
// repository, the ref or the folder is missing.
type target int

const (
	targetRepo   target = iota
	targetRef           // commits/{ref}: GitHub answers 422 for an unknown ref, 404 for an unknown repository
	targetCommit        // a tree by commit SHA: 404 is an unknown commit
	targetTree
	targetBlob
	targetWrite // creating or updating a file
	targetRateLimit
	targetArchive // a commit's archive: its redirect, or the download
	targetFileAt  // a file at a ref: 404 is a missing file or ref
	targetPropose // a proposal's branch and pull request: 403 is a token that may not write
	targetPull    // a pull request by number: 404 is no such pull request
)

// op describes one request for error messages.
type op struct {
	what   string // "resolve ref main in o/r", the fault's What
	target target
	name   string // the ref, SHA or path concerned
}

// tokenHow says what to check of the token, naming the variable this
// source reads it from (GITHUB_PAT, or the token-env= of a --source).
func (c *Client) tokenHow() string {
	return "check " + c.tokenVar + ": a fine-grained token needs read access to the repository's Contents " +
		"(contents:read; contents:write and pull requests:write to propose templates), a classic token needs the repo scope for a private repository; " +
		"unset " + c.tokenVar + " for a public repository"
}

// writeHow says what a token needs to propose changes, naming the
// variable it is read from.
func (c *Client) writeHow() string {
	return "give the token in " + c.tokenVar + " write access to " + c.repoName() + ": a fine-grained token needs " +
		"Contents: Read and write and Pull requests: Read and write on that one repository; a classic token needs the repo scope " +
		"(public_repo for a public repository)"
}

const (
	secondaryRetry = time.Minute // GitHub's advice when a secondary limit names no time
)

// mapError turns what go-github returned into our errors. It is the only
// place that does, so every message is redacted in one place:
//   - 304 → ErrNotModified (not a failure; callers check for it first)
//   - 401, and 403 that is not a rate limit → GITHUB_AUTH_FAILED
//   - 403/429 rate limits, including go-github's own pre-check that answers
//     without calling out while the last known remaining count is 0, and
//     answers whose body go-github did not read (GetArchiveLink), known by
//     their X-RateLimit-Remaining: 0 or Retry-After header →
//     GITHUB_RATE_LIMITED with RetryAfter
//   - 404 (and 422 for an unknown ref, 409 for an empty repository) →
//     GITHUB_NOT_FOUND naming what is missing
//   - 409/422 on write → WRITE_CONFLICT
//   - 5xx, timeouts, network failures, a redirect to another host or
//     scheme (never followed: see sameOriginRedirects) → NETWORK_ERROR
//
// A canceled context is returned as itself: nobody failed.
func (c *Client) mapError(o op, resp *gh.Response, err error) error {
	return c.mapErrorHiding(o, resp, err)
}

// mapErrorHiding is mapError that also redacts hide, secrets other than
// the token (an archive's temporary download URL and token).
func (c *Client) mapErrorHiding(o op, resp *gh.Response, err error, hide ...string) error {
	if err == nil {
		return nil
	}
	status := 0
	var header http.Header
	if resp != nil && resp.Response != nil {
		status, header = resp.StatusCode, resp.Header
	}
	if status == http.StatusNotModified {
		return ErrNotModified
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", o.what, context.Canceled)
	}
	secrets := append([]string{c.token}, hide...)
	hidden := func(s string) string {
		// Whole URLs before redact sanitizes them, which would leave
		// their paths.
		for _, h := range hide {
			if len(h) >= 4 {
				s = strings.ReplaceAll(s, h, "[REDACTED]")
			}
		}
		return redact(s, secrets...)
	}
	detail := hidden(err.Error())
	var ghMessage string
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		ghMessage = hidden(er.Message)
	}
	details := map[string]any{"repository": c.owner + "/" + c.repo}
	if status != 0 {
		details["status"] = status
	}
	if er != nil {
		// A 422's errors say which field GitHub refused, and why.
		for _, e := range er.Errors {
			m := e.Message
			if m == "" {
				m = strings.TrimSpace(e.Field + " " + e.Code) // "base invalid"
			}
			if m = hidden(m); m != "" {
				ghMessage += ": " + m
			}
		}
	}
	if ghMessage != "" {
		details["githubMessage"] = ghMessage
	}
	mk := func(code string, sentinel error, why, how string) *fault.Error {
		return &fault.Error{Code: code, What: o.what, Why: why, How: how, Details: details,
			Err: fmt.Errorf("%w: %s", sentinel, detail)}
	}

	var rle *gh.RateLimitError
	var are *gh.AbuseRateLimitError
	switch {
	case errors.Is(err, errRedirectElsewhere):
		// Before the status: the answer is the redirect, not a failure.
		return mk(fault.NetworkError, ErrUnavailable,
			"GitHub's answer redirected the request elsewhere ("+detail+"), which is not followed so that the token is never sent to another host or over plain http",
			"check GITHUB_API_URL ("+c.apiURL+") points at the GitHub API itself, not at an address that redirects")
	case errors.As(err, &rle):
		retry := rle.Rate.Reset.Time.Sub(c.now())
		return c.rateLimited(mk, details, retry, fmt.Sprintf("GitHub's API rate limit of %d requests per hour is used up until %s",
			rle.Rate.Limit, rle.Rate.Reset.Time.UTC().Format(time.RFC3339)))
	case errors.As(err, &are):
		retry := secondaryRetry
		if are.RetryAfter != nil {
			retry = *are.RetryAfter
		}
		return c.rateLimited(mk, details, retry, "GitHub's secondary rate limit was hit (too many requests in a short time)")
	case status == http.StatusTooManyRequests,
		status == http.StatusForbidden && strings.Contains(strings.ToLower(ghMessage), "rate limit"),
		status == http.StatusForbidden && (header.Get("X-RateLimit-Remaining") == "0" || header.Get("Retry-After") != ""):
		why := "GitHub answered " + strconv.Itoa(status) + ": " + ghMessage
		if ghMessage == "" {
			why = "GitHub answered " + strconv.Itoa(status) + ": the rate limit is used up"
		}
		return c.rateLimited(mk, details, retryAfterHeader(header, c.now()), why)
	case status == http.StatusUnauthorized:
		why := "GitHub answered 401: the token was refused (wrong, expired or revoked)"
		if c.token == "" {
			why = "GitHub answered 401: this request needs a token and none is configured"
		}
		return mk(fault.GitHubAuthFailed, ErrUnauthorized, why, c.tokenHow())
	case status == http.StatusForbidden && (o.target == targetWrite || o.target == targetPropose):
		why := "GitHub answered 403: the token may read " + c.repoName() + " but not write to it"
		if ghMessage != "" {
			why += " (" + ghMessage + ")"
		}
		f := mk(fault.PermissionDenied, ErrUnauthorized, why, c.writeHow())
		f.Details["needs"] = []string{"contents:write", "pull_requests:write"}
		return f
	case status == http.StatusForbidden:
		why := "GitHub answered 403: the token is valid but not allowed to do this"
		if ghMessage != "" {
			why += " (" + ghMessage + ")"
		}
		return mk(fault.GitHubAuthFailed, ErrUnauthorized, why, c.tokenHow())
	case status == http.StatusNotFound, status == http.StatusUnprocessableEntity && o.target == targetRef:
		if o.target == targetRef && status == http.StatusNotFound {
			o.target = targetRepo
		}
		return c.notFound(mk, o)
	case status == http.StatusConflict && (o.target == targetRef || o.target == targetCommit):
		// GitHub's answer for any commit of a repository without one.
		return mk(fault.GitHubNotFound, ErrNotFound, "the repository "+c.owner+"/"+c.repo+" is empty (GitHub answered 409: "+ghMessage+")",
			"push a first commit with the templates folder, or check GITHUB_REPO_URL")
	case status == http.StatusUnprocessableEntity && o.target == targetPropose:
		return mk(fault.InvalidArgument, ErrConflict, "GitHub refused the proposal (422: "+ghMessage+")",
			"check that GITHUB_REF names a branch of "+c.repoName()+" (a pull request's base must be a branch), or unset it to propose to the default branch")
	case (status == http.StatusConflict || status == http.StatusUnprocessableEntity) && o.target == targetWrite:
		return mk(fault.WriteConflict, ErrConflict,
			"someone changed "+o.name+" on GitHub after it was read (GitHub answered "+strconv.Itoa(status)+": "+ghMessage+")",
			"refresh the templates (flowyprompt_refresh_templates), look at the current version, and save again")
	case status >= 500:
		return mk(fault.NetworkError, ErrUnavailable, fmt.Sprintf("GitHub returned %d", status),
			"GitHub is having trouble; wait a minute and retry (https://www.githubstatus.com)")
	case status >= 200 && status < 300:
		return mk(fault.NetworkError, ErrUnavailable, "GitHub's answer could not be read: "+detail,
			"check GITHUB_API_URL ("+c.apiURL+") points at the GitHub API and not at a proxy or web page")
	case status != 0:
		return mk(fault.NetworkError, ErrUnavailable, fmt.Sprintf("GitHub answered %d: %s", status, ghMessage),
			"check GITHUB_API_URL ("+c.apiURL+"): GitHub Enterprise Server needs https://HOST/api/v3")
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		f := mk(fault.NetworkError, ErrUnavailable, "GitHub did not answer in time",
			"check the network connection (and HTTPS_PROXY if one is needed), then retry")
		f.Err = fmt.Errorf("%w: %s: %w", ErrUnavailable, detail, context.DeadlineExceeded)
		return f
	default:
		return mk(fault.NetworkError, ErrUnavailable, "cannot reach GitHub at "+c.apiURL+": "+detail,
			"check the network connection, HTTPS_PROXY and GITHUB_API_URL, then retry")
	}
}

func (c *Client) rateLimited(mk func(string, error, string, string) *fault.Error, details map[string]any, retry time.Duration, why string) *fault.Error {
	if retry < time.Second {
		retry = time.Second
	}
	retry = retry.Round(time.Second)
	details["retryAfterSeconds"] = int(retry.Seconds())
	how := "wait " + retry.String() + " and retry"
	if c.token == "" {
		how += "; unauthenticated requests get only 60 per hour: set " + c.tokenVar + " to get 5,000"
	}
	f := mk(fault.GitHubRateLimited, ErrRateLimited, why, how)
	f.RetryAfter = retry
	return f
}

func (c *Client) notFound(mk func(string, error, string, string) *fault.Error, o op) *fault.Error {
	repo := c.owner + "/" + c.repo
	access := "; a private repository also looks missing when the token cannot see it"
	switch o.target {
	case targetRef, targetCommit:
		return mk(fault.GitHubNotFound, ErrNotFound,
			"the ref "+strconv.Quote(o.name)+" does not exist in "+repo+" (or the repository is not visible to this token)",
			"set GITHUB_REF to an existing branch, tag or full commit SHA, or unset it to use the default branch"+access)
	case targetTree:
		return mk(fault.GitHubNotFound, ErrNotFound,
			"the folder "+strconv.Quote(o.name)+" does not exist in "+repo+" at this commit",
			"set GITHUB_TEMPLATES_PATH to the folder that holds the templates (\".\" for the repository root)")
	case targetBlob:
		return mk(fault.GitHubNotFound, ErrNotFound, "the file object "+o.name+" is gone from "+repo,
			"refresh the templates; the repository changed while they were read")
	case targetArchive:
		return mk(fault.GitHubNotFound, ErrNotFound,
			"the archive of commit "+short(o.name)+" of "+repo+" is not available (or the repository is not visible to this token)",
			"refresh the templates; if this persists, check GITHUB_REPO_URL"+access)
	case targetFileAt:
		return mk(fault.GitHubNotFound, ErrNotFound,
			"no such file at "+strconv.Quote(o.name)+" in "+repo+": the file did not exist then, or no tag or commit has that name",
			"name a version, tag or commit SHA that flowyprompt_template_history lists")
	case targetPull:
		return mk(fault.GitHubNotFound, ErrNotFound, "there is no pull request #"+o.name+" in "+repo,
			"name a pull request of "+repo+" that a save or `flowyprompt propose` opened (its number is in the save's answer)"+access)
	case targetWrite, targetPropose:
		return mk(fault.GitHubNotFound, ErrNotFound, "the repository "+repo+" or its branch "+strconv.Quote(o.name)+" was not found",
			"check GITHUB_REPO_URL and GITHUB_REF, and that the token may write to the repository"+access)
	default:
		return mk(fault.GitHubNotFound, ErrNotFound, "the repository "+repo+" does not exist or is not visible",
			"check GITHUB_REPO_URL"+access+": "+c.tokenHow())
	}
}

func retryAfterHeader(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return secondaryRetry
	}
	if v, err := strconv.Atoi(h.Get("Retry-After")); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	if v, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && v > 0 {
		return time.Unix(v, 0).Sub(now)
	}
	return secondaryRetry
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var (
	urlRE         = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	tokenRE       = regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{20,})`)
	authHeaderRE  = regexp.MustCompile(`(?i)\b(authorization\s*[:=]\s*(?:bearer|token|basic)\s+|bearer\s+)[^\s"',]+`)
	secretParamRE = regexp.MustCompile(`(?i)\b((?:access_token|token|client_secret|password)=)[^\s&"']+`)
)

// redact removes what must never leave this package: the configured token
// wherever it appears, anything shaped like a GitHub token or an
// Authorization value, credentials and query strings in URLs (go-github's
// errors embed the request URL).
func redact(s string, secrets ...string) string {
	s = urlRE.ReplaceAllStringFunc(s, sanitizeURL)
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
			if esc := url.QueryEscape(sec); esc != sec {
				s = strings.ReplaceAll(s, esc, "[REDACTED]")
			}
		}
	}
	s = tokenRE.ReplaceAllString(s, "[REDACTED]")
	s = authHeaderRE.ReplaceAllString(s, "${1}[REDACTED]")
	return secretParamRE.ReplaceAllString(s, "${1}[REDACTED]")
}

// sanitizeURL drops credentials, query and fragment from a URL found in
// text. It works on the text rather than parsing, so that a URL too odd to
// parse is cleaned all the same; punctuation that ends a sentence stays.
func sanitizeURL(raw string) string {
	trail := ""
	for raw != "" && strings.ContainsRune(":,.;)]", rune(raw[len(raw)-1])) {
		trail = raw[len(raw)-1:] + trail
		raw = raw[:len(raw)-1]
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if i := strings.IndexAny(tail, "?#"); i >= 0 {
		tail = tail[:i]
	}
	return scheme + "://" + authority + tail + trail
}
