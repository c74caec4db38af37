package fakegithub

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

type call struct {
	method, path string
	header       map[string]string
	body         string
}

func do(t *testing.T, s *Server, base string, c call) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, base+strings.TrimPrefix(c.path, "/"), strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestEndpoints(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	content := []byte(`{"hello":"world"}`)
	head := s.PutFile("templates/A.json", content)
	blob := BlobSHA(content)
	// `echo hello | git hash-object --stdin`
	if got := BlobSHA([]byte("hello\n")); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("BlobSHA(hello) = %q, want git's object name", got)
	}

	tests := []struct {
		name       string
		base       string
		call       call
		wantStatus int
		wantBody   string // substring
		wantRoute  string
	}{
		{"repository", s.URL(), call{method: "GET", path: "repos/acme/prompts"}, 200, `"default_branch":"main"`, RouteRepo},
		{"unknown repository", s.URL(), call{method: "GET", path: "repos/acme/nope"}, 404, "Not Found", RouteRepo},
		{"commit as SHA", s.URL(), call{method: "GET", path: "repos/acme/prompts/commits/main", header: map[string]string{"Accept": "application/vnd.github.sha"}}, 200, head, RouteCommit},
		{"HEAD is the default branch", s.URL(), call{method: "GET", path: "repos/acme/prompts/commits/HEAD", header: map[string]string{"Accept": "application/vnd.github.sha"}}, 200, head, RouteCommit},
		{"commit as JSON", s.URL(), call{method: "GET", path: "repos/acme/prompts/commits/main"}, 200, `"sha":"` + head, RouteCommit},
		{"unknown ref", s.URL(), call{method: "GET", path: "repos/acme/prompts/commits/nope"}, 422, "No commit found", RouteCommit},
		{"tree", s.URL(), call{method: "GET", path: "repos/acme/prompts/git/trees/" + head + "?recursive=1"}, 200, `"path":"templates/A.json"`, RouteTree},
		{"raw blob", s.URL(), call{method: "GET", path: "repos/acme/prompts/git/blobs/" + blob, header: map[string]string{"Accept": "application/vnd.github.v3.raw"}}, 200, `{"hello":"world"}`, RouteBlob},
		{"json blob", s.URL(), call{method: "GET", path: "repos/acme/prompts/git/blobs/" + blob}, 200, `"encoding":"base64"`, RouteBlob},
		{"contents", s.URL(), call{method: "GET", path: "repos/acme/prompts/contents/templates/A.json"}, 200, `"sha":"` + blob, RouteContents},
		{"missing contents", s.URL(), call{method: "GET", path: "repos/acme/prompts/contents/templates/B.json"}, 404, "Not Found", RouteContents},
		{"rate limit", s.URL(), call{method: "GET", path: "rate_limit"}, 200, `"limit":5000`, RouteRateLimit},
		{"enterprise prefix", s.EnterpriseURL(), call{method: "GET", path: "repos/acme/prompts"}, 200, `"full_name":"acme/prompts"`, RouteRepo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Reset()
			resp, body := do(t, s, tt.base, tt.call)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("status %d body %s; want %d containing %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if n := s.Count(tt.wantRoute); n != 1 || s.Total() != 1 {
				t.Errorf("Count(%s) = %d, Total = %d; want 1", tt.wantRoute, n, s.Total())
			}
			if resp.Header.Get("X-RateLimit-Remaining") == "" {
				t.Error("no rate-limit headers")
			}
		})
	}
}

func TestSetDefaultBranch(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	first := s.Head()
	second := s.PutFile("templates/A.json", []byte("{}"))
	s.SetBranch("develop", second)
	s.SetBranch("main", first)
	s.SetDefaultBranch("develop")
	sha := map[string]string{"Accept": "application/vnd.github.sha"}
	for path, want := range map[string]string{
		"repos/acme/prompts":              `"default_branch":"develop"`,
		"repos/acme/prompts/commits/HEAD": second,
		"repos/acme/prompts/commits/main": first,
	} {
		if _, body := do(t, s, s.URL(), call{method: "GET", path: path, header: sha}); !strings.Contains(body, want) {
			t.Errorf("GET %s = %s, want %s", path, body, want)
		}
	}
}

func TestConditionalRequests(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	sha := call{method: "GET", path: "repos/acme/prompts/commits/main", header: map[string]string{"Accept": "application/vnd.github.sha"}}
	resp, _ := do(t, s, s.URL(), sha)
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
		t.Fatalf("ETag %q is not a quoted strong ETag", etag)
	}
	before := s.Remaining()

	tests := []struct {
		name   string
		inm    string
		accept string
		auth   string
		want   int
	}{
		{"same etag", etag, "application/vnd.github.sha", "", 304},
		{"weak form of the same etag", "W/" + etag, "application/vnd.github.sha", "", 304},
		{"one of a list", `"x", ` + etag, "application/vnd.github.sha", "", 304},
		{"star", "*", "application/vnd.github.sha", "", 304},
		{"other etag", `"x"`, "application/vnd.github.sha", "", 200},
		{"etag varies with Accept", etag, "application/json", "", 200},
		{"etag varies with credentials", etag, "application/vnd.github.sha", "Bearer someone", 200},
	}
	for _, tt := range tests {
		c := call{method: "GET", path: sha.path, header: map[string]string{"Accept": tt.accept, "If-None-Match": tt.inm}}
		if tt.auth != "" {
			c.header["Authorization"] = tt.auth
		}
		resp, body := do(t, s, s.URL(), c)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if tt.want == 304 && body != "" {
			t.Errorf("%s: 304 with a body", tt.name)
		}
	}
	// Three 200s were counted; the four 304s were not.
	if got := s.Remaining(); got != before-3 {
		t.Errorf("remaining went from %d to %d, want %d (304s are free)", before, got, before-3)
	}

	// A new commit changes the representation, so the old ETag misses.
	s.PutFile("x.json", []byte("{}"))
	resp, _ = do(t, s, s.URL(), call{method: "GET", path: sha.path, header: map[string]string{"Accept": "application/vnd.github.sha", "If-None-Match": etag}})
	if resp.StatusCode != 200 {
		t.Errorf("after a commit: status %d, want 200", resp.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	repo := call{method: "GET", path: "repos/acme/prompts"}

	s.SetToken("ghp_right")
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer ghp_wrong", 401}, {"Bearer ghp_right", 200}, {"token ghp_right", 200}} {
		c := repo
		c.header = map[string]string{"Authorization": tt.auth}
		if resp, _ := do(t, s, s.URL(), c); resp.StatusCode != tt.want {
			t.Errorf("Authorization %q: status %d, want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}
	s.SetToken("")

	s.SetFault(502)
	if resp, _ := do(t, s, s.URL(), repo); resp.StatusCode != 502 {
		t.Errorf("SetFault(502): status %d", resp.StatusCode)
	}
	s.SetFault(0)

	until := time.Now().Add(time.Hour).Truncate(time.Second)
	s.SetRateLimited(until)
	resp, body := do(t, s, s.URL(), repo)
	if resp.StatusCode != 403 || resp.Header.Get("X-RateLimit-Remaining") != "0" ||
		resp.Header.Get("X-RateLimit-Reset") != strconv.FormatInt(until.Unix(), 10) || !strings.Contains(body, "API rate limit exceeded") {
		t.Errorf("rate limited: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := do(t, s, s.URL(), call{method: "GET", path: "rate_limit"}); resp.StatusCode != 200 {
		t.Errorf("rate_limit while limited: %d, want 200", resp.StatusCode)
	}
	s.SetRateLimited(time.Time{})

	s.SetRemaining(0)
	if resp, _ := do(t, s, s.URL(), repo); resp.StatusCode != 403 {
		t.Errorf("spent budget: status %d, want 403", resp.StatusCode)
	}
	s.SetRemaining(10)

	s.SetDown(true)
	s.Reset()
	req, _ := http.NewRequest("GET", s.URL()+"repos/acme/prompts", nil)
	if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
		resp.Body.Close()
		t.Error("request to a down server succeeded")
	}
	if r := s.Requests(); len(r) != 1 || r[0].Status != 0 {
		t.Errorf("down requests = %+v, want one recorded with status 0", r)
	}
	s.SetDown(false)
}

func TestPutContents(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	put := func(body map[string]any) (int, string) {
		b, _ := json.Marshal(body)
		resp, out := do(t, s, s.URL(), call{method: "PUT", path: "repos/acme/prompts/contents/templates/A.json", body: string(b)})
		return resp.StatusCode, out
	}
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	if st, out := put(map[string]any{"message": "add", "content": enc("v1")}); st != 201 || !strings.Contains(out, s.Head()) {
		t.Fatalf("create: %d %s", st, out)
	}
	v1 := BlobSHA([]byte("v1"))
	tests := []struct {
		name string
		body map[string]any
		want int
	}{
		{"update without sha", map[string]any{"message": "m", "content": enc("v2")}, 422},
		{"update with a stale sha", map[string]any{"message": "m", "content": enc("v2"), "sha": "0000"}, 409},
		{"unknown branch", map[string]any{"message": "m", "content": enc("v2"), "sha": v1, "branch": "nope"}, 404},
		{"no message", map[string]any{"content": enc("v2"), "sha": v1}, 422},
		{"update", map[string]any{"message": "m", "content": enc("v2"), "sha": v1}, 200},
	}
	for _, tt := range tests {
		if st, out := put(tt.body); st != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, st, out, tt.want)
		}
	}
	resp, body := do(t, s, s.URL(), call{method: "GET", path: "repos/acme/prompts/git/blobs/" + BlobSHA([]byte("v2")), header: map[string]string{"Accept": "application/vnd.github.raw"}})
	if resp.StatusCode != 200 || body != "v2" {
		t.Errorf("updated content: %d %q", resp.StatusCode, body)
	}
}

func TestGenerateLibrary(t *testing.T) {
	lib := GenerateLibrary(LibraryOptions{Valid: 5, Invalid: 7, Oversized: 2, MaxFileSize: 1000})
	if len(lib.Valid) != 5 || len(lib.Invalid) != 7 || len(lib.Oversized) != 2 || len(lib.Files) != 5+7+2+len(lib.Ignored) {
		t.Fatalf("library sizes: %d valid %d invalid %d oversized %d files", len(lib.Valid), len(lib.Invalid), len(lib.Oversized), len(lib.Files))
	}
	for _, p := range lib.Oversized {
		if len(lib.Files[p]) <= 1000 {
			t.Errorf("%s is %d bytes, not over the limit", p, len(lib.Files[p]))
		}
	}
	for _, n := range lib.Valid {
		var tmpl map[string]any
		if err := json.Unmarshal(lib.Files["templates/"+n+".json"], &tmpl); err != nil {
			t.Errorf("valid template %s is not JSON: %v", n, err)
		}
	}
	again := GenerateLibrary(LibraryOptions{Valid: 5, Invalid: 7, Oversized: 2, MaxFileSize: 1000})
	for p, b := range lib.Files {
		if string(again.Files[p]) != string(b) {
			t.Errorf("%s differs between two generations", p)
		}
	}
}
