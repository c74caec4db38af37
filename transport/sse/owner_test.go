package sse_test

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// serveAs mounts the handler behind a stand-in for the security layer:
// the caller's member is the X-Test-Member header, and a token the client
// gave in its URL is the X-Test-URL-Token header.
func serveAs(t *testing.T) (*httptest.Server, *http.Client) {
	t.Helper()
	_, ts, c := serve(t, newEngine(t, mcp.EngineOptions{}), sse.Options{})
	inner := ts.Config.Handler
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, httpx.WithCaller(r, httpx.Caller{
			Owner:    httpx.Owner(sha256.Sum256([]byte(r.Header.Get("X-Test-Member")))),
			URLToken: r.Header.Get("X-Test-URL-Token")}))
	})
	return ts, c
}

// withHeader is c sending header (name, value) on every request.
func withHeader(c *http.Client, name, value string) *http.Client {
	return &http.Client{Transport: headerTransport{c.Transport, name, value}}
}

type headerTransport struct {
	next        http.RoundTripper
	name, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// TestSessionOwner: a session opened by one caller answers another (or
// one with no member) exactly as an unknown session, on /sse/message and
// on POST /sse, and what they posted never reaches the owner's stream:
// the owner's next answer is the next message on it.
func TestSessionOwner(t *testing.T) {
	ts, c := serveAs(t)
	alice := withHeader(c, "X-Test-Member", "alice")
	s, endpoint := initialized(t, alice, ts.URL+"/sse")
	id := endpoint[strings.Index(endpoint, "session_id=")+len("session_id="):]
	ping := `{"jsonrpc":"2.0","id":"intruder","method":"ping"}`
	tests := []struct {
		name, url string
		c         *http.Client
	}{
		{"message as another member", endpoint, withHeader(c, "X-Test-Member", "mallory")},
		{"message as nobody", endpoint, c},
		{"POST /sse as another member", ts.URL + "/sse?session_id=" + id, withHeader(c, "X-Test-Member", "mallory")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, unknown := post(t, alice, strings.Replace(tt.url, id, "0123456789abcdef0123456789abcdef", 1), ping)
			code, body := post(t, tt.c, tt.url, ping)
			if code != http.StatusNotFound || body != unknown {
				t.Errorf("%d %s; want what an unknown session gets: 404 %s", code, body, unknown)
			}
		})
	}
	if code, body := post(t, alice, endpoint, `{"jsonrpc":"2.0","id":"mine","method":"ping"}`); code != http.StatusAccepted {
		t.Fatalf("alice's ping: %d %s", code, body)
	}
	if m := s.message(t); m["id"] != "mine" {
		t.Fatalf("the next message on alice's stream is %v, want the answer to her ping", m)
	}
}

// TestEndpointCarriesURLToken: a client that gave its token in the URL
// gets an endpoint URL carrying it, escaped; any other gets none.
func TestEndpointCarriesURLToken(t *testing.T) {
	ts, c := serveAs(t)
	tests := []struct{ name, token string }{
		{"token in the URL", "t0k&en=/?+%"},
		{"no token in the URL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := c
			if tt.token != "" {
				client = withHeader(c, "X-Test-URL-Token", tt.token)
			}
			s := openStream(t, client, ts.URL+"/sse")
			defer s.close()
			u, err := url.Parse(s.endpoint(t))
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if q.Get("token") != tt.token || q.Has("token") != (tt.token != "") || len(q.Get("session_id")) != 32 {
				t.Errorf("endpoint query %q: want session_id and token %q", u.RawQuery, tt.token)
			}
		})
	}
}
