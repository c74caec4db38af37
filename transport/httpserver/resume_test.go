package httpserver_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

// TestResumeAfterClientHangUp: the client of a POST /mcp whose answer
// became a resumable event stream closes the
// connection after the priming event. The server must let the stream go
// as the connection closes, not when a write to it fails, so resuming it
// is not refused as still open. Keep-alive comments are off, and the
// handler says nothing until released, so no write ever would fail.
func TestResumeAfterClientHangUp(t *testing.T) {
	e, _, hk := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{KeepAlive: -1})
	id := c.openMCP(t)

	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"two","method":"test/twostep"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	var prime string
	for !strings.HasSuffix(prime, "\n\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the priming event: %v (%q)", err, prime)
		}
		prime += line
	}
	primeID, _, _ := strings.Cut(strings.TrimPrefix(prime, "id: "), "\n")
	if !strings.HasPrefix(prime, "id: ") || primeID == "" {
		t.Fatalf("priming event %q carries no id", prime)
	}
	resp.Body.Close() // mid-stream: the client closes the connection

	var ev *events
	transporttest.Settle(t, wait, "resuming the stream of a client that left", func() bool {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Last-Event-ID", primeID)
		resp, err := c.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		switch resp.StatusCode {
		case http.StatusConflict: // not yet let go
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return false
		case http.StatusOK:
			ev = readEvents(resp)
			return true
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("resume: %d %s", resp.StatusCode, b)
		return false
	})
	defer ev.close()

	logged := func(m map[string]any) any {
		p, _ := m["params"].(map[string]any)
		return p["data"]
	}
	if m := ev.message(t); logged(m) != "one" {
		t.Fatalf("first event of the resumed stream: %v, want the log the client missed", m)
	}
	close(hk.release)
	if m := ev.message(t); logged(m) != "two" {
		t.Fatalf("second event: %v, want the log sent after the resume", m)
	}
	if m := ev.message(t); m["id"] != "two" || m["result"] == nil {
		t.Fatalf("third event: %v, want the response", m)
	}
}
