package httpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/stdio"
	"github.com/google/go-cmp/cmp"
)

func port(srv *httpserver.Server) string {
	_, p, _ := net.SplitHostPort(srv.Addr().String())
	return p
}

// TestHostAndOrigin: DNS rebinding protection. A page whose name was
// rebound to 127.0.0.1 sends its own Host and Origin: both are refused
// with 403 unless they are loopback names or configured.
func TestHostAndOrigin(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	srv, c := start(t, e, httpserver.Options{
		AllowedHosts:   []string{"prompts.internal", "proxy.example.com:8443"},
		AllowedOrigins: []string{"https://inspector.example.com"},
		PublicURL:      "https://public.example.com",
	})
	p := port(srv)
	tests := []struct {
		name     string
		host     string
		origin   string
		want     int
		wantCode string
	}{
		{name: "127.0.0.1 with the port", host: "127.0.0.1:" + p, want: 200},
		{name: "localhost with the port", host: "localhost:" + p, want: 200},
		{name: "[::1] with the port", host: "[::1]:" + p, want: 200},
		{name: "LOCALHOST in capitals", host: "LOCALHOST:" + p, want: 200},
		{name: "loopback on another port", host: "localhost:1", want: 403, wantCode: "FORBIDDEN_HOST"},
		{name: "rebinding host", host: "evil.example.com", want: 403, wantCode: "FORBIDDEN_HOST"},
		{name: "rebinding host with the port", host: "evil.example.com:" + p, want: 403, wantCode: "FORBIDDEN_HOST"},
		{name: "rebinding host and origin", host: "evil.example.com", origin: "http://evil.example.com", want: 403, wantCode: "FORBIDDEN_HOST"},
		{name: "configured name, any port", host: "prompts.internal:9999", want: 200},
		{name: "configured name:port", host: "proxy.example.com:8443", want: 200},
		{name: "configured name, wrong port", host: "proxy.example.com:8444", want: 403, wantCode: "FORBIDDEN_HOST"},
		{name: "public URL host", host: "public.example.com", want: 200},
		{name: "foreign origin", host: "127.0.0.1:" + p, origin: "http://evil.example.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "null origin", host: "127.0.0.1:" + p, origin: "null", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "loopback origin, any port (Inspector's web UI)", host: "127.0.0.1:" + p, origin: "http://localhost:6274", want: 200},
		{name: "configured origin", host: "127.0.0.1:" + p, origin: "https://inspector.example.com", want: 200},
		{name: "configured origin, other scheme", host: "127.0.0.1:" + p, origin: "http://inspector.example.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "public URL origin", host: "127.0.0.1:" + p, origin: "https://public.example.com", want: 200},
		{name: "user information before a loopback host", host: "127.0.0.1:" + p, origin: "http://evil.com@localhost", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "user and password before a loopback host", host: "127.0.0.1:" + p, origin: "http://evil.com:x@127.0.0.1:6274", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "user information before a configured origin", host: "127.0.0.1:" + p, origin: "https://evil@inspector.example.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "fragment", host: "127.0.0.1:" + p, origin: "http://localhost#@evil.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "path", host: "127.0.0.1:" + p, origin: "http://localhost/evil.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
		{name: "query", host: "127.0.0.1:" + p, origin: "http://localhost?evil.com", want: 403, wantCode: "FORBIDDEN_ORIGIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/mcp", "/sse"} {
				header := []string{"Host", tc.host}
				if tc.origin != "" {
					header = append(header, "Origin", tc.origin)
				}
				var r reply
				if path == "/mcp" {
					r = c.do(t, http.MethodPost, path, initMCP, header...)
				} else {
					// A direct POST /sse: answered in the body, no stream to close.
					r = c.do(t, http.MethodPost, path, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header...)
				}
				if r.status != tc.want {
					t.Fatalf("%s: status %d, want %d: %s", path, r.status, tc.want, r.body)
				}
				if tc.wantCode != "" {
					d := errData(t, r.body)
					if d.Code != tc.wantCode || d.What == "" || d.Why == "" || d.How == "" {
						t.Errorf("%s: error data %+v, want %s with what/why/how", path, d, tc.wantCode)
					}
				}
				if tc.origin != "" && tc.want == 200 && r.header.Get("Access-Control-Allow-Origin") != tc.origin {
					t.Errorf("%s: Access-Control-Allow-Origin = %q", path, r.header.Get("Access-Control-Allow-Origin"))
				}
				if tc.want != 200 && r.header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("%s: refused, yet Access-Control-Allow-Origin = %q", path, r.header.Get("Access-Control-Allow-Origin"))
				}
			}
		})
	}
}

func TestAnyHostAndOrigin(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"*"}})
	r := c.do(t, http.MethodGet, "/healthz", "", "Host", "anything.example", "Origin", "https://elsewhere.example")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	// "*" allows every origin, not what is no origin at all.
	r = c.do(t, http.MethodGet, "/healthz", "", "Origin", "http://evil.com@localhost")
	if r.status != http.StatusForbidden || errData(t, r.body).Code != "FORBIDDEN_ORIGIN" || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an origin with user information under --allowed-origins '*': %d, Access-Control-Allow-Origin %q: %s",
			r.status, r.header.Get("Access-Control-Allow-Origin"), r.body)
	}
}

func TestCORSPreflight(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{AuthToken: "s3cret"})
	r := c.do(t, http.MethodOptions, "/mcp", "", "Origin", "http://localhost:6274",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-session-id")
	if r.status != http.StatusNoContent {
		t.Fatalf("preflight: %d %s", r.status, r.body)
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin":   "http://localhost:6274",
		"Access-Control-Allow-Methods":  "GET, POST, DELETE, OPTIONS",
		"Access-Control-Expose-Headers": "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if h := r.header.Get("Access-Control-Allow-Headers"); !strings.Contains(h, "Mcp-Session-Id") || !strings.Contains(h, "Authorization") {
		t.Errorf("Access-Control-Allow-Headers = %q", h)
	}
}

// TestToken: with --auth-token, /mcp, /sse and /sse/message want the
// bearer token (or ?token= on the SSE URLs, for Void), whatever session a
// request names; /healthz stays open.
func TestToken(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{AuthToken: "s3cret-token"})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	bearer := []string{"Authorization", "Bearer s3cret-token"}
	mcpID := c.openMCP(t, bearer...)
	ev, endpoint := c.openSSE(t, "?token=s3cret-token")
	defer ev.close()
	sseID := sessionRE.FindStringSubmatch(endpoint)[1]
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header []string
		want   int
	}{
		{"mcp without a token", "POST", "/mcp", initMCP, nil, 401},
		{"mcp with a wrong token", "POST", "/mcp", initMCP, []string{"Authorization", "Bearer nope"}, 401},
		{"mcp with a token prefix", "POST", "/mcp", initMCP, []string{"Authorization", "Bearer s3cret"}, 401},
		{"mcp with the token", "POST", "/mcp", initMCP, bearer, 200},
		{"mcp with the token, lower-case scheme", "POST", "/mcp", initMCP, []string{"Authorization", "bearer s3cret-token"}, 200},
		{"mcp with a Basic header", "POST", "/mcp", initMCP, []string{"Authorization", "Basic czNjcmV0LXRva2Vu"}, 401},
		{"mcp does not take the query token", "POST", "/mcp?token=s3cret-token", initMCP, nil, 401},
		{"mcp session without a token", "POST", "/mcp", ping, []string{"Mcp-Session-Id", mcpID}, 401},
		{"mcp session stream without a token", "GET", "/mcp", "", []string{"Mcp-Session-Id", mcpID, "Accept", "text/event-stream"}, 401},
		{"mcp session DELETE without a token", "DELETE", "/mcp", "", []string{"Mcp-Session-Id", mcpID}, 401},
		{"mcp session with the token", "POST", "/mcp", ping, []string{"Mcp-Session-Id", mcpID, "Authorization", "Bearer s3cret-token"}, 200},
		{"sse POST without a token", "POST", "/sse", ping, nil, 401},
		{"sse POST with the query token", "POST", "/sse?token=s3cret-token", ping, nil, 200},
		{"sse POST with a wrong query token", "POST", "/sse?token=s3cret-tokeN", ping, nil, 401},
		{"sse POST with the header", "POST", "/sse", ping, bearer, 200},
		{"sse POST on a session without a token", "POST", "/sse?session_id=" + sseID, ping, nil, 401},
		{"sse message without a token", "POST", "/sse/message?session_id=" + sseID, ping, nil, 401},
		{"sse message with a wrong query token", "POST", "/sse/message?session_id=" + sseID + "&token=nope", ping, nil, 401},
		{"sse message with a wrong header", "POST", "/sse/message?session_id=" + sseID, ping, []string{"Authorization", "Bearer nope"}, 401},
		{"sse message to no session without a token", "POST", "/sse/message?session_id=0123456789abcdef0123456789abcdef", ping, nil, 401},
		{"healthz is open", "GET", "/healthz", "", nil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(t, tc.method, tc.path, tc.body, tc.header...)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want == 401 {
				if r.header.Get("WWW-Authenticate") == "" || errData(t, r.body).Code != "UNAUTHORIZED" {
					t.Errorf("401 without WWW-Authenticate or UNAUTHORIZED: %v %s", r.header, r.body)
				}
				if strings.Contains(r.body, "s3cret") {
					t.Errorf("the answer repeats the token: %s", r.body)
				}
			}
		})
	}

	t.Run("sse stream with the query token", func(t *testing.T) {
		if r := c.do(t, http.MethodGet, "/sse", ""); r.status != 401 {
			t.Fatalf("GET /sse without a token: %d", r.status)
		}
		// Void gives the token in the SSE URL and posts to the endpoint
		// URL as it is: the URL carries the token.
		if u, err := url.Parse(endpoint); err != nil || u.Query().Get("token") != "s3cret-token" {
			t.Fatalf("the endpoint URL does not carry the token: %s", endpoint)
		}
		if got := c.post(t, endpoint, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); got != http.StatusAccepted {
			t.Fatalf("post to the endpoint: %d", got)
		}
		// The refused posts of the table reached nothing: the next
		// message on the stream answers this one.
		if m := ev.message(t); m["id"] != float64(2) {
			t.Fatalf("the next message is %v, want the answer to ping 2", m)
		}
	})

	t.Run("sse stream with the header", func(t *testing.T) {
		ev := c.stream(t, "/sse", bearer...)
		defer ev.close()
		e := ev.next(t)
		if e.name != "endpoint" || strings.Contains(e.data, "token") {
			t.Fatalf("first event %q %q, want the endpoint without the token", e.name, e.data)
		}
		path := strings.TrimPrefix(e.data, c.base)
		if r := c.do(t, http.MethodPost, path, initMCP); r.status != 401 {
			t.Fatalf("post without the header: %d %s", r.status, r.body)
		}
		if r := c.do(t, http.MethodPost, path, initMCP, bearer...); r.status != http.StatusAccepted {
			t.Fatalf("post with the header: %d %s", r.status, r.body)
		}
		if m := ev.message(t); m["id"] != float64(0) || m["result"] == nil {
			t.Fatalf("the next message is %v, want the initialize answer", m)
		}
	})
}

// TestSessionCap: the cap counts every transport's sessions and the
// listen streams; with all of them connected to a stream (none idle),
// whatever would open one more gets 503 with Retry-After.
func TestSessionCap(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{MaxSessions: 3})
	id := c.openMCP(t)
	get := c.stream(t, "/mcp", "Mcp-Session-Id", id)
	defer get.close()
	ev, _ := c.openSSE(t, "")
	defer ev.close()
	l := c.listen(t)
	defer l.close()
	for _, tc := range []struct {
		method, path, body string
		header             []string
	}{
		{"POST", "/mcp", initMCP, nil},
		{"GET", "/sse", "", nil},
		{"POST", "/sse", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		{"POST", "/mcp", listenBody, listenHeaders},
	} {
		r := c.do(t, tc.method, tc.path, tc.body, tc.header...)
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || errData(t, r.body).Code != "TOO_MANY_SESSIONS" {
			t.Errorf("%s %s: %d Retry-After %q %s, want 503 TOO_MANY_SESSIONS with Retry-After", tc.method, tc.path,
				r.status, r.header.Get("Retry-After"), r.body)
		}
	}
}

// TestIdleSessionsReclaimed is the lock-out of one client that fills the
// server with sessions it does not use: with the cap reached, another
// client's initialize and GET /sse still get in, each in the place of the
// idle session used longest ago.
func TestIdleSessionsReclaimed(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{MaxSessions: 3})
	ids := []string{c.openMCP(t), c.openMCP(t), c.openMCP(t)}
	c.openMCP(t)              // in place of ids[0]
	ev, _ := c.openSSE(t, "") // in place of ids[1]
	defer ev.close()
	for i, want := range []int{http.StatusNotFound, http.StatusNotFound, http.StatusOK} {
		r := c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", ids[i])
		if r.status != want {
			t.Errorf("session %d after two newcomers: %d, want %d", i, r.status, want)
		}
	}
}

// TestSessionsPerClient: a client is its token, else its address, which a
// trusted proxy's X-Forwarded-For gives and nobody else's does. At its cap
// a client gets 429 while others still get in.
func TestSessionsPerClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts httpserver.Options
		// header of each client's requests
		a, b []string
		// bIsA: b is counted as a, and refused too
		bIsA bool
	}{
		{name: "addresses from a trusted proxy", opts: httpserver.Options{TrustedProxies: []string{"127.0.0.0/8"}},
			a: []string{"X-Forwarded-For", "198.51.100.7"}, b: []string{"X-Forwarded-For", "198.51.100.8, 127.0.0.1"}},
		{name: "X-Forwarded-For from an untrusted peer is ignored", opts: httpserver.Options{TrustedProxies: []string{"10.0.0.0/8"}},
			a: []string{"X-Forwarded-For", "198.51.100.7"}, b: []string{"X-Forwarded-For", "198.51.100.8"}, bIsA: true},
		{name: "a forged hop left of the proxy's does not count", opts: httpserver.Options{TrustedProxies: []string{"127.0.0.1"}},
			a: []string{"X-Forwarded-For", "203.0.113.1, 198.51.100.7"}, b: []string{"X-Forwarded-For", "203.0.113.2, 198.51.100.7"}, bIsA: true},
		{name: "one token is one client, whatever its address", opts: httpserver.Options{AuthToken: "s3cret", TrustedProxies: []string{"127.0.0.1"}},
			a: []string{"Authorization", "Bearer s3cret", "X-Forwarded-For", "198.51.100.7"},
			b: []string{"Authorization", "Bearer s3cret", "X-Forwarded-For", "198.51.100.8"}, bIsA: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
			tc.opts.MaxSessionsPerClient = 2
			_, c := start(t, e, tc.opts)
			c.openMCP(t, tc.a...)
			c.openMCP(t, tc.a...)
			r := c.do(t, http.MethodPost, "/mcp", initMCP, tc.a...)
			if d := errData(t, r.body); r.status != http.StatusTooManyRequests || d.Code != mcp.CodeClientLimit || d.Details["max"] != float64(2) {
				t.Fatalf("a's third session: %d %s, want 429 %s naming the limit", r.status, r.body, mcp.CodeClientLimit)
			}
			// Both eras' sessions and listen streams count alike.
			for _, req := range []struct {
				method, path, body string
				header             []string
			}{{"GET", "/sse", "", nil}, {"POST", "/mcp", listenBody, listenHeaders}} {
				r := c.do(t, req.method, req.path, req.body, append(append([]string{}, req.header...), tc.a...)...)
				if r.status != http.StatusTooManyRequests || errData(t, r.body).Code != mcp.CodeClientLimit {
					t.Fatalf("a's %s %s at its cap: %d %s, want 429", req.method, req.path, r.status, r.body)
				}
			}
			r = c.do(t, http.MethodPost, "/mcp", initMCP, tc.b...)
			if got := r.status == http.StatusTooManyRequests; got != tc.bIsA {
				t.Fatalf("b's first session: %d %s; refused as a: %v, want %v", r.status, r.body, got, tc.bIsA)
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{MaxBodyBytes: 2048})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	id := c.openMCP(t)
	ev, endpoint := c.openSSE(t, "")
	defer ev.close()
	for name, do := range map[string]func() int{
		"/mcp":         func() int { return c.do(t, http.MethodPost, "/mcp", big, "Mcp-Session-Id", id).status },
		"/mcp init":    func() int { return c.do(t, http.MethodPost, "/mcp", big).status },
		"/sse":         func() int { return c.do(t, http.MethodPost, "/sse", big).status },
		"/sse/message": func() int { return c.post(t, endpoint, big) },
	} {
		if got := do(); got != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d, want 413", name, got)
		}
	}
}

func TestHealthz(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{Status: func(context.Context, bool) any {
		return map[string]any{"templates": 13, "invalid": 1, "source": map[string]string{"kind": "embedded"}, "stale": nil}
	}})
	c.openMCP(t)
	ev, _ := c.openSSE(t, "")
	defer ev.close()
	l := c.listen(t)
	defer l.close()
	r := c.do(t, http.MethodGet, "/healthz", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("healthz: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	// The open listen stream holds its message for as long as it is open.
	held, _ := got["held_bytes"].(map[string]any)
	if posted, _ := held["posted"].(float64); posted <= 0 || held["sse_buffers"] == nil {
		t.Errorf("healthz held_bytes = %v, want the listen's message held and the SSE buffers counted", got["held_bytes"])
	}
	delete(got, "held_bytes")
	want := map[string]any{
		"status":    "ok",
		"templates": float64(13),
		"invalid":   float64(1),
		"source":    map[string]any{"kind": "embedded"},
		"stale":     nil,
		"sessions": map[string]any{"total": float64(3), "sse": float64(1), "mcp": float64(1), "listen": float64(1),
			"clients": float64(1)},
		"dropped_streams": float64(0),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("healthz (-want +got):\n%s", diff)
	}
	if r := c.do(t, http.MethodPost, "/healthz", "{}"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", r.status)
	}
	if r := c.do(t, http.MethodGet, "/nope", ""); r.status != http.StatusNotFound || errData(t, r.body).Code != "NOT_FOUND" {
		t.Errorf("GET /nope: %d %s", r.status, r.body)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	for _, opts := range []httpserver.Options{
		{Addr: "no-port"},
		{PublicURL: "prompts.example.com"},
		{PublicURL: "ftp://prompts.example.com"},
		{PublicURL: "https://prompts.example.com/?x=1"},
		{AllowedOrigins: []string{"inspector.example.com"}},
		{AllowedOrigins: []string{"https://inspector.example.com/path"}},
		{TrustedProxies: []string{"proxy.example.com"}},
		{TrustedProxies: []string{"10.0.0.0/40"}},
	} {
		if _, err := httpserver.New(e, opts); err == nil {
			t.Errorf("New(%+v) accepted bad options", opts)
		}
	}
}

// TestListChangedEverywhere: a template added to the folder reaches a
// stdio session, an SSE session and a /mcp GET stream alike.
func TestListChangedEverywhere(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "templates", "examples", "Commit_Message.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Commit_Message.json"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	lib := templates.NewLibrary(folder.New(dir, templates.BuildOptions{Logger: quiet}), quiet)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	e, a, _ := newEngine(t, lib, mcp.EngineOptions{})
	defer a.Attach(e)()

	_, c := start(t, e, httpserver.Options{})
	sseEv, _ := c.openSSE(t, "")
	defer sseEv.close()
	id := c.openMCP(t)
	get := c.stream(t, "/mcp", "Mcp-Session-Id", id)
	defer get.close()
	stdioIn, stdioLines := stdioSession(t, e)
	defer stdioIn.Close()

	var doc map[string]any
	if err := json.Unmarshal(example, &doc); err != nil {
		t.Fatal(err)
	}
	doc["metadata"].(map[string]any)["name"] = "Added_Later"
	added, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "Added_Later.json"), added, 0o644); err != nil {
		t.Fatal(err)
	}
	// What the folder watch does on a change, without waiting on fsnotify.
	if ch, err := lib.Refresh(context.Background()); err != nil || len(ch.Added) != 1 {
		t.Fatalf("refresh: %+v %v", ch, err)
	}

	if m := sseEv.message(t); m["method"] != mcp.NotificationPromptsListChanged {
		t.Errorf("SSE got %v", m)
	}
	if m := get.message(t); m["method"] != mcp.NotificationPromptsListChanged {
		t.Errorf("/mcp GET got %v", m)
	}
	select {
	case line := <-stdioLines:
		if !strings.Contains(line, mcp.NotificationPromptsListChanged) {
			t.Errorf("stdio got %s", line)
		}
	case <-time.After(wait):
		t.Error("stdio got nothing")
	}
}

// stdioSession runs an initialized stdio session of e over pipes.
func stdioSession(t *testing.T, e *mcp.Engine) (io.WriteCloser, <-chan string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = stdio.Serve(context.Background(), e, inR, outW, stdio.Options{}); outW.Close() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	select {
	case line := <-lines:
		if !strings.Contains(line, `"id":1`) {
			t.Fatalf("stdio initialize: %s", line)
		}
	case <-time.After(wait):
		t.Fatal("stdio initialize: no answer")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return inW, lines
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestShutdown: shutting down stops accepting connections, lets the
// request in flight finish and reach its client, then ends the streams;
// Serve returns nil.
func TestShutdown(t *testing.T) {
	e, _, hk := newEngine(t, nil, mcp.EngineOptions{})
	srv, served, c := listen(t, e, httpserver.Options{})

	sseEv, _ := c.openSSE(t, "")
	id := c.openMCP(t)
	get := c.stream(t, "/mcp", "Mcp-Session-Id", id)
	held := make(chan reply, 1)
	go func() {
		held <- c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":"held","method":"test/hold"}`, "Mcp-Session-Id", id)
	}()
	<-hk.started

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		shut <- shutdown(ctx, srv, e)
	}()
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", srv.Addr().String()); err == nil {
		t.Error("still accepting connections after Shutdown began")
	}
	close(hk.release)
	r := <-held
	if r.status != 200 || !strings.Contains(r.body, `"held":"released"`) {
		t.Fatalf("in-flight request: %d %s", r.status, r.body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for name, done := range map[string]chan struct{}{"sse": sseEv.done, "mcp GET": get.done} {
		if err := closedWithin(done); err != nil {
			t.Errorf("%s stream: %v", name, err)
		}
	}
	if n := e.SessionCount(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

// TestShutdownBounded: a request that never finishes does not hold the
// shutdown past its deadline.
func TestShutdownBounded(t *testing.T) {
	e, _, hk := newEngine(t, nil, mcp.EngineOptions{})
	defer close(hk.release)
	srv, served, c := listen(t, e, httpserver.Options{})
	id := c.openMCP(t)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"test/hold"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Session-Id", id)
		if resp, err := c.c.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-hk.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := shutdown(ctx, srv, e); err == nil {
		t.Error("Shutdown reported success although a request was cut off")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := e.SessionCount(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

// TestHealthzOddStatus: a Status that reports nothing an object can hold
// (nil, a nil map, a scalar) still gives a well-formed report.
func TestHealthzOddStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status func(context.Context, bool) any
	}{
		{"nil", func(context.Context, bool) any { return nil }},
		{"nil map", func(context.Context, bool) any { return map[string]any(nil) }},
		{"nil pointer", func(context.Context, bool) any { return (*struct{ N int })(nil) }},
		{"scalar", func(context.Context, bool) any { return 42 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
			_, c := start(t, e, httpserver.Options{Status: tc.status})
			r := c.do(t, http.MethodGet, "/healthz", "")
			if r.status != http.StatusOK {
				t.Fatalf("healthz: %d %s", r.status, r.body)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"status": "ok", "dropped_streams": float64(0),
				"held_bytes": map[string]any{"posted": float64(0), "sse_buffers": float64(0)},
				"sessions":   map[string]any{"total": float64(0), "sse": float64(0), "mcp": float64(0), "listen": float64(0), "clients": float64(0)}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("healthz (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHealthzDetailNeedsToken: /healthz asks Status for the detailed
// report only for a request carrying the access token; without a token
// configured, nobody can show one, and every request gets counts only.
func TestHealthzDetailNeedsToken(t *testing.T) {
	tests := []struct {
		name   string
		token  string // the server's
		header []string
		detail bool
	}{
		{name: "no token configured", detail: false},
		{name: "no token configured, one sent anyway", header: []string{"Authorization", "Bearer x"}, detail: false},
		{name: "token configured, none sent", token: "s3cret", detail: false},
		{name: "token configured, a wrong one sent", token: "s3cret", header: []string{"Authorization", "Bearer s3cre"}, detail: false},
		{name: "token configured and sent", token: "s3cret", header: []string{"Authorization", "Bearer s3cret"}, detail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
			_, c := start(t, e, httpserver.Options{AuthToken: tc.token, Status: func(_ context.Context, detail bool) any {
				return map[string]bool{"detail": detail}
			}})
			r := c.do(t, http.MethodGet, "/healthz", "", tc.header...)
			var got struct{ Detail bool }
			if err := json.Unmarshal([]byte(r.body), &got); r.status != http.StatusOK || err != nil {
				t.Fatalf("healthz: %d %s (%v)", r.status, r.body, err)
			}
			if got.Detail != tc.detail {
				t.Errorf("detail = %v, want %v", got.Detail, tc.detail)
			}
		})
	}
}

// TestRefusedBeforeTheBody: a request refused on its head (a foreign
// Host, no token, an unknown session) is answered while its body is still
// arriving, and its connection closed. net/http would otherwise read the
// rest of a small body before writing the answer, to keep the connection
// for another request, and a body that never finishes would hold the
// refusal back for good.
func TestRefusedBeforeTheBody(t *testing.T) {
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{AuthToken: "s3cret"})
	addr := strings.TrimPrefix(c.base, "http://")
	tests := []struct {
		name, host, headers string
		want                int
	}{
		{"foreign Host", "evil.example", "Authorization: Bearer s3cret\r\n", http.StatusForbidden},
		{"no token", addr, "", http.StatusUnauthorized},
		{"unknown session", addr, "Authorization: Bearer s3cret\r\nMcp-Session-Id: " + strings.Repeat("0", 32) + "\r\n", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Ten bytes of a hundred, then nothing.
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 100\r\n\r\n{\"jsonrpc\"", tt.host, tt.headers)
			_ = conn.SetReadDeadline(time.Now().Add(wait)) // a guard against hanging, not a speed claim
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body is unfinished: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want || !res.Close {
				t.Fatalf("status %d, closing %v; want %d and the connection closed", res.StatusCode, res.Close, tt.want)
			}
		})
	}
}
