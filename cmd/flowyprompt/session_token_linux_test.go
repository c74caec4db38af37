//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/logid"
)

// sseEvents reads GET /sse's events in the background.
type sseEvents struct {
	ch chan [2]string // event name, data
}

// openSSEStream opens GET url as a client that sends no headers (Void).
func openSSEStream(t *testing.T, s *httpServer, url string) *sseEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// No client timeout: the stream lives until the test ends.
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		s.fatalf(t, "GET /sse: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		s.fatalf(t, "GET /sse: %s %q", res.Status, body)
	}
	ev := &sseEvents{ch: make(chan [2]string, 64)}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && data != "":
				ev.ch <- [2]string{name, data}
				name, data = "", ""
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			}
		}
	}()
	return ev
}

// next returns the next event, which must be named name.
func (ev *sseEvents) next(t *testing.T, name string) string {
	t.Helper()
	select {
	case e := <-ev.ch:
		if e[0] != name {
			t.Fatalf("got a %q event %q, want a %q event", e[0], e[1], name)
		}
		return e[1]
	case <-time.After(15 * time.Second):
		t.Fatalf("no %q event within 15 s", name)
		return ""
	}
}

// nextID returns the id of the next message on the stream.
func (ev *sseEvents) nextID(t *testing.T) string {
	t.Helper()
	data := ev.next(t, "message")
	var m struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("message %q: %v", data, err)
	}
	return string(m.ID)
}

// send makes one request with headers (name, value, ...) and returns its
// status and body.
func (s *httpServer) send(t *testing.T, method, url, body string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		s.fatalf(t, "%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		s.fatalf(t, "%s %s: reading the answer: %v", method, url, err)
	}
	return res.StatusCode, answer
}

// TestBinarySessionNeedsToken: with MCP_AUTH_TOKEN set, knowing a
// session's id is not enough to act in it. A Void-style client gives the
// token in its SSE URL, gets an endpoint URL carrying it, and works; a
// post to its session without the token is refused before it is read,
// and nothing of it reaches the victim's stream: the victim's own next
// answer is the next message there. The same holds for a /mcp session.
// No log line, at debug level, holds a session's id: lines name sessions
// by their digest.
func TestBinarySessionNeedsToken(t *testing.T) {
	const token = "session-bind-test-token"
	s := startHTTP(t, 0, "MCP_AUTH_TOKEN="+token, "LOG_LEVEL=debug")
	base := "http://" + s.addr
	prompt := func(id string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"-a\n+b\n"}}}`
	}
	refused := func(t *testing.T, what string, status int, body []byte) {
		t.Helper()
		if status != http.StatusUnauthorized {
			t.Fatalf("%s: %d %q, want 401", what, status, body)
		}
		checkError(t, body, "UNAUTHORIZED")
	}

	// The victim, as Void: the token in the SSE URL.
	victim := openSSEStream(t, s, base+"/sse?token="+token)
	endpoint := victim.next(t, "endpoint")
	u, err := url.Parse(endpoint)
	if err != nil || u.Query().Get("token") != token || len(u.Query().Get("session_id")) != 32 {
		t.Fatalf("endpoint URL %q: want its session_id and the token", endpoint)
	}
	sseID := u.Query().Get("session_id")
	for _, msg := range []string{initializeMsg, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if status, body := s.send(t, http.MethodPost, endpoint, msg); status != http.StatusAccepted {
			s.fatalf(t, "the victim's post to its endpoint URL: %d %q", status, body)
		}
	}
	if id := victim.nextID(t); id != "1" {
		t.Fatalf("the victim's first message answers %s, want its initialize", id)
	}

	// The attacker knows the id, not the token.
	attacks := []struct{ name, url string }{
		{"/sse/message", base + "/sse/message?session_id=" + sseID},
		{"/sse/message, the other spelling", base + "/sse/message?sessionId=" + sseID},
		{"POST /sse on the session", base + "/sse?session_id=" + sseID},
	}
	for _, a := range attacks {
		status, body := s.send(t, http.MethodPost, a.url, prompt("attacker"))
		refused(t, a.name, status, body)
	}
	audited := s.expect(`msg="prompt used" prompt=Commit_Message`)
	if status, body := s.send(t, http.MethodPost, endpoint, prompt("victim")); status != http.StatusAccepted {
		s.fatalf(t, "the victim's prompts/get: %d %q", status, body)
	}
	if id := victim.nextID(t); id != `"victim"` {
		t.Fatalf("the victim's stream carries %s before (or instead of) the answer to its own request", id)
	}
	s.await(t, audited, "the audit line of the victim's prompts/get")

	// The same with a /mcp session.
	res, answer := postMCP(t, s, initializeMsg, "Authorization", "Bearer "+token)
	mcpID := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || mcpID == "" {
		s.fatalf(t, "initialize on /mcp: %s, session %q: %q", res.Status, mcpID, answer)
	}
	for _, a := range []struct {
		name, method, body string
	}{
		{"POST", http.MethodPost, prompt("attacker")},
		{"GET stream", http.MethodGet, ""},
		{"DELETE", http.MethodDelete, ""},
	} {
		status, body := s.send(t, a.method, base+"/mcp", a.body, "Mcp-Session-Id", mcpID)
		refused(t, "/mcp "+a.name, status, body)
	}
	audited = s.expect(`msg="prompt used" prompt=Commit_Message`)
	status, body := s.send(t, http.MethodPost, base+"/mcp", prompt("victim"), "Mcp-Session-Id", mcpID, "Authorization", "Bearer "+token)
	if status != http.StatusOK || !strings.Contains(string(body), `"id":"victim"`) {
		s.fatalf(t, "the owner's prompts/get on its /mcp session after the attempts: %d %q", status, body)
	}
	s.await(t, audited, "the audit line of the /mcp prompts/get")

	out := s.Output()
	if !strings.Contains(out, "flowyprompt is serving over HTTP") {
		t.Fatalf("the output kept is not the whole output; it begins %.200q", out)
	}
	for _, id := range []string{sseID, mcpID} {
		if strings.Contains(out, id) {
			t.Errorf("a session id is in the log:\n%s", out)
		}
		if !strings.Contains(out, "session="+logid.Digest(id)) {
			t.Errorf("no line names session %s by its digest %s:\n%s", id, logid.Digest(id), out)
		}
	}
	if strings.Contains(out, token) {
		t.Errorf("the token is in the log:\n%s", out)
	}
}
