package streamable_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
	"github.com/google/go-cmp/cmp"
)

// errData decodes a JSON-RPC error body and returns error.data.code.
func errData(t *testing.T, body string) mcp.ErrorData {
	t.Helper()
	var eb struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64         `json:"code"`
			Message string        `json:"message"`
			Data    mcp.ErrorData `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("error body is not JSON: %q", body)
	}
	if eb.JSONRPC != "2.0" || string(eb.ID) != "null" || eb.Error.Code == 0 || eb.Error.Message == "" {
		t.Errorf("error body is not a JSON-RPC error with id null: %s", body)
	}
	if eb.Error.Data.What == "" || eb.Error.Data.How == "" {
		t.Errorf("error data lacks what/how: %s", body)
	}
	return eb.Error.Data
}

func TestInitializeAssignsSession(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	r := f.do(t, http.MethodPost, "", acceptBoth, initBody)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	id := r.header.Get("Mcp-Session-Id")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("Mcp-Session-Id = %q, want 32 hex digits", id)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var res struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.body), &res); err != nil || res.Result.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize result = %s", r.body)
	}
	if f.e.Session(id) == nil || f.h.Sessions() != 1 {
		t.Fatalf("session %s not live", id)
	}

	// A failed initialize hands out no session.
	r = f.do(t, http.MethodPost, "", acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}`)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" || !strings.Contains(r.body, `"error"`) {
		t.Fatalf("bad initialize: %d %q %s", r.status, r.header.Get("Mcp-Session-Id"), r.body)
	}
	transporttest.Settle(t, wait, "failed session dropped", func() bool { return f.h.Sessions() == 1 && f.e.SessionCount() == 1 })
}

// TestChecklist is PROTOCOL.md's Streamable HTTP checklist, one status
// code at a time.
func TestChecklist(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	live := f.open(t)
	deleted := f.open(t)
	if r := f.do(t, http.MethodDelete, deleted, "", ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name       string
		method     string
		session    string
		accept     string
		body       string
		header     []string
		wantStatus int
		wantCode   string // error.data.code for an error
		wantBody   string // exact body when set
	}{
		{name: "request without a session", method: "POST", accept: acceptBoth, body: ping, wantStatus: 400, wantCode: "SESSION_REQUIRED"},
		{name: "bad JSON without a session", method: "POST", accept: acceptBoth, body: `{"jsonrpc"`, wantStatus: 400, wantCode: "PARSE_ERROR"},
		{name: "bad JSON on a session", method: "POST", session: live, accept: acceptBoth, body: `{"jsonrpc"`, wantStatus: 400, wantCode: "PARSE_ERROR"},
		{name: "unknown session", method: "POST", session: "0123456789abcdef0123456789abcdef", accept: acceptBoth, body: ping, wantStatus: 404, wantCode: "SESSION_NOT_FOUND"},
		{name: "deleted session", method: "POST", session: deleted, accept: acceptBoth, body: ping, wantStatus: 404, wantCode: "SESSION_NOT_FOUND"},
		{name: "ping answers JSON", method: "POST", session: live, accept: acceptBoth, body: ping, wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{name: "JSON only", method: "POST", session: live, accept: "application/json", body: ping, wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{name: "event stream only", method: "POST", session: live, accept: "text/event-stream", body: ping, wantStatus: 200,
			wantBody: "id: S-0\nretry: 1000\ndata: \n\nid: S-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
		{name: "no Accept header", method: "POST", session: live, body: ping, wantStatus: 200, wantBody: `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{name: "Accept neither", method: "POST", session: live, accept: "text/html", body: ping, wantStatus: 406, wantCode: "NOT_ACCEPTABLE"},
		{name: "notification", method: "POST", session: live, accept: acceptBoth, body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, wantStatus: 202, wantBody: ""},
		{name: "response to a server request", method: "POST", session: live, accept: acceptBoth, body: `{"jsonrpc":"2.0","id":99,"result":{}}`, wantStatus: 202, wantBody: ""},
		{name: "not JSON content", method: "POST", session: live, accept: acceptBoth, body: ping, header: []string{"Content-Type", "text/plain"}, wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "unsupported protocol version", method: "POST", session: live, accept: acceptBoth, body: ping, header: []string{"MCP-Protocol-Version", "1999-01-01"}, wantStatus: 400, wantCode: "UNSUPPORTED_PROTOCOL_VERSION"},
		{name: "older supported protocol version", method: "POST", session: live, accept: acceptBoth, body: ping, header: []string{"MCP-Protocol-Version", "2025-03-26"}, wantStatus: 200},
		{name: "GET without a session", method: "GET", accept: "text/event-stream", wantStatus: 405, wantCode: "METHOD_NOT_ALLOWED"},
		{name: "GET of a modern client", method: "GET", accept: "text/event-stream", header: []string{"MCP-Protocol-Version", "2026-07-28"}, wantStatus: 405, wantCode: "METHOD_NOT_ALLOWED"},
		{name: "GET unknown session", method: "GET", session: "nope", accept: "text/event-stream", wantStatus: 404, wantCode: "SESSION_NOT_FOUND"},
		{name: "GET without event-stream", method: "GET", session: live, accept: "application/json", wantStatus: 406, wantCode: "NOT_ACCEPTABLE"},
		{name: "GET unsupported version", method: "GET", session: live, accept: "text/event-stream", header: []string{"MCP-Protocol-Version", "bogus"}, wantStatus: 400, wantCode: "UNSUPPORTED_PROTOCOL_VERSION"},
		{name: "DELETE without a session", method: "DELETE", wantStatus: 405, wantCode: "METHOD_NOT_ALLOWED"},
		{name: "DELETE unknown session", method: "DELETE", session: deleted, wantStatus: 404, wantCode: "SESSION_NOT_FOUND"},
		{name: "PUT", method: "PUT", session: live, body: ping, wantStatus: 405, wantCode: "METHOD_NOT_ALLOWED"},
		{name: "batch", method: "POST", session: live, accept: acceptBoth, body: "[" + ping + "]", wantStatus: 200},
		{name: "too large", method: "POST", session: live, accept: acceptBoth, body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, wantStatus: 413, wantCode: "BODY_TOO_LARGE"},
	}
	f2 := newFixture(t, mcp.EngineOptions{}, streamable.Options{Settings: httpx.Settings{MaxBodyBytes: 4096}})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := f
			if tc.wantCode == "BODY_TOO_LARGE" {
				fx = f2
				if tc.session != "" {
					tc.session = fx.open(t)
				}
			}
			r := fx.do(t, tc.method, tc.session, tc.accept, tc.body, tc.header...)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			if tc.wantCode != "" {
				if d := errData(t, r.body); d.Code != tc.wantCode {
					t.Errorf("error.data.code = %q, want %q", d.Code, tc.wantCode)
				}
			}
			if tc.wantBody != "" || tc.wantStatus == 202 {
				if normIDs(r.body) != tc.wantBody {
					t.Errorf("body = %q, want %q", r.body, tc.wantBody)
				}
			}
			// Without a session only POST is served: GET and DELETE act on one.
			wantAllow := "GET, POST, DELETE"
			if tc.session == "" {
				wantAllow = "POST"
			}
			if tc.wantStatus == 405 && r.header.Get("Allow") != wantAllow {
				t.Errorf("Allow = %q", r.header.Get("Allow"))
			}
		})
	}
}

// TestProgressUpgradesToStream: a request whose handler reports progress
// is answered as an event stream when the client accepts one, with the
// notifications ahead of the result; a client that takes JSON only gets
// JSON, and the notifications go to its GET stream.
func TestProgressUpgradesToStream(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.open(t)
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`); r.status != 200 {
		t.Fatalf("setLevel: %d %s", r.status, r.body)
	}
	body := `{"jsonrpc":"2.0","id":2,"method":"test/progress","params":{"_meta":{"progressToken":"tok"}}}`

	r := f.do(t, http.MethodPost, id, acceptBoth, body)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var got []string
	for _, m := range events(t, r.body) {
		if m["method"] != nil {
			got = append(got, m["method"].(string))
		} else {
			got = append(got, fmt.Sprint("result ", m["id"]))
		}
	}
	if diff := cmp.Diff([]string{mcp.NotificationProgress, mcp.NotificationMessage, "result 2"}, got); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}

	g := f.openGet(t, id)
	defer g.close()
	r = f.do(t, http.MethodPost, id, "application/json", body)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || !strings.Contains(r.body, `"done":true`) {
		t.Fatalf("JSON-only answer: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if m := g.next(t); m["method"] != mcp.NotificationProgress {
		t.Errorf("GET stream got %v, want progress", m)
	}
	if m := g.next(t); m["method"] != mcp.NotificationMessage {
		t.Errorf("GET stream got %v, want the log message", m)
	}
}

// TestGetStream: GET receives broadcasts; one per session; a session's end
// ends it; a broadcast sent while no stream was open waits for the next.
func TestGetStream(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{Settings: httpx.Settings{KeepAlive: 10 * time.Millisecond}})
	id := f.open(t)
	f.e.Notify(mcp.NotificationToolsListChanged, nil)
	g := f.openGet(t, id)
	if m := g.next(t); m["method"] != mcp.NotificationToolsListChanged {
		t.Fatalf("backlog: got %v", m)
	}
	if r := f.do(t, http.MethodGet, id, "text/event-stream", ""); r.status != http.StatusConflict {
		t.Fatalf("second GET: %d, want 409", r.status)
	}
	f.e.Notify(mcp.NotificationPromptsListChanged, nil)
	if m := g.next(t); m["method"] != mcp.NotificationPromptsListChanged {
		t.Fatalf("broadcast: got %v", m)
	}
	if r := f.do(t, http.MethodDelete, id, "", ""); r.status != 200 {
		t.Fatalf("DELETE: %d", r.status)
	}
	select {
	case <-g.done:
	case <-time.After(wait):
		t.Fatal("GET stream still open after DELETE")
	}
}

// TestConcurrentPosts: several POSTs in flight on one session are all
// answered, each on its own response. The handlers only return once all
// ten are running at once.
func TestConcurrentPosts(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.open(t)
	var wg sync.WaitGroup
	got := make([]reply, 10)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			accept := acceptBoth
			if i%2 == 1 {
				accept = "text/event-stream"
			}
			got[i] = f.do(t, http.MethodPost, id, accept, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test/barrier"}`, i+100))
		}()
	}
	wg.Wait()
	for i, r := range got {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"id":"%d"}}`, i+100, i+100)
		if i%2 == 1 {
			want = "id: S-0\nretry: 1000\ndata: \n\nid: S-1\nevent: message\ndata: " + want + "\n\n"
		}
		if r.status != 200 || normIDs(r.body) != want {
			t.Errorf("POST %d: %d %q, want %q", i, r.status, r.body, want)
		}
	}
}

// TestCancelledRequest: when the client cancels a request, its POST ends
// with 202 and no answer.
func TestCancelledRequest(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.open(t)
	done := make(chan reply, 1)
	go func() {
		done <- f.do(t, http.MethodPost, id, "application/json", `{"jsonrpc":"2.0","id":"slow","method":"test/block"}`)
	}()
	select {
	case <-f.started:
	case <-time.After(wait):
		t.Fatal("request did not start")
	}
	r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`)
	if r.status != 202 {
		t.Fatalf("cancel: %d", r.status)
	}
	select {
	case r := <-done:
		if r.status != http.StatusAccepted || r.body != "" {
			t.Fatalf("cancelled POST: %d %q, want 202 and no body", r.status, r.body)
		}
	case <-time.After(wait):
		t.Fatal("cancelled POST still open")
	}
}

// TestDeleteDuringRequest: a session deleted while a request is in flight
// ends that POST with 404.
func TestDeleteDuringRequest(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.open(t)
	done := make(chan reply, 1)
	go func() {
		done <- f.do(t, http.MethodPost, id, "application/json", `{"jsonrpc":"2.0","id":1,"method":"test/block"}`)
	}()
	<-f.started
	if r := f.do(t, http.MethodDelete, id, "", ""); r.status != 200 {
		t.Fatalf("DELETE: %d", r.status)
	}
	select {
	case r := <-done:
		if r.status != http.StatusNotFound || errData(t, r.body).Code != "SESSION_NOT_FOUND" {
			t.Fatalf("POST of a deleted session: %d %s", r.status, r.body)
		}
	case <-time.After(wait):
		t.Fatal("POST still open after DELETE")
	}
}

// TestIdleExpiry: a session nobody uses expires, and its id then gets 404.
func TestIdleExpiry(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{IdleTimeout: 40 * time.Millisecond}, streamable.Options{})
	id := f.open(t)
	transporttest.Settle(t, wait, "idle session expired", func() bool { return f.h.Sessions() == 0 })
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != 404 {
		t.Fatalf("expired session: %d", r.status)
	}
}

// TestSessionCap: at the cap, initialize takes the place of the least
// recently used idle session, whose id then gets 404; with every session
// held by its GET stream, it is refused with 503 and Retry-After.
func TestSessionCap(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{Settings: httpx.Settings{Gate: httpx.NewGate(httpx.Limits{Max: 2})}})
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	first := f.open(t)
	second := f.open(t)
	if r := f.do(t, http.MethodPost, first, acceptBoth, ping); r.status != http.StatusOK {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	third := f.open(t) // second is the least recently used
	for _, tc := range []struct {
		id   string
		want int
	}{{first, http.StatusOK}, {second, http.StatusNotFound}, {third, http.StatusOK}} {
		if r := f.do(t, http.MethodPost, tc.id, acceptBoth, ping); r.status != tc.want {
			t.Errorf("ping on a session after the reclaim: %d, want %d (%s)", r.status, tc.want, r.body)
		}
	}
	for _, id := range []string{first, third} {
		g := f.openGet(t, id)
		defer g.close()
	}
	r := f.do(t, http.MethodPost, "", acceptBoth, initBody)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("initialize with every session connected: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	if d := errData(t, r.body); d.Code != "TOO_MANY_SESSIONS" || d.RetryAfter == 0 {
		t.Errorf("error data = %+v", d)
	}
}

// TestGetStreamKeepsSessionAlive: a session whose client listens on its
// GET stream does not expire, whether or not keep-alive comments are
// sent; once the stream closes, it does.
func TestGetStreamKeepsSessionAlive(t *testing.T) {
	for _, tt := range []struct {
		name      string
		keepAlive time.Duration
	}{{"keep-alives on", 10 * time.Millisecond}, {"keep-alives off", -1}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mcp.EngineOptions{IdleTimeout: 100 * time.Millisecond}, streamable.Options{Settings: httpx.Settings{KeepAlive: tt.keepAlive}})
			id := f.open(t)
			req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", id)
			resp, err := f.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("GET: %d %q", resp.StatusCode, ct)
			}
			if tt.keepAlive > 0 {
				// Four idle timeouts' worth of pings, read byte for byte.
				want := strings.Repeat(": ping\n\n", 40)
				got := make([]byte, len(want))
				if _, err := io.ReadFull(resp.Body, got); err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Fatalf("stream = %q, want only keep-alive comments", got)
				}
			} else {
				// No fixed wait: a control session opened now is expired by
				// a janitor pass that would take this one too; a second,
				// opened once the first has gone, only after that pass is
				// over (passes run one after the other).
				for range 2 {
					ctl := f.e.Session(f.open(t))
					select {
					case <-ctl.Done():
					case <-time.After(wait):
						t.Fatal("a control session did not expire")
					}
				}
			}
			if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != 200 {
				t.Fatalf("session expired although its stream was open: %d", r.status)
			}
			resp.Body.Close()
			transporttest.Settle(t, wait, "session expired after its stream closed", func() bool { return f.e.Session(id) == nil })
		})
	}
}

// TestServerRequestOnPostStream: a request to the client made while
// handling a POST (elicitation) travels on that POST's stream; the
// client's answer, posted separately, gets 202 and lets the first POST
// finish with its result.
func TestServerRequestOnPostStream(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.open(t)
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"e","method":"test/elicit"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptBoth)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want a stream", ct)
	}
	br := bufio.NewReader(resp.Body)
	readEvent := func() map[string]any {
		t.Helper()
		var data string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if line == "\n" && data != "" {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = strings.TrimSuffix(d, "\n")
			}
		}
	}
	ask := readEvent()
	if ask["method"] != mcp.MethodElicitationCreate || ask["id"] == nil {
		t.Fatalf("first event = %v, want an elicitation request", ask)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"action":"accept","content":{"name":"Ada"}}}`, ask["id"])
	if r := f.do(t, http.MethodPost, id, acceptBoth, answer); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	res := readEvent()
	want := map[string]any{"jsonrpc": "2.0", "id": "e", "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestPreferStreams: by default an answer with nothing before it is JSON;
// with PreferStreams it is an event stream whenever the client accepts one,
// and still JSON for a client that accepts only JSON.
func TestPreferStreams(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	tests := []struct {
		prefer bool
		accept string
		want   string
	}{
		{false, acceptBoth, "application/json"},
		{true, acceptBoth, "text/event-stream"},
		{true, "application/json", "application/json"},
		{true, "text/event-stream", "text/event-stream"},
	}
	for _, tt := range tests {
		f := newFixture(t, mcp.EngineOptions{}, streamable.Options{PreferStreams: tt.prefer})
		id := f.open(t)
		r := f.do(t, http.MethodPost, id, tt.accept, ping)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), tt.want) {
			t.Errorf("prefer=%v accept=%q: %d %q, want %s", tt.prefer, tt.accept, r.status, r.header.Get("Content-Type"), tt.want)
		}
		if !strings.Contains(r.body, `"id":7`) {
			t.Errorf("prefer=%v accept=%q: body %s", tt.prefer, tt.accept, r.body)
		}
	}
}

// TestUnreadableOnSession: on a session, bytes that are not JSON are
// answered with status 400, as HTTP refuses a body it cannot read; JSON
// that is no JSON-RPC message is answered like the session's requests,
// with -32600 naming the message's id when it has a readable one.
func TestUnreadableOnSession(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	live := f.open(t)
	tests := []struct {
		name, body string
		status     int
		id         string // of the JSON-RPC answer
		code       int64
	}{
		{"not JSON", `{"jsonrpc":`, 400, "null", -32700},
		{"no method, with an id", `{"jsonrpc":"2.0","id":7}`, 200, "7", -32600},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 200, "null", -32600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, live, acceptBoth, tc.body)
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int64 }
			}
			if err := json.Unmarshal([]byte(r.body), &m); err != nil || r.status != tc.status ||
				string(m.ID) != tc.id || m.Error.Code != tc.code {
				t.Fatalf("%d %s; want %d with id %s and code %d", r.status, r.body, tc.status, tc.id, tc.code)
			}
		})
	}
	if r := f.do(t, http.MethodPost, live, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.status != 200 {
		t.Fatalf("the session after them: %d %s", r.status, r.body)
	}
}

// countsAtAnswer is a ResponseWriter that notes, when the answer's status
// is written, what the caps and the handler count: what a client reading
// the answer would find.
type countsAtAnswer struct {
	http.ResponseWriter
	at func()
}

// Unwrap gives http.ResponseController the writer's Flush.
func (w *countsAtAnswer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *countsAtAnswer) WriteHeader(status int) {
	w.at()
	w.ResponseWriter.WriteHeader(status)
}

// TestEndedSessionUncountedAtItsAnswer: a session that ends on a POST
// (an initialize the engine refuses, clientInfo over its bound; answered
// as JSON and as a stream) or a DELETE has ended and given its place back
// when the answer is written: whoever reads the answer (a client,
// /healthz) finds it no longer counted, by the caps or the handler.
func TestEndedSessionUncountedAtItsAnswer(t *testing.T) {
	refused := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", 300) + `","version":"0"}}}`
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, f *fixture) reply
	}{
		{"refused initialize, JSON", func(t *testing.T, f *fixture) reply {
			return f.do(t, http.MethodPost, "", "application/json", refused)
		}},
		{"refused initialize, stream", func(t *testing.T, f *fixture) reply {
			return f.do(t, http.MethodPost, "", "text/event-stream", refused)
		}},
		{"DELETE", func(t *testing.T, f *fixture) reply {
			return f.do(t, http.MethodDelete, f.open(t), acceptBoth, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := httpx.NewGate(httpx.Limits{Max: 10})
			var f *fixture
			var gateAt, handlerAt atomic.Int64
			gateAt.Store(-1)
			f = newWrappedFixture(t, mcp.EngineOptions{}, streamable.Options{Settings: httpx.Settings{Gate: gate}},
				func(h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						h.ServeHTTP(&countsAtAnswer{w, func() {
							gateAt.Store(int64(gate.Counts().Total))
							handlerAt.Store(int64(f.h.Sessions()))
						}}, r)
					})
				})
			r := tc.end(t, f)
			if tc.name != "DELETE" {
				if r.header.Get("Mcp-Session-Id") != "" {
					t.Errorf("a refused initialize named a session")
				}
				if !strings.Contains(r.body, "params.clientInfo.name") {
					t.Errorf("answer %q does not name the field refused", r.body)
				}
			} else if r.status != http.StatusOK {
				t.Fatalf("DELETE: %d %s", r.status, r.body)
			}
			if n := gateAt.Load(); n != 0 {
				t.Errorf("the caps counted %d sessions when the answer was written, want 0", n)
			}
			if n := handlerAt.Load(); n != 0 {
				t.Errorf("the handler held %d sessions when the answer was written, want 0", n)
			}
		})
	}
}
