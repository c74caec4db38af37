package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/sse"
	"github.com/google/go-cmp/cmp"
	r3sse "github.com/r3labs/sse/v2"
)

var endpointRE = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/sse/message\?session_id=([0-9a-f]{32})$`)

// TestFlowByteByByte walks the seed's flow and checks the bytes on the
// stream: the endpoint event first, 202 for each post, each answer as one
// `event: message` of compact JSON, keep-alive comments, and the session
// gone once the client hangs up.
func TestFlowByteByByte(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{KeepAlive: 30 * time.Millisecond}})

	s := openStream(t, c, ts.URL+"/sse")
	if got, want := s.resp.Header.Get("Content-Type"), "text/event-stream"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	for name, want := range map[string]string{"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"} {
		if got := s.resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// A stream of unknown length, on a connection that stays open.
	if s.resp.ContentLength != -1 || s.resp.Close {
		t.Errorf("framing: length %d, close %v; want a body of unknown length on a kept connection", s.resp.ContentLength, s.resp.Close)
	}
	first := s.next(t)
	endpoint, ok := dataOf(first, "endpoint")
	if !ok {
		t.Fatalf("first event = %q, want the endpoint event", first)
	}
	sm := endpointRE.FindStringSubmatch(endpoint)
	if sm == nil || !strings.HasPrefix(endpoint, ts.URL+"/sse/message?session_id=") {
		t.Fatalf("endpoint = %q, want %s/sse/message?session_id=<32 hex>", endpoint, ts.URL)
	}
	if e.Session(sm[1]) == nil {
		t.Fatalf("session %s is not live in the engine", sm[1])
	}

	code, body := post(t, c, endpoint, initialize)
	if code != http.StatusAccepted || body != "" {
		t.Fatalf("initialize: %d %q, want 202 and no body", code, body)
	}
	ev := nextMessage(t, s)
	if data, ok := dataOf(ev, "message"); !ok || !strings.HasPrefix(data, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05",`) {
		t.Fatalf("initialize answer = %q", ev)
	}
	if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
	if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); code != http.StatusAccepted {
		t.Fatalf("ping: %d", code)
	}
	// Nothing was sent for the notification: the next message is the ping's.
	if got, ok := dataOf(nextMessage(t, s), "message"); !ok || got != `{"jsonrpc":"2.0","id":"p","result":{}}` {
		t.Fatalf("ping answer = %q, want the ping's result", got)
	}

	// A prompt full of newlines still travels as one data line.
	if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"-a\n+b\n"}}}`); code != http.StatusAccepted {
		t.Fatalf("prompts/get: %d", code)
	}
	ev = nextMessage(t, s)
	data, ok := dataOf(ev, "message")
	if !ok {
		t.Fatalf("prompts/get answer is not one data line: %q", ev)
	}
	var got struct {
		ID     int `json:"id"`
		Result struct {
			Messages []struct {
				Content struct{ Text string } `json:"content"`
			} `json:"messages"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(data), &got); err != nil || got.ID != 3 || len(got.Result.Messages) != 1 ||
		!strings.Contains(got.Result.Messages[0].Content.Text, "-a\n+b") {
		t.Fatalf("prompts/get answer = %s (%v)", data, err)
	}

	// Keep-alive comments arrive while nothing else is sent.
	deadline := time.After(wait)
	for ping := false; !ping; {
		select {
		case ev := <-s.events:
			ping = isPing(ev)
			if !ping {
				t.Fatalf("unexpected event while idle: %q", ev)
			}
		case <-deadline:
			t.Fatal("no keep-alive comment")
		}
	}

	// Hanging up ends the session and forgets its id.
	s.close()
	transporttest.Settle(t, wait, "session closed after hang-up", func() bool { return h.Sessions() == 0 && e.Session(sm[1]) == nil })
	if code, body := post(t, c, endpoint, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != http.StatusNotFound {
		t.Fatalf("post after hang-up: %d %s, want 404", code, body)
	}
}

// nextMessage returns the next event that is not a keep-alive, raw.
func nextMessage(t *testing.T, s *stream) string {
	t.Helper()
	for {
		if ev := s.next(t); !isPing(ev) {
			return ev
		}
	}
}

func TestMessageErrors(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{MaxBodyBytes: 1024}})
	s := openStream(t, c, ts.URL+"/sse")
	defer s.close()
	endpoint := s.endpoint(t)

	tests := []struct {
		name     string
		method   string
		url      string
		body     string
		wantCode int
		wantData string // error.data.code, when the answer is an error
	}{
		{"unknown session", "POST", ts.URL + "/sse/message?session_id=0123456789abcdef0123456789abcdef", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 404, "SESSION_NOT_FOUND"},
		{"no session", "POST", ts.URL + "/sse/message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 400, "SESSION_REQUIRED"},
		{"bad JSON", "POST", endpoint, `{"jsonrpc":`, 400, "PARSE_ERROR"},
		{"empty body", "POST", endpoint, ``, 400, "PARSE_ERROR"},
		{"too large", "POST", endpoint, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, 413, "BODY_TOO_LARGE"},
		{"GET on the message URL", "GET", endpoint, ``, 405, "METHOD_NOT_ALLOWED"},
		{"DELETE on the stream URL", "DELETE", ts.URL + "/sse", ``, 405, "METHOD_NOT_ALLOWED"},
		{"valid JSON that is not a message", "POST", endpoint, `[1,2]`, 202, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantData == "" {
				return
			}
			var eb struct {
				ID    *json.RawMessage `json:"id"`
				Error struct {
					Code    int64
					Message string
					Data    mcp.ErrorData
				}
			}
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatalf("error body is not JSON: %s", body)
			}
			if eb.Error.Data.Code != tc.wantData || eb.Error.Data.What == "" || eb.Error.Data.How == "" {
				t.Errorf("error data = %+v, want code %s with what and how", eb.Error.Data, tc.wantData)
			}
			if eb.ID != nil {
				t.Errorf("id = %s, want null", *eb.ID)
			}
		})
	}
	// A valid JSON value that is not a JSON-RPC object is answered on the
	// stream, as the protocol says, and the session lives on.
	m := s.message(t)
	if errObj, ok := m["error"].(map[string]any); !ok || errObj["code"] != float64(-32600) {
		t.Fatalf("answer to [1,2] = %v, want -32600", m)
	}
}

// TestDirectPost covers the seed's fallback, POST /sse.
func TestDirectPost(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{})
	s, endpoint := initialized(t, c, ts.URL+"/sse")
	id := endpointRE.FindStringSubmatch(endpoint)[1]

	tests := []struct {
		name      string
		url       string
		header    map[string]string
		body      string
		wantCode  int
		wantAllow string
		check     func(t *testing.T, body map[string]any)
	}{
		{name: "request without a session is answered in the body", url: "/sse",
			body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, wantCode: 200,
			check: func(t *testing.T, b map[string]any) {
				tools, _ := b["result"].(map[string]any)["tools"].([]any)
				if b["id"] != float64(7) || len(tools) == 0 {
					t.Errorf("answer = %v, want id 7 and tools", b)
				}
			}},
		{name: "prompt error without a session", url: "/sse",
			body: `{"jsonrpc":"2.0","id":"x","method":"prompts/get","params":{"name":"Code_Reveiw"}}`, wantCode: 200,
			check: func(t *testing.T, b map[string]any) {
				errObj, _ := b["error"].(map[string]any)
				if b["id"] != "x" || errObj["code"] != float64(-32602) {
					t.Errorf("answer = %v, want a -32602 error for id x", b)
				}
			}},
		{name: "request on a session (query)", url: "/sse?session_id=" + id,
			body: `{"jsonrpc":"2.0","id":8,"method":"ping"}`, wantCode: 200,
			check: func(t *testing.T, b map[string]any) {
				if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": float64(8), "result": map[string]any{}}, b); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			}},
		{name: "request on a session (header)", url: "/sse", header: map[string]string{"Mcp-Session-Id": id},
			body: `{"jsonrpc":"2.0","id":9,"method":"ping"}`, wantCode: 200},
		{name: "notification on a session", url: "/sse?session_id=" + id,
			body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantCode: 202},
		{name: "unknown session", url: "/sse?session_id=ffffffffffffffffffffffffffffffff",
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, wantCode: 404},
		// Void probes Streamable HTTP on the URL first: initialize must
		// fail so that it falls back to GET /sse.
		// Clients that probe a URL for Streamable HTTP fall back to legacy
		// SSE on 405 (and 404); some on nothing else.
		{name: "initialize (a Streamable HTTP probe)", url: "/sse",
			header:   map[string]string{"Accept": "application/json, text/event-stream"},
			body:     `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"void","version":"1"}}}`,
			wantCode: 405, wantAllow: "GET"},
		{name: "notification without a session", url: "/sse", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantCode: 400},
		{name: "not JSON", url: "/sse", body: `hello`, wantCode: 400},
		{name: "empty", url: "/sse", body: ``, wantCode: 400},
		{name: "a batch", url: "/sse", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wantCode: 400},
		{name: "an object that is no message", url: "/sse", body: `{"hello":"world"}`, wantCode: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+tc.url, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantCode, raw)
			}
			if got := resp.Header.Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
			}
			if resp.StatusCode >= 400 || resp.StatusCode == 200 {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
			}
			if tc.check != nil {
				var b map[string]any
				if err := json.Unmarshal(raw, &b); err != nil {
					t.Fatalf("body is not JSON: %s", raw)
				}
				tc.check(t, b)
			}
		})
	}
	// Answers to direct posts on the session went to their bodies, not to
	// the stream: a ping through the endpoint is the next thing on it.
	post(t, c, endpoint, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if m := s.message(t); m["id"] != "last" {
		t.Fatalf("stream carried %v, want only the answer to id last", m)
	}
	transporttest.Settle(t, wait, "one-shot sessions closed", func() bool { return e.SessionCount() == 1 })
}

func TestEndpointURL(t *testing.T) {
	tests := []struct {
		name      string
		publicURL string
		host      string
		want      string
	}{
		{"from the Host header", "", "localhost:3000", "http://localhost:3000/sse/message?session_id="},
		{"public URL", "https://prompts.example.com", "127.0.0.1:3000", "https://prompts.example.com/sse/message?session_id="},
		{"public URL with a path and a slash", "https://example.com/flowy/", "127.0.0.1:3000", "https://example.com/flowy/sse/message?session_id="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, mcp.EngineOptions{})
			_, ts, c := serve(t, e, sse.Options{PublicURL: tc.publicURL})
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/sse", nil)
			req.Host = tc.host
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			first, err := readEvent(bufio.NewReader(resp.Body))
			if err != nil {
				t.Fatalf("first event: %v", err)
			}
			if got, ok := dataOf(first, "endpoint"); !ok || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("first event %q, want the endpoint %s…", first, tc.want)
			}
		})
	}
}

// TestSessionEndsStream: when the session ends on the server's side (idle
// expiry, shutdown), the client's stream ends too.
func TestSessionEndsStream(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	h, ts, c := serve(t, e, sse.Options{})
	s := openStream(t, c, ts.URL+"/sse")
	id := endpointRE.FindStringSubmatch(s.endpoint(t))[1]
	e.Session(id).Close()
	select {
	case <-s.done:
	case <-time.After(wait):
		t.Fatal("stream still open after its session closed")
	}
	transporttest.Settle(t, wait, "handler forgot the session", func() bool { return h.Sessions() == 0 })
}

// TestIdleExpiryKeptAliveByStream: the engine's idle expiry never closes
// a session whose stream is open, whether keep-alives are sent or not (a
// quiet Void stays connected for hours); once the stream closes, the
// session is gone.
func TestIdleExpiryKeptAliveByStream(t *testing.T) {
	tests := []struct {
		name      string
		keepAlive time.Duration
	}{
		{name: "keep-alives on", keepAlive: 10 * time.Millisecond},
		{name: "keep-alives off", keepAlive: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, mcp.EngineOptions{IdleTimeout: 40 * time.Millisecond})
			h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{KeepAlive: tc.keepAlive}})
			s := openStream(t, c, ts.URL+"/sse")
			endpoint := s.endpoint(t)
			id := endpointRE.FindStringSubmatch(endpoint)[1]
			handshake(t, c, s, endpoint)
			// Each control session, opened after the stream's session was
			// last used, expires in a janitor pass that found the stream's
			// session idle for at least as long: four such passes are four
			// idle timeouts survived, with no fixed sleep.
			for round := 0; round < 4; round++ {
				control, err := e.NewSession(context.Background(), nullSink{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				transporttest.Settle(t, wait, "control session expired", func() bool { return e.Session(control.ID()) == nil })
				if e.Session(id) == nil {
					t.Fatalf("round %d: the session expired although its stream was open", round)
				}
			}
			if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusAccepted {
				t.Fatalf("ping: %d, want 202", code)
			}
			if m := s.message(t); m["id"] != float64(2) {
				t.Fatalf("ping answer = %v", m)
			}
			s.close()
			transporttest.Settle(t, wait, "session closed with its stream", func() bool { return h.Sessions() == 0 && e.Session(id) == nil })
		})
	}
}

// nullSink is the sink of a session no client is connected to.
type nullSink struct{}

func (nullSink) Send([]mcp.Outgoing) error { return nil }
func (nullSink) Close()                    {}

// TestBroadcastReachesStream: unsolicited notifications (list_changed)
// reach an initialized SSE session.
func TestBroadcastReachesStream(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{})
	s, _ := initialized(t, c, ts.URL+"/sse")
	e.Notify(mcp.NotificationPromptsListChanged, nil)
	if m := s.message(t); m["method"] != mcp.NotificationPromptsListChanged {
		t.Fatalf("got %v, want %s", m, mcp.NotificationPromptsListChanged)
	}
}

// TestProgressOnStream: notifications made while handling a request go
// to the stream ahead of its answer.
func TestProgressOnStream(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{})
	s, endpoint := initialized(t, c, ts.URL+"/sse")
	post(t, c, endpoint, `{"jsonrpc":"2.0","id":5,"method":"test/progress","params":{"_meta":{"progressToken":"t"}}}`)
	if m := s.message(t); m["method"] != mcp.NotificationProgress {
		t.Fatalf("first = %v, want progress", m)
	}
	if m := s.message(t); m["id"] != float64(5) {
		t.Fatalf("second = %v, want the answer", m)
	}
}

// TestNoGoroutineLeak opens and closes hundreds of sessions, each doing a
// little work, and checks that every goroutine they started is gone:
// the stream's watcher, the session's outbox, the keep-alive timer's.
func TestNoGoroutineLeak(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{KeepAlive: 5 * time.Millisecond}})
	// Warm up the client's and server's connection machinery, then measure.
	warm := openStream(t, c, ts.URL+"/sse")
	warm.endpoint(t)
	warm.close()
	transporttest.Settle(t, wait, "warm-up session closed", func() bool { return h.Sessions() == 0 })
	c.Transport.(*http.Transport).CloseIdleConnections()
	base := runtime.NumGoroutine()

	sessions := 300
	if testing.Short() {
		sessions = 60
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s := openStream(t, c, ts.URL+"/sse")
			endpoint := s.endpoint(t)
			handshake(t, c, s, endpoint)
			post(t, c, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/list"}`, i+10))
			if m := s.message(t); m["id"] != float64(i+10) {
				t.Errorf("session %d got %v", i, m)
			}
			s.close()
		}()
	}
	wg.Wait()
	transporttest.Settle(t, wait, "every session closed", func() bool { return h.Sessions() == 0 && e.SessionCount() == 0 })
	c.Transport.(*http.Transport).CloseIdleConnections()
	transporttest.GoroutinesBackTo(t, wait, base, 3)
}

// TestStuckClientIsDropped: a client that stops reading is dropped once a
// write has waited WriteTimeout, and its session leaves nothing behind.
func TestStuckClientIsDropped(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{WriteTimeout: 200 * time.Millisecond, KeepAlive: -1}})
	base := runtime.NumGoroutine()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", ts.Listener.Addr())
	// Read just the headers and the endpoint event, then never again.
	buf := make([]byte, 0, 4096)
	var id string
	for id == "" {
		tmp := make([]byte, 512)
		n, err := conn.Read(tmp)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, tmp[:n]...)
		if m := regexp.MustCompile(`session_id=([0-9a-f]{32})`).FindSubmatch(buf); m != nil {
			id = string(m[1])
		}
	}
	handshakeRaw(t, c, ts.URL+"/sse/message?session_id="+id)
	// Far more than the socket buffers hold.
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 40 && e.Session(id) != nil; i++ {
		e.Notify("notifications/test", map[string]string{"blob": big})
	}
	transporttest.Settle(t, wait, "stuck session dropped", func() bool { return e.Session(id) == nil && h.Sessions() == 0 })
	conn.Close()
	c.Transport.(*http.Transport).CloseIdleConnections()
	transporttest.GoroutinesBackTo(t, wait, base, 3)
}

func handshakeRaw(t *testing.T, c *http.Client, endpoint string) {
	t.Helper()
	if code, body := post(t, c, endpoint, initialize); code != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", code, body)
	}
	// initialize has no answer to wait for here (nobody reads), but it
	// marks the session ready before Deliver returns.
	if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
}

// TestSessionCap: GET /sse and one-shot POSTs are refused with 503 and
// Retry-After while the engine is full.
func TestSessionCap(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{Gate: httpx.NewGate(httpx.Limits{Max: 1})}})
	s := openStream(t, c, ts.URL+"/sse")
	defer s.close()
	s.endpoint(t)
	for _, req := range []*http.Request{
		mustRequest(t, http.MethodGet, ts.URL+"/sse", ""),
		mustRequest(t, http.MethodPost, ts.URL+"/sse", `{"jsonrpc":"2.0","id":1,"method":"ping"}`),
	} {
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d (Retry-After %q): %s, want 503 with Retry-After", req.Method, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestStreamOverHTTP2: the same flow over HTTP/2, as a client behind a
// proxy that speaks it reaches the stream: the write deadlines and flushes
// go through http.ResponseController, whatever the protocol.
func TestStreamOverHTTP2(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	h := sse.New(e, sse.Options{Settings: httpx.Settings{KeepAlive: 20 * time.Millisecond}})
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = e.Shutdown(ctx)
		ts.Close()
	})
	c := ts.Client()

	s := openStream(t, c, ts.URL+"/sse")
	if s.resp.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", s.resp.Proto)
	}
	endpoint := s.endpoint(t)
	if !strings.HasPrefix(endpoint, ts.URL+"/sse/message?session_id=") {
		t.Fatalf("endpoint %q", endpoint)
	}
	handshake(t, c, s, endpoint)
	post(t, c, endpoint, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := s.message(t); m["id"] != "p" {
		t.Fatalf("answer %v, want the ping's", m)
	}
	if ev := s.next(t); !isPing(ev) {
		t.Fatalf("keep-alive %q", ev)
	}
	s.close()
	transporttest.Settle(t, wait, "session gone after the client left", func() bool {
		return h.Sessions() == 0 && e.SessionCount() == 0
	})
}

// TestR3labsClientReadsStream reads the stream with another SSE parser,
// r3labs/sse's client, to keep the framing honest.
func TestR3labsClientReadsStream(t *testing.T) {
	e := newEngine(t, mcp.EngineOptions{})
	_, ts, c := serve(t, e, sse.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan *r3sse.Event, 16)
	client := r3sse.NewClient(ts.URL + "/sse")
	if err := client.SubscribeChanRawWithContext(ctx, events); err != nil {
		t.Fatal(err)
	}
	// Unsubscribing makes its reconnecting loop end instead of retrying.
	defer client.Unsubscribe(events)

	ev := transporttest.Receive(t, events, wait, "endpoint event")
	if string(ev.Event) != "endpoint" || !endpointRE.Match(ev.Data) {
		t.Fatalf("first event %q %q, want the endpoint", ev.Event, ev.Data)
	}
	if code, body := post(t, c, string(ev.Data), initialize); code != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", code, body)
	}
	ev = transporttest.Receive(t, events, wait, "answer")
	var m struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if string(ev.Event) != "message" || json.Unmarshal(ev.Data, &m) != nil || m.ID != 1 || m.Result == nil {
		t.Fatalf("answer %q %q, want the initialize result", ev.Event, ev.Data)
	}
}
