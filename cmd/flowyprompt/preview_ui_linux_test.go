package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeUI: serve --ui (here FLOWYPROMPT_UI) puts the preview page at
// /ui/ of the HTTP listener, its API behind the access token.
func TestServeUI(t *testing.T) {
	s := startHTTP(t, 0, "FLOWYPROMPT_UI=true", "MCP_AUTH_TOKEN=ui-secret")
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		res, err := client.Get("http://" + s.addr + path)
		if err != nil {
			s.fatalf(t, "GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	status, h, body := get("/ui/")
	if status != http.StatusOK || !strings.Contains(body, `<script src="app.js"`) || !strings.HasPrefix(h.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("/ui/: %d %v\n%s", status, h, body)
	}
	if status, _, body := get("/ui/api/library"); status != http.StatusUnauthorized {
		t.Errorf("the API without the token: %d %s", status, body)
	}
	status, _, body = get("/ui/api/library?token=ui-secret")
	var lib struct {
		Templates []struct{ Name string } `json:"templates"`
	}
	if err := json.Unmarshal([]byte(body), &lib); status != http.StatusOK || err != nil || len(lib.Templates) == 0 {
		t.Fatalf("the API with the token: %d %v %s", status, err, body)
	}
	if !strings.Contains(s.Output(), "preview page (read-only):") {
		t.Errorf("serve does not say where the page is:\n%s", s.Output())
	}
}

// TestServeUIStreamsPerClient: the page's event streams take places of
// the caps sessions and listen streams take: a client at
// --max-sessions-per-client is refused another, with 429 naming the
// limit, as it is refused a session, while another client still opens
// one; a stream closed gives its place back.
func TestServeUIStreamsPerClient(t *testing.T) {
	s := startHTTPArgs(t, "--ui", "--max-sessions-per-client", "2")
	hog, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	// open opens the page's event stream with c, and returns its status,
	// the refusal's code, and the function that closes it.
	open := func(c *http.Client) (int, string, func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/ui/api/events", nil)
		// No client timeout: it would end the stream.
		res, err := (&http.Client{Transport: c.Transport}).Do(req)
		if err != nil {
			s.fatalf(t, "GET /ui/api/events: %v", err)
		}
		if res.StatusCode != http.StatusOK {
			defer res.Body.Close()
			var answer errorBody
			_ = json.NewDecoder(res.Body).Decode(&answer)
			if !strings.Contains(answer.Error.Data.What, "event stream of the preview page") {
				t.Errorf("the refusal does not name the page's stream: %+v", answer.Error.Data)
			}
			return res.StatusCode, answer.Error.Data.Code, cancel
		}
		// Open once its first event is there.
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "retry:") {
			s.fatalf(t, "the stream's first line: %q %v", line, err)
		}
		return res.StatusCode, "", func() { cancel(); res.Body.Close() }
	}
	_, _, closeFirst := open(hog)
	open(hog)
	if status, code, _ := open(hog); status != http.StatusTooManyRequests || code != "CLIENT_LIMIT_REACHED" {
		t.Fatalf("a stream over the client's cap: %d %s, want 429 CLIENT_LIMIT_REACHED", status, code)
	}
	if status, code := s.initializeFrom(t, hog); status != http.StatusTooManyRequests || code != "CLIENT_LIMIT_REACHED" {
		t.Fatalf("a session of a client whose streams fill its cap: %d %s, want 429 CLIENT_LIMIT_REACHED", status, code)
	}
	if status, code, _ := open(other); status != http.StatusOK {
		t.Fatalf("another client's stream: %d %s", status, code)
	}
	closeFirst()
	waitFor(t, 10*time.Second, "the closed stream's place given back", func() (bool, string) {
		n := s.sessions(t)
		return n == 2, fmt.Sprintf("/healthz counts %v", n)
	})
	if status, code, _ := open(hog); status != http.StatusOK {
		t.Fatalf("a stream in the place of one closed: %d %s", status, code)
	}
}
