package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// archiveStatus is the error go-github's GetArchiveLink returns for any
// answer but 200 and 302.
func archiveStatus(code int) error {
	return fmt.Errorf("unexpected status code: %d %s", code, http.StatusText(code))
}

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestMapError(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	c := &Client{owner: "acme", repo: "prompts", apiURL: DefaultAPIURL, token: testToken, now: func() time.Time { return now }}
	anon := &Client{owner: "acme", repo: "prompts", apiURL: DefaultAPIURL, now: func() time.Time { return now }}

	reqURL, _ := url.Parse("https://api.github.com/repos/acme/prompts/commits/main?access_token=" + testToken)
	respWith := func(status int, header map[string]string) *gh.Response {
		h := http.Header{}
		for k, v := range header {
			h.Set(k, v)
		}
		return &gh.Response{Response: &http.Response{StatusCode: status, Header: h, Request: &http.Request{Method: "GET", URL: reqURL}}}
	}
	errResp := func(r *gh.Response, msg string) error { return &gh.ErrorResponse{Response: r.Response, Message: msg} }
	retry42 := 42 * time.Second

	type result struct {
		code     string // "" for a plain error
		sentinel error
		retry    time.Duration
		why      string // substring of Why (or of the error for plain ones)
	}
	tests := []struct {
		name   string
		client *Client
		op     op
		resp   *gh.Response
		err    error
		want   result
	}{
		{name: "304 is not modified, not a failure", op: op{target: targetRef}, resp: respWith(304, nil),
			err: errResp(respWith(304, nil), ""), want: result{sentinel: ErrNotModified}},
		{name: "409 for a commit: the repository is empty", op: op{target: targetRef, name: "HEAD"}, resp: respWith(409, nil),
			err: errResp(respWith(409, nil), "Git Repository is empty."), want: result{fault.GitHubNotFound, ErrNotFound, 0, "is empty"}},
		{name: "redirect elsewhere refused", op: op{target: targetRef}, resp: respWith(302, nil),
			err:  &url.Error{Op: "Get", URL: "https://api.github.com/repos/acme/prompts/commits/main", Err: fmt.Errorf("%w: from https://api.github.com to https://evil.example.com", errRedirectElsewhere)},
			want: result{fault.NetworkError, ErrUnavailable, 0, "redirected the request elsewhere"}},
		{name: "canceled context stays itself", op: op{what: "resolve main", target: targetRef},
			err: context.Canceled, want: result{sentinel: context.Canceled, why: "resolve main"}},
		{name: "401 with a token", op: op{target: targetRef}, resp: respWith(401, nil),
			err: errResp(respWith(401, nil), "Bad credentials"), want: result{fault.GitHubAuthFailed, ErrUnauthorized, 0, "token was refused"}},
		{name: "401 without a token", client: anon, op: op{target: targetRef}, resp: respWith(401, nil),
			err: errResp(respWith(401, nil), "Requires authentication"), want: result{fault.GitHubAuthFailed, ErrUnauthorized, 0, "none is configured"}},
		{name: "403 without rate limit is a permission problem", op: op{target: targetWrite}, resp: respWith(403, nil),
			err:  errResp(respWith(403, nil), "Resource not accessible by personal access token"),
			want: result{fault.PermissionDenied, ErrUnauthorized, 0, "Resource not accessible"}},
		{name: "403 on a read is the token's access", op: op{target: targetRef}, resp: respWith(403, nil),
			err:  errResp(respWith(403, nil), "Resource not accessible by personal access token"),
			want: result{fault.GitHubAuthFailed, ErrUnauthorized, 0, "Resource not accessible"}},
		{name: "primary rate limit", op: op{target: targetRef}, resp: respWith(403, nil),
			err:  &gh.RateLimitError{Rate: gh.Rate{Limit: 5000, Reset: gh.Timestamp{Time: now.Add(10 * time.Minute)}}, Response: respWith(403, nil).Response, Message: "API rate limit exceeded"},
			want: result{fault.GitHubRateLimited, ErrRateLimited, 10 * time.Minute, "rate limit of 5000"}},
		{name: "go-github's pre-check (no request made)", op: op{target: targetBlob},
			resp: &gh.Response{Response: &http.Response{StatusCode: 403, Header: http.Header{}, Request: &http.Request{Method: "GET", URL: reqURL}}},
			err: &gh.RateLimitError{Rate: gh.Rate{Limit: 60, Reset: gh.Timestamp{Time: now.Add(time.Hour)}}, Response: respWith(403, nil).Response,
				Message: "API rate limit of 60 still exceeded until ..., not making remote request."},
			want: result{fault.GitHubRateLimited, ErrRateLimited, time.Hour, "used up"}},
		{name: "secondary rate limit with retry-after", op: op{target: targetBlob}, resp: respWith(403, nil),
			err:  &gh.AbuseRateLimitError{Response: respWith(403, nil).Response, Message: "secondary rate limit", RetryAfter: &retry42},
			want: result{fault.GitHubRateLimited, ErrRateLimited, retry42, "secondary rate limit"}},
		{name: "secondary rate limit without a time", op: op{target: targetBlob}, resp: respWith(403, nil),
			err:  &gh.AbuseRateLimitError{Response: respWith(403, nil).Response, Message: "secondary rate limit"},
			want: result{fault.GitHubRateLimited, ErrRateLimited, time.Minute, "secondary rate limit"}},
		{name: "429 with Retry-After", op: op{target: targetBlob}, resp: respWith(429, map[string]string{"Retry-After": "7"}),
			err: errResp(respWith(429, nil), "Too Many Requests"), want: result{fault.GitHubRateLimited, ErrRateLimited, 7 * time.Second, "429"}},
		{name: "403 naming a rate limit", op: op{target: targetBlob}, resp: respWith(403, nil),
			err: errResp(respWith(403, nil), "You have exceeded a secondary rate limit"), want: result{fault.GitHubRateLimited, ErrRateLimited, time.Minute, "403"}},
		{name: "404 repository", op: op{target: targetRepo}, resp: respWith(404, nil),
			err: errResp(respWith(404, nil), "Not Found"), want: result{fault.GitHubNotFound, ErrNotFound, 0, "repository acme/prompts"}},
		{name: "404 on commits/{ref} is the repository", op: op{target: targetRef, name: "main"}, resp: respWith(404, nil),
			err: errResp(respWith(404, nil), "Not Found"), want: result{fault.GitHubNotFound, ErrNotFound, 0, "repository acme/prompts"}},
		{name: "422 on commits/{ref} is the ref", op: op{target: targetRef, name: "nope"}, resp: respWith(422, nil),
			err: errResp(respWith(422, nil), "No commit found for SHA: nope"), want: result{fault.GitHubNotFound, ErrNotFound, 0, `ref "nope"`}},
		{name: "404 commit", op: op{target: targetCommit, name: "abc"}, resp: respWith(404, nil),
			err: errResp(respWith(404, nil), "Not Found"), want: result{fault.GitHubNotFound, ErrNotFound, 0, `ref "abc"`}},
		{name: "404 folder", op: op{target: targetTree, name: "templates"}, resp: respWith(404, nil),
			err: errResp(respWith(404, nil), "Not Found"), want: result{fault.GitHubNotFound, ErrNotFound, 0, `folder "templates"`}},
		{name: "404 blob", op: op{target: targetBlob, name: "abc"}, resp: respWith(404, nil),
			err: errResp(respWith(404, nil), "Not Found"), want: result{fault.GitHubNotFound, ErrNotFound, 0, "file object abc"}},
		{name: "409 on write", op: op{target: targetWrite, name: "templates/a.json"}, resp: respWith(409, nil),
			err: errResp(respWith(409, nil), "templates/a.json does not match abc"), want: result{fault.WriteConflict, ErrConflict, 0, "someone changed templates/a.json"}},
		{name: "422 on write", op: op{target: targetWrite, name: "templates/a.json"}, resp: respWith(422, nil),
			err: errResp(respWith(422, nil), `"sha" wasn't supplied.`), want: result{fault.WriteConflict, ErrConflict, 0, "someone changed"}},
		{name: "other 4xx", op: op{target: targetBlob}, resp: respWith(406, nil),
			err: errResp(respWith(406, nil), "Not Acceptable"), want: result{fault.NetworkError, ErrUnavailable, 0, "GitHub answered 406"}},
		{name: "500", op: op{target: targetRef}, resp: respWith(500, nil),
			err: errResp(respWith(500, nil), ""), want: result{fault.NetworkError, ErrUnavailable, 0, "GitHub returned 500"}},
		{name: "502", op: op{target: targetBlob}, resp: respWith(502, nil),
			err: errResp(respWith(502, nil), ""), want: result{fault.NetworkError, ErrUnavailable, 0, "GitHub returned 502"}},
		{name: "unreadable 200", op: op{target: targetTree}, resp: respWith(200, nil),
			err: &json.SyntaxError{}, want: result{fault.NetworkError, ErrUnavailable, 0, "could not be read"}},
		{name: "deadline", op: op{target: targetRef}, err: context.DeadlineExceeded,
			want: result{fault.NetworkError, context.DeadlineExceeded, 0, "did not answer in time"}},
		{name: "client timeout", op: op{target: targetRef}, err: &url.Error{Op: "Get", URL: reqURL.String(), Err: timeoutErr{}},
			want: result{fault.NetworkError, ErrUnavailable, 0, "did not answer in time"}},
		{name: "connection refused", op: op{target: targetRef}, err: &url.Error{Op: "Get", URL: reqURL.String(), Err: errors.New("connection refused")},
			want: result{fault.NetworkError, ErrUnavailable, 0, "cannot reach GitHub"}},
		// GetArchiveLink reads no body: its errors say only "unexpected
		// status code", and the headers tell a rate limit from a refusal.
		{name: "archive 401", op: op{target: targetArchive, name: "abc"}, resp: respWith(401, nil),
			err: archiveStatus(401), want: result{fault.GitHubAuthFailed, ErrUnauthorized, 0, "token was refused"}},
		{name: "archive 403", op: op{target: targetArchive, name: "abc"}, resp: respWith(403, map[string]string{"X-RateLimit-Remaining": "4000"}),
			err: archiveStatus(403), want: result{fault.GitHubAuthFailed, ErrUnauthorized, 0, "not allowed to do this"}},
		{name: "archive 403, primary rate limit", op: op{target: targetArchive, name: "abc"},
			resp: respWith(403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(now.Add(20 * time.Minute).Unix())}),
			err:  archiveStatus(403), want: result{fault.GitHubRateLimited, ErrRateLimited, 20 * time.Minute, "rate limit is used up"}},
		{name: "archive 403, secondary rate limit", op: op{target: targetArchive, name: "abc"},
			resp: respWith(403, map[string]string{"Retry-After": "42", "X-RateLimit-Remaining": "4000"}),
			err:  archiveStatus(403), want: result{fault.GitHubRateLimited, ErrRateLimited, retry42, "403"}},
		{name: "archive 429", op: op{target: targetArchive, name: "abc"}, resp: respWith(429, map[string]string{"Retry-After": "7"}),
			err: archiveStatus(429), want: result{fault.GitHubRateLimited, ErrRateLimited, 7 * time.Second, "429"}},
		{name: "archive 404", op: op{target: targetArchive, name: "abc"}, resp: respWith(404, nil),
			err: archiveStatus(404), want: result{fault.GitHubNotFound, ErrNotFound, 0, "archive of commit abc"}},
		{name: "archive 503", op: op{target: targetArchive, name: "abc"}, resp: respWith(503, nil),
			err: archiveStatus(503), want: result{fault.NetworkError, ErrUnavailable, 0, "GitHub returned 503"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := c
			if tt.client != nil {
				cl = tt.client
			}
			err := cl.mapError(tt.op, tt.resp, tt.err)
			if !errors.Is(err, tt.want.sentinel) {
				t.Errorf("error %v does not match %v", err, tt.want.sentinel)
			}
			f := fault.As(err)
			if tt.want.code == "" {
				if f != nil {
					t.Errorf("got fault %s, want a plain error", f.Code)
				}
				if !strings.Contains(err.Error(), tt.want.why) {
					t.Errorf("error %q does not contain %q", err, tt.want.why)
				}
				return
			}
			if f == nil {
				t.Fatalf("got %v, want a fault", err)
			}
			if f.Code != tt.want.code || f.RetryAfter != tt.want.retry || !strings.Contains(f.Why, tt.want.why) || f.How == "" {
				t.Errorf("fault = code %s retry %v why %q how %q; want %s, %v, why containing %q", f.Code, f.RetryAfter, f.Why, f.How, tt.want.code, tt.want.retry, tt.want.why)
			}
			if all := fmt.Sprintf("%s %s %v %v", err, f.How, f.Details, f.Err); strings.Contains(all, testToken) || strings.Contains(all, "access_token=") {
				t.Errorf("mapped error leaks the token or a query string: %s", all)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"plain message", "plain message"},
		{"GET https://api.github.com/repos/a/b/git/trees/x?recursive=1: 404", "GET https://api.github.com/repos/a/b/git/trees/x: 404"},
		{"Get \"https://user:" + testToken + "@ghe.example.com/api/v3/x?access_token=" + testToken + "\": EOF", "Get \"https://ghe.example.com/api/v3/x\": EOF"},
		{"bad token " + testToken + " here", "bad token [REDACTED] here"},
		{"fine-grained github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "fine-grained [REDACTED]"},
		{"header Authorization: Bearer s3cr3tvalue, more", "header Authorization: Bearer [REDACTED], more"},
		{"Authorization: token abcdef123456", "Authorization: token [REDACTED]"},
		{"sent bearer xyz123abc", "sent bearer [REDACTED]"},
		{"form token=abc&x=1 password=hunter2", "form token=[REDACTED]&x=1 password=[REDACTED]"},
		{"gho_short", "gho_short"}, // too short to be a token
	}
	for _, tt := range tests {
		if got := redact(tt.in, testToken); got != tt.want {
			t.Errorf("redact(%q) =\n %q, want\n %q", tt.in, got, tt.want)
		}
	}
	// The configured token is removed even when it looks like nothing known.
	odd := "custom-token-value-123/+"
	if got := redact("x "+odd+" y "+url.QueryEscape(odd), odd); strings.Contains(got, "custom-token-value-123") {
		t.Errorf("configured token survived: %q", got)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("GET https://api.github.com/x?a=b", "ghp_0123456789abcdefABCDEF")
	f.Add("Authorization: Bearer ghp_0123456789abcdefABCDEF", "ghp_0123456789abcdefABCDEF")
	f.Add("https://u:p@h/p?q#f ghp_0123456789abcdefABCDEF", "ghp_zzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s, tail string) {
		// Any GitHub-shaped token, wherever it appears, is gone afterwards.
		clean := strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return -1
		}, tail)
		if len(clean) < 16 {
			return
		}
		token := "ghp_" + clean
		out := redact(s+token+s, token)
		if strings.Contains(out, token) {
			t.Fatalf("token survived redaction: %q", out)
		}
		// Redaction is stable: applying it twice changes nothing more.
		if again := redact(out, token); again != out {
			t.Fatalf("redact is not idempotent: %q then %q", out, again)
		}
	})
}
