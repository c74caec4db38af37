//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startHTTPWith runs the HTTP server as startHTTP does, with extra flags.
func startHTTPWith(t *testing.T, flags ...string) *httpServer {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := append(append(append([]string{"env", "-i"}, serverEnv(t)...), binary(t), "serve", "--transport", "http", "--addr", addr), flags...)
	p, err := startProcess(cmd, addr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &httpServer{process: p, addr: addr}
}

// rpcAnswer is the JSON-RPC message of a POST /mcp answer, sent as JSON
// or as the one message event of a stream.
func rpcAnswer(t *testing.T, body string) (result json.RawMessage, e errorBody) {
	t.Helper()
	if i := strings.Index(body, "data: {"); i >= 0 && !strings.HasPrefix(body, "{") {
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("answer is not a JSON-RPC message (%v): %.300q", err, body)
	}
	_ = json.Unmarshal([]byte(body), &e)
	return msg.Result, e
}

// wantRefused fails t unless body is a -32602 error whose message names
// field and limit (it is explained: what, why, how).
func wantRefused(t *testing.T, what, body, field string, limit int) {
	t.Helper()
	_, e := rpcAnswer(t, body)
	if e.Error.Code != -32602 || e.Error.Data.Code != "INVALID_PARAMS" || !strings.Contains(e.Error.Message, field) ||
		!strings.Contains(e.Error.Message, strconv.Itoa(limit)) || e.Error.Data.Why == "" || e.Error.Data.How == "" {
		t.Errorf("%s: got %.400q, want -32602 naming %s and its limit %d, explained", what, body, field, limit)
	}
}

// TestBinarySubscriptionsBounded replays this week's findings against
// the process, at --max-subscriptions 2: what each did made the server
// hold memory (100 listen streams of 85,000 URIs: 1.9 GB; 100
// subscriptions to 1 MB URIs: 147 MB; 200 initializes with 3.8 MB of
// clientInfo: 1 GB). Each is now refused with -32602 naming the limit
// before anything of it is kept, the server serves on, and a refused
// initialize leaves no session behind.
func TestBinarySubscriptionsBounded(t *testing.T) {
	s := startHTTPWith(t, "--max-subscriptions", "2")
	megaURI := "template://" + strings.Repeat("x", 1<<20)

	t.Run("initialize", func(t *testing.T) {
		before := s.sessions(t)
		res, body := postMCP(t, s, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},`+
			`"clientInfo":{"name":"`+strings.Repeat("x", 3800<<10)+`","version":"1"}}}`)
		if res.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("a refused initialize named a session: %s", res.Header.Get("Mcp-Session-Id"))
		}
		wantRefused(t, "initialize with 3.8 MB of clientInfo", body, "params.clientInfo.name", 256)
		if after := s.sessions(t); after != before {
			t.Errorf("sessions: %v before, %v after a refused initialize", before, after)
		}
	})

	t.Run("resources/subscribe", func(t *testing.T) {
		res, body := postMCP(t, s, initializeMsg)
		sid := res.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %s %s", res.Status, body)
		}
		hdr := []string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-06-18"}
		postMCP(t, s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
		_, body = postMCP(t, s, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, hdr...)
		result, _ := rpcAnswer(t, body)
		var list struct{ Resources []struct{ URI string } }
		if err := json.Unmarshal(result, &list); err != nil || len(list.Resources) < 3 {
			t.Fatalf("resources/list: %v, %.300s", err, body)
		}
		subscribe := func(id int, uri string) string {
			_, body := postMCP(t, s, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, id, uri), hdr...)
			return body
		}
		wantRefused(t, "a 1 MB URI", subscribe(3, megaURI), "params.uri", 2048)
		if _, e := rpcAnswer(t, subscribe(4, "template://No_Such_Template")); e.Error.Code != -32002 || e.Error.Data.Code != "RESOURCE_NOT_FOUND" {
			t.Errorf("a resource not served: got %+v, want -32002 RESOURCE_NOT_FOUND", e.Error)
		}
		for i, r := range list.Resources[:2] {
			if result, e := rpcAnswer(t, subscribe(5+i, r.URI)); string(result) != "{}" {
				t.Fatalf("subscribe %s: %+v", r.URI, e.Error)
			}
		}
		body = subscribe(7, list.Resources[2].URI)
		wantRefused(t, "a third subscription", body, "params.uri", 2)
		if !strings.Contains(body, "--max-subscriptions") {
			t.Errorf("the refusal does not say how to raise the limit: %.400s", body)
		}
	})

	t.Run("subscriptions/listen", func(t *testing.T) {
		listen := func(uris []string) string {
			list, err := json.Marshal(uris)
			if err != nil {
				t.Fatal(err)
			}
			res, body := postMCP(t, s, `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"_meta":{`+
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`+
				`"notifications":{"resourceSubscriptions":`+string(list)+`}}}`,
				"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("listen refused with %s, want 400", res.Status)
			}
			return body
		}
		many := make([]string, 85000)
		for i := range many {
			many[i] = "template://Code_Review_" + strconv.Itoa(i)
		}
		wantRefused(t, "85,000 URIs", listen(many), "params.notifications.resourceSubscriptions", 2)
		wantRefused(t, "a 1 MB URI", listen([]string{megaURI}), "params.notifications.resourceSubscriptions[0]", 2048)
		if _, e := rpcAnswer(t, listen([]string{"template://No_Such_Template"})); e.Error.Code != -32602 || e.Error.Data.Code != "RESOURCE_NOT_FOUND" {
			t.Errorf("a resource not served: got %+v, want -32602 RESOURCE_NOT_FOUND", e.Error)
		}
	})
	s.requireRunning(t, "after the refusals")
}
