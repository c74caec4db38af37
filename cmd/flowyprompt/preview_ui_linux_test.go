package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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
