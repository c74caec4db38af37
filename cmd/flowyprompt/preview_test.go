package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPreviewGuard: the preview answers requests that name this machine,
// and refuses a render posted from another site's page.
func TestPreviewGuard(t *testing.T) {
	reached := 0
	h := previewGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }), "127.0.0.1", "8123")
	tests := []struct {
		name, method, host string
		header             map[string]string
		status             int
	}{
		{"the page", "GET", "127.0.0.1:8123", nil, 200},
		{"by localhost", "GET", "localhost:8123", nil, 200},
		{"a rebound name", "GET", "evil.example:8123", nil, 403},
		{"another port", "GET", "127.0.0.1:9999", nil, 403},
		{"a render from the page", "POST", "127.0.0.1:8123", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8123"}, 200},
		{"a render from another site", "POST", "127.0.0.1:8123", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"a render from another site, old browser", "POST", "127.0.0.1:8123", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a read from another site", "GET", "127.0.0.1:8123", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached
			req := httptest.NewRequest(tt.method, "http://"+tt.host+"/api/render", nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if got := reached - before; (tt.status == 200) != (got == 1) {
				t.Errorf("the page was reached %d times, status %d", got, rec.Code)
			}
		})
	}
}

// TestPreviewLoopbackOnly: the preview listens on this machine only, as
// it asks no credential.
func TestPreviewLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "[::1]:8080": true, "localhost:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "192.168.1.2:8080": false, "example.com:80": false,
		"127.0.0.1": false, "127.0.0.1:70000": false,
	} {
		if err := loopbackAddr(addr); (err == nil) != ok {
			t.Errorf("loopbackAddr(%q) = %v, want accepted %v", addr, err, ok)
		}
	}
}
