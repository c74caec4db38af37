package sse_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// TestModernRequestRefused: the legacy HTTP+SSE transport, which revision
// 2026-07-28 does not define, refuses a request of that revision with an
// error of the 2025 era pointing to initialize, on the stream and on
// POST /sse alike, so a dual-era client's probe fails and it falls back
// to initialize, which works.
func TestModernRequestRefused(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{})
	probe := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		mcp.Version20260728 + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	refused := func(where string, m map[string]any) {
		t.Helper()
		errObj, _ := m["error"].(map[string]any)
		data, _ := errObj["data"].(map[string]any)
		how, _ := data["how"].(string)
		if fmt.Sprint(m["id"]) != "1" || errObj["code"] != float64(-32600) || !strings.Contains(how, "initialize") {
			t.Fatalf("%s: a 2026 probe = %v, want -32600 pointing to initialize", where, m)
		}
	}

	s := openStream(t, c, ts.URL+"/sse")
	t.Cleanup(s.close)
	endpoint := s.endpoint(t)
	if code, body := post(t, c, endpoint, probe); code != http.StatusAccepted {
		t.Fatalf("probe: %d %s", code, body)
	}
	refused("on the stream", s.message(t))
	handshake(t, c, s, endpoint)
	if code, body := post(t, c, endpoint, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusAccepted {
		t.Fatalf("ping after falling back: %d %s", code, body)
	}
	if m := s.message(t); fmt.Sprint(m["id"]) != "2" || m["result"] == nil {
		t.Fatalf("ping after falling back: %v", m)
	}

	code, body := post(t, c, ts.URL+"/sse", probe)
	if code != http.StatusOK {
		t.Fatalf("POST /sse probe: %d %s", code, body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	refused("on POST /sse", m)
}
