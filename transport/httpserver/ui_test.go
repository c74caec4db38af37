package httpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// echoUI stands for the preview page: it answers what reached it.
var echoUI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	member := ""
	if m := auth.MemberOf(r.Context()); m != nil {
		member = m.Subject
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path, "query": r.URL.RawQuery, "member": member})
})

func echoed(t *testing.T, body string) map[string]string {
	t.Helper()
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("not the page's answer: %v: %s", err, body)
	}
	return got
}

// TestUIBehindTheToken: the page's files are open, its API needs the
// access token (the header, or ?token= as a page's EventSource can only
// give it), the token never reaches the page, and the Host and Origin
// checks hold for every path of it.
func TestUIBehindTheToken(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{AuthToken: "s3cret-token", UI: echoUI})
	tests := []struct {
		name   string
		path   string
		header []string
		status int
		// reached is the path the page sees, "" when it is not reached.
		reached, query string
	}{
		{"the page", "/ui/", nil, 200, "/", ""},
		{"its script", "/ui/app.js", nil, 200, "/app.js", ""},
		{"its API without the token", "/ui/api/library", nil, 401, "", ""},
		{"its API with a wrong token", "/ui/api/library?token=nope", nil, 401, "", ""},
		{"its API with the token in the URL", "/ui/api/template?name=Greet&token=s3cret-token", nil, 200, "/api/template", "name=Greet"},
		{"its API with the header", "/ui/api/events", []string{"Authorization", "Bearer s3cret-token"}, 200, "/api/events", ""},
		// Cleaned by a redirect, then guarded as what it names.
		{"a dot-dot path", "/ui/x/../api/library", nil, 307, "", ""},
		{"the page without its slash", "/ui", nil, 307, "", ""},
		{"a foreign Host", "/ui/", []string{"Host", "evil.example:80"}, 403, "", ""},
		{"a foreign Origin", "/ui/api/library?token=s3cret-token", []string{"Origin", "https://evil.example"}, 403, "", ""},
	}
	c.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(t, "GET", tc.path, "", tc.header...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if strings.Contains(r.body, "s3cret") {
				t.Errorf("the answer carries the token: %s", r.body)
			}
			if tc.reached == "" {
				if strings.Contains(r.body, `"path"`) {
					t.Errorf("the page was reached: %s", r.body)
				}
				return
			}
			got := echoed(t, r.body)
			if got["path"] != tc.reached || got["query"] != tc.query {
				t.Errorf("the page saw %q ?%q, want %q ?%q", got["path"], got["query"], tc.reached, tc.query)
			}
		})
	}
}

// TestUIWithoutIt: no page unless one is given.
func TestUIWithoutIt(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{})
	if r := c.do(t, "GET", "/ui/", ""); r.status != http.StatusNotFound {
		t.Errorf("/ui/ without a page: status %d", r.status)
	}
}

// TestUIBehindOAuth: with an authorization server the page's API needs a
// member's token in the Authorization header (a proxy that signs members
// in adds it), never in the URL, and the page reads as that member.
func TestUIBehindOAuth(t *testing.T) {
	is := newIssuer(t)
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{PublicURL: publicURL, Auth: verifier(t, is, nil), UI: echoUI})
	token := is.valid(t, tokenClaims{Sub: "alice"})
	if r := c.do(t, "GET", "/ui/api/library", ""); r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != challenge {
		t.Errorf("no token: status %d, challenge %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if r := c.do(t, "GET", "/ui/api/library?token="+token, ""); r.status != http.StatusUnauthorized {
		t.Errorf("the token in the URL: status %d, want 401", r.status)
	}
	r := c.do(t, "GET", "/ui/api/library", "", bearerOf(token)...)
	if r.status != http.StatusOK || echoed(t, r.body)["member"] != "alice" {
		t.Errorf("alice's token: status %d %s", r.status, r.body)
	}
	if r := c.do(t, "GET", "/ui/", ""); r.status != http.StatusOK {
		t.Errorf("the page's own file: status %d", r.status)
	}
}
