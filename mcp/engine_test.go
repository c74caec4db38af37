package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

type fakePrompts struct{ n int }

func (f fakePrompts) ListPrompts(context.Context, *mcp.Request) ([]mcp.Prompt, error) {
	out := make([]mcp.Prompt, f.n)
	for i := range out {
		out[i] = mcp.Prompt{Name: fmt.Sprintf("p%03d", i), Description: "prompt", Arguments: []mcp.PromptArgument{}}
	}
	return out, nil
}

func (f fakePrompts) GetPrompt(_ context.Context, _ *mcp.Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if p.Name != "hello" {
		return nil, &fault.Error{Code: fault.TemplateNotFound, What: fmt.Sprintf("template %q not found", p.Name),
			Why: "no template has that name", How: "list prompts", Suggestions: []string{"hello"}}
	}
	return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("hi " + p.Arguments["who"])}}}, nil
}

// testServer has hooks that let tests block, panic, report progress and
// call back into the client.
func testServer(t testing.TB, opts mcp.EngineOptions) (*mcp.Engine, *hooks) {
	h := &hooks{started: make(chan string, 100), release: make(chan struct{})}
	srv := &mcp.Server{
		Info:     mcp.Implementation{Name: "test", Version: "0"},
		Prompts:  fakePrompts{n: 5},
		PageSize: 2,
		Methods: map[string]mcp.Handler{
			"test/block": func(ctx context.Context, r *mcp.Request) (any, error) {
				h.started <- string(r.ID)
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-h.release:
					return map[string]string{"released": string(r.ID)}, nil
				}
			},
			"test/echo": func(_ context.Context, r *mcp.Request) (any, error) {
				return map[string]any{"session": r.SessionID(), "params": r.Params}, nil
			},
			"test/panic": func(context.Context, *mcp.Request) (any, error) { panic("boom") },
			"test/unencodable": func(context.Context, *mcp.Request) (any, error) {
				return map[string]any{"c": make(chan int)}, nil
			},
			"test/progress": func(_ context.Context, r *mcp.Request) (any, error) {
				var p struct{ mcp.ParamsMeta }
				if err := r.Decode(&p); err != nil {
					return nil, err
				}
				for i := 1; i <= 3; i++ {
					r.Progress(float64(i), 3, fmt.Sprintf("step %d", i))
				}
				r.Log(mcp.LevelInfo, "test", "done")
				return map[string]int{"steps": 3}, nil
			},
			"test/elicit": func(ctx context.Context, r *mcp.Request) (any, error) {
				var out map[string]any
				if err := r.Call(ctx, mcp.MethodElicitationCreate, map[string]any{"message": "name?"}, &out); err != nil {
					return nil, err
				}
				return out, nil
			},
		},
	}
	if opts.Logger == nil {
		opts.Logger = nil
	}
	e := mcp.NewEngine(srv, opts)
	t.Cleanup(func() {
		close(h.release)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return e, h
}

type hooks struct {
	started chan string
	release chan struct{}
}

// TestFramingGolden sends each malformed or edge-case frame to a live,
// initialized session and compares the answer with the golden file. The
// session must survive every one and still answer ping.
func TestFramingGolden(t *testing.T) {
	cases := []struct {
		name, send string
		preinit    bool // send before initialize
		noReply    bool
	}{
		{name: "malformed json", send: `{"jsonrpc":"2.0","id":1,"method":`},
		{name: "garbage", send: `not json at all`},
		{name: "array batch", send: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{name: "empty array", send: `[]`},
		{name: "string not object", send: `"ping"`},
		{name: "number not object", send: `42`},
		{name: "missing jsonrpc", send: `{"id":1,"method":"ping"}`},
		{name: "wrong jsonrpc", send: `{"jsonrpc":"1.0","id":2,"method":"ping"}`},
		{name: "no method", send: `{"jsonrpc":"2.0","id":3}`},
		{name: "empty method", send: `{"jsonrpc":"2.0","id":3,"method":""}`},
		{name: "method not string", send: `{"jsonrpc":"2.0","id":4,"method":7}`},
		{name: "null id", send: `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		{name: "fractional id", send: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		{name: "object id", send: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`},
		{name: "bool id", send: `{"jsonrpc":"2.0","id":true,"method":"ping"}`},
		{name: "string id", send: `{"jsonrpc":"2.0","id":"abc-123","method":"ping"}`},
		{name: "negative id", send: `{"jsonrpc":"2.0","id":-1,"method":"ping"}`},
		{name: "zero id", send: `{"jsonrpc":"2.0","id":0,"method":"ping"}`},
		{name: "2^53 id", send: `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`},
		{name: "-2^53 id", send: `{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`},
		{name: "empty string id", send: `{"jsonrpc":"2.0","id":"","method":"ping"}`},
		{name: "unknown method", send: `{"jsonrpc":"2.0","id":5,"method":"nope/nothing"}`},
		{name: "unknown notification", send: `{"jsonrpc":"2.0","method":"notifications/whatever"}`, noReply: true},
		{name: "params not object", send: `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":[1,2]}`},
		{name: "params wrong type", send: `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":5}}`},
		{name: "arguments not strings", send: `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"hello","arguments":{"who":1}}}`},
		{name: "a boolean argument after a string", send: `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"hello","arguments":{"who":"x","loud":true}}}`},
		{name: "missing name", send: `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{}}`},
		{name: "unknown prompt", send: `{"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"helo"}}`},
		{name: "ping", send: `{"jsonrpc":"2.0","id":11,"method":"ping"}`},
		{name: "ping with params", send: `{"jsonrpc":"2.0","id":12,"method":"ping","params":{}}`},
		{name: "setLevel", send: `{"jsonrpc":"2.0","id":13,"method":"logging/setLevel","params":{"level":"debug"}}`},
		{name: "setLevel unknown", send: `{"jsonrpc":"2.0","id":14,"method":"logging/setLevel","params":{"level":"loud"}}`},
		{name: "second initialize", send: `{"jsonrpc":"2.0","id":15,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		{name: "bad cursor", send: `{"jsonrpc":"2.0","id":16,"method":"prompts/list","params":{"cursor":"zzz"}}`},
		{name: "ping before initialize", send: `{"jsonrpc":"2.0","id":17,"method":"ping"}`, preinit: true},
		{name: "list before initialize", send: `{"jsonrpc":"2.0","id":18,"method":"prompts/list"}`, preinit: true},
		{name: "response from client with unknown id", send: `{"jsonrpc":"2.0","id":99,"result":{}}`, noReply: true},
	}
	e, _ := testServer(t, mcp.EngineOptions{})
	got := map[string]json.RawMessage{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptest.Connect(t, e)
			if !tc.preinit {
				c.Initialize(t, mcp.LatestVersion)
			}
			c.Send(tc.send)
			if tc.noReply {
				// Prove nothing came back: the ping answer must be the next message.
				m := c.Request(t, "after", "ping", nil)
				if c.Len() != 0 || m.Error != nil {
					t.Fatalf("unexpected messages: %d, error %+v", c.Len(), m.Error)
				}
				got[tc.name] = json.RawMessage("null")
				return
			}
			m := c.Next(t)
			got[tc.name] = m.Raw
			if m.Error != nil && m.Error.Code == 0 {
				t.Fatalf("error code 0: %s", m.Raw)
			}
			if m.Error != nil && m.Error.Data.Code == "" {
				t.Fatalf("error without symbolic code: %s", m.Raw)
			}
			// The session lives on.
			if p := c.Request(t, "alive", "ping", nil); p.Error != nil || string(p.Result) != "{}" {
				t.Fatalf("session did not survive: %s", p.Raw)
			}
		})
	}
	golden.JSON(t, filepath.Join("testdata", "framing.golden.json"), got)
}

func TestIDsEchoedExactly(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	for _, id := range []string{`"x"`, `""`, `-1`, `0`, `9007199254740992`, `-9007199254740992`, `"\u00e9"`, `"-1"`, `123456789012345678901234567890`} {
		c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		m := c.Next(t)
		if string(m.ID) != id {
			t.Errorf("id %s echoed as %s", id, m.ID)
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	tests := []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2026-07-28", "2025-11-25"},
		{"1999-01-01", "2025-11-25"},
		{"", "2025-11-25"},
	}
	e, _ := testServer(t, mcp.EngineOptions{})
	for _, tt := range tests {
		c := mcptest.Connect(t, e)
		m := c.Initialize(t, tt.asked)
		var res mcp.InitializeResult
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.ProtocolVersion != tt.want {
			t.Errorf("asked %q: got %q, want %q", tt.asked, res.ProtocolVersion, tt.want)
		}
		if res.Capabilities.Prompts == nil || !res.Capabilities.Prompts.ListChanged || res.Capabilities.Logging == nil {
			t.Errorf("capabilities: %+v", res.Capabilities)
		}
		if c.S.ProtocolVersion() != tt.want {
			t.Errorf("session version %q", c.S.ProtocolVersion())
		}
	}
}

func TestMessageSizeCap(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{MaxMessageSize: 1024})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	big := `{"jsonrpc":"2.0","id":1,"method":"test/echo","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`
	c.Send(big)
	m := c.Next(t)
	if m.Error == nil || m.Error.Code != -32600 || m.Error.Data.Code != mcp.CodeMessageTooBig || string(m.ID) != "null" {
		t.Fatalf("got %s", m.Raw)
	}
	if p := c.Request(t, 2, "ping", nil); p.Error != nil {
		t.Fatalf("session died: %s", p.Raw)
	}
}

func TestPagination(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	var names []string
	cursor := ""
	for page := 0; page < 10; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		m := c.Request(t, page, "prompts/list", params)
		var res mcp.ListPromptsResult
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	want := []string{"p000", "p001", "p002", "p003", "p004"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("pages (-want +got):\n%s", diff)
	}
}

// namedPrompts lists the prompts it is given; tests change it between
// pages.
type namedPrompts struct {
	fakePrompts
	mu    sync.Mutex
	names []string
}

func (n *namedPrompts) ListPrompts(context.Context, *mcp.Request) ([]mcp.Prompt, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]mcp.Prompt, len(n.names))
	for i, name := range n.names {
		out[i] = mcp.Prompt{Name: name, Arguments: []mcp.PromptArgument{}}
	}
	return out, nil
}

func (n *namedPrompts) set(names ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names = names
}

// TestPaginationListChanged: a cursor is honoured while the list holds
// still, or changes only after its place; an addition or removal before
// it is reported, since going on would skip or repeat items.
func TestPaginationListChanged(t *testing.T) {
	tests := []struct {
		name  string
		after []string // the list when the second page is asked for
		want  []string // the second page; nil when the cursor must be refused
	}{
		{name: "unchanged", after: []string{"a", "b", "c", "d", "e"}, want: []string{"c", "d"}},
		{name: "changed after the cursor", after: []string{"a", "b", "c", "d", "z"}, want: []string{"c", "d"}},
		{name: "added before the cursor", after: []string{"a", "aa", "b", "c", "d", "e"}},
		{name: "removed before the cursor", after: []string{"b", "c", "d", "e"}},
		{name: "the cursor's item removed", after: []string{"a", "b", "d", "e"}},
		{name: "shrunk to the cursor", after: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prompts := &namedPrompts{}
			prompts.set("a", "b", "c", "d", "e")
			e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Prompts: prompts, PageSize: 2}, mcp.EngineOptions{})
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			var first mcp.ListPromptsResult
			if err := json.Unmarshal(c.Request(t, 1, "prompts/list", nil).Result, &first); err != nil || first.NextCursor == "" {
				t.Fatalf("first page: %+v, %v", first, err)
			}
			prompts.set(tt.after...)
			m := c.Request(t, 2, "prompts/list", map[string]any{"cursor": first.NextCursor})
			if tt.want == nil {
				if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Data.What, "the list changed") {
					t.Fatalf("want the changed list reported, got %s", m.Raw)
				}
				return
			}
			var second mcp.ListPromptsResult
			if err := json.Unmarshal(m.Result, &second); err != nil || m.Error != nil {
				t.Fatalf("second page: %s", m.Raw)
			}
			var got []string
			for _, p := range second.Prompts {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("second page (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancellation: a cancelled request gets no response, its handler's
// context is cancelled, and the session goes on.
func TestCancellation(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":"slow","method":"test/block"}`)
	<-h.started
	c.Notify(t, "notifications/cancelled", map[string]any{"requestId": "slow", "reason": "user"})
	if m := c.Request(t, 1, "ping", nil); m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
	// Give the cancelled handler every chance to (wrongly) answer.
	if p := c.Request(t, 2, "ping", nil); p.Error != nil {
		t.Fatalf("%s", p.Raw)
	}
	for _, m := range c.All() {
		if string(m.ID) == `"slow"` {
			t.Fatalf("cancelled request was answered: %s", m.Raw)
		}
	}
	// The same id may be reused once the old request is gone.
	c.Send(`{"jsonrpc":"2.0","id":"slow","method":"ping"}`)
	if m := c.Response(t, json.RawMessage(`"slow"`)); m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
}

func TestRequestDeadline(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{RequestTimeout: 50 * time.Millisecond})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`)
	<-h.started
	m := c.Response(t, json.RawMessage(`1`))
	if m.Error == nil || m.Error.Data.Code != fault.RequestTimeout || m.Error.Code != -32603 {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestDuplicateInflightID(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":7,"method":"test/block"}`)
	<-h.started
	c.Send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	m := c.Next(t)
	if m.Error == nil || m.Error.Code != -32600 {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "test/panic", nil)
	if m.Error == nil || m.Error.Code != -32603 {
		t.Fatalf("got %s", m.Raw)
	}
	if p := c.Request(t, 2, "ping", nil); p.Error != nil {
		t.Fatalf("%s", p.Raw)
	}
}

// TestOutboxOrder: progress and log notifications a handler sends arrive
// before its response, in the order sent.
func TestOutboxOrder(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Request(t, 0, "logging/setLevel", map[string]string{"level": "info"})
	c.Request(t, 1, "test/progress", map[string]any{"_meta": map[string]any{"progressToken": "tok"}})
	var seq []string
	for _, m := range c.All() {
		switch {
		case m.Method == "notifications/progress":
			var p mcp.ProgressParams
			_ = json.Unmarshal(m.Params, &p)
			seq = append(seq, fmt.Sprintf("progress %v/%v %s %s", p.Progress, p.Total, p.Message, p.ProgressToken))
		case m.Method != "":
			seq = append(seq, m.Method)
		}
	}
	want := []string{`progress 1/3 step 1 "tok"`, `progress 2/3 step 2 "tok"`, `progress 3/3 step 3 "tok"`, "notifications/message"}
	if diff := cmp.Diff(want, seq); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	// Without a progress token nothing is sent.
	c2 := mcptest.Connect(t, e)
	c2.Initialize(t, mcp.LatestVersion)
	c2.Request(t, 1, "test/progress", nil)
	for _, m := range c2.All() {
		if m.Method == "notifications/progress" || m.Method == "notifications/message" {
			t.Fatalf("unexpected %s (no token, default level warning)", m.Method)
		}
	}
}

func TestServerToClientCall(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":"e1","method":"test/elicit"}`)
	req := c.Next(t)
	if req.Method != mcp.MethodElicitationCreate || req.ID == nil {
		t.Fatalf("expected an elicitation request, got %s", req.Raw)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	m := c.Response(t, json.RawMessage(`"e1"`))
	if diff := cmp.Diff(`{"action":"accept","content":{"name":"Ada"}}`, string(m.Result)); diff != "" {
		t.Fatal(diff)
	}
	// A client error is passed back to the handler and out as an error.
	c.Send(`{"jsonrpc":"2.0","id":"e2","method":"test/elicit"}`)
	req = c.Next(t)
	c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"no elicitation"}}`)
	m = c.Response(t, json.RawMessage(`"e2"`))
	if m.Error == nil || m.Error.Code != -32601 {
		t.Fatalf("got %s", m.Raw)
	}
}

// TestAbandonedCallIsCancelled: when the server stops waiting for a
// client's answer (its own timeout, or the request that asked was
// cancelled), it tells the client with notifications/cancelled naming the
// call, so the client can close the form it shows.
func TestAbandonedCallIsCancelled(t *testing.T) {
	tests := []struct {
		name     string
		opts     mcp.EngineOptions
		abandon  func(t *testing.T, c *mcptest.Client)
		wantCode string // error.data.code of the request's answer; "" for none (cancelled)
	}{
		{name: "call timeout", opts: mcp.EngineOptions{CallTimeout: 50 * time.Millisecond}, wantCode: "REQUEST_TIMEOUT"},
		{name: "request cancelled", abandon: func(t *testing.T, c *mcptest.Client) {
			c.Notify(t, mcp.NotificationCancelled, map[string]any{"requestId": "e1"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := testServer(t, tt.opts)
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			c.Send(`{"jsonrpc":"2.0","id":"e1","method":"test/elicit"}`)
			req := c.Next(t)
			if req.Method != mcp.MethodElicitationCreate {
				t.Fatalf("expected an elicitation request, got %s", req.Raw)
			}
			if tt.abandon != nil {
				tt.abandon(t, c)
			}
			n := c.Notification(t, mcp.NotificationCancelled)
			var p mcp.CancelledParams
			if err := json.Unmarshal(n.Params, &p); err != nil || string(p.RequestID) != string(req.ID) || p.Reason == "" {
				t.Fatalf("cancelled = %s, want requestId %s and a reason", n.Params, req.ID)
			}
			if tt.wantCode != "" {
				m := c.Response(t, json.RawMessage(`"e1"`))
				if m.Error == nil || m.Error.Data.Code != tt.wantCode {
					t.Fatalf("answer = %s, want %s", m.Raw, tt.wantCode)
				}
			}
			// A late answer is dropped quietly; the session goes on.
			c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{}}}`)
			if m := c.Request(t, "after", "ping", nil); m.Error != nil {
				t.Fatalf("ping after an abandoned call: %s", m.Raw)
			}
		})
	}
}

// TestCallTimeoutNeverExceedsRequestTimeout: a call waits no longer than
// the request that made it has left, and whichever ends the wait, the call
// timeout or the request's deadline, the client is told the call is
// abandoned and the request is answered with the fault saying the client
// did not answer (not the request's own "took too long").
func TestCallTimeoutNeverExceedsRequestTimeout(t *testing.T) {
	tests := []struct {
		name string
		opts mcp.EngineOptions
	}{
		{name: "the request's deadline comes first", opts: mcp.EngineOptions{RequestTimeout: 80 * time.Millisecond, CallTimeout: time.Hour}},
		{name: "the call timeout comes first", opts: mcp.EngineOptions{RequestTimeout: time.Hour, CallTimeout: 80 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := testServer(t, tt.opts)
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			c.Send(`{"jsonrpc":"2.0","id":"e1","method":"test/elicit"}`)
			req := c.Next(t)
			if req.Method != mcp.MethodElicitationCreate {
				t.Fatalf("expected an elicitation request, got %s", req.Raw)
			}
			n := c.Notification(t, mcp.NotificationCancelled)
			var p mcp.CancelledParams
			if err := json.Unmarshal(n.Params, &p); err != nil || string(p.RequestID) != string(req.ID) {
				t.Fatalf("cancelled = %s, want requestId %s", n.Params, req.ID)
			}
			m := c.Response(t, json.RawMessage(`"e1"`))
			want := "the client did not answer " + mcp.MethodElicitationCreate
			if m.Error == nil || m.Error.Code != -32603 || m.Error.Data.Code != fault.RequestTimeout || m.Error.Data.What != want {
				t.Fatalf("answer = %s, want code -32603, %s: %q", m.Raw, fault.RequestTimeout, want)
			}
		})
	}
}

// TestSlowClientClosedNotWorkers: a client that stops reading fills its
// own outbox and is closed; other sessions keep being served.
func TestSlowClientClosedNotWorkers(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{MaxInflightPerSession: 4})
	release := make(chan struct{})
	defer close(release)
	slow := mcptest.ConnectBlocked(t, e, release)
	slow.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	// Flood notifications until the outbox overflows.
	for i := 0; i < 1000; i++ {
		e.Notify(mcp.NotificationPromptsListChanged, nil)
	}
	select {
	case <-slow.S.Done():
	case <-time.After(mcptest.Wait):
		t.Fatal("slow session was not closed")
	}
	fast := mcptest.Connect(t, e)
	fast.Initialize(t, mcp.LatestVersion)
	if m := fast.Request(t, 1, "ping", nil); m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
}

// TestConcurrentSessionsExactlyOnce: many sessions, thousands of requests;
// every request gets exactly one response, on its own session.
func TestConcurrentSessionsExactlyOnce(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{MaxInflightPerSession: 64})
	const sessions, perSession = 40, 250
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		c := mcptest.Connect(t, e)
		c.Initialize(t, mcp.LatestVersion)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perSession; j++ {
				c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test/echo","params":{"n":%d}}`, j, j))
			}
			// Every request sent has been admitted: once the session has
			// handed over all their answers, the client holds them.
			ctx, cancel := context.WithTimeout(context.Background(), mcptest.Wait)
			err := c.S.Drain(ctx)
			cancel()
			if err != nil || c.Len() < perSession {
				errs <- fmt.Errorf("session %s: %d responses within %s, want %d (%v)", c.S.ID(), c.Len(), mcptest.Wait, perSession, err)
				return
			}
			seen := map[string]int{}
			for _, m := range c.All() {
				if m.Error != nil {
					errs <- fmt.Errorf("error response %s", m.Raw)
					return
				}
				var res struct {
					Session string          `json:"session"`
					Params  json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(m.Result, &res); err != nil {
					errs <- err
					return
				}
				if res.Session != c.S.ID() {
					errs <- fmt.Errorf("response for session %s delivered to %s", res.Session, c.S.ID())
					return
				}
				if want := fmt.Sprintf(`{"n":%s}`, m.ID); string(res.Params) != want {
					errs <- fmt.Errorf("id %s answered with params %s", m.ID, res.Params)
					return
				}
				seen[string(m.ID)]++
			}
			if len(seen) != perSession {
				errs <- fmt.Errorf("session %s: %d distinct responses, want %d", c.S.ID(), len(seen), perSession)
			}
			for id, n := range seen {
				if n != 1 {
					errs <- fmt.Errorf("id %s answered %d times", id, n)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestShutdownDrainsInflight(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	probe := mcptest.Connect(t, e)
	probe.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`)
	<-h.started
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), mcptest.Wait)
		defer cancel()
		done <- e.Shutdown(ctx)
	}()
	// Once new requests are refused, Shutdown is waiting for the blocked
	// one: only then is it released.
	// Each ping waits for its answer: the first refused one is the event.
	deadline := time.Now().Add(mcptest.Wait)
	for pings := 1; ; pings++ {
		m := probe.Request(t, pings, "ping", nil)
		if m.Error != nil && m.Error.Data.What == "the server is shutting down" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Shutdown refuses new requests: not within %s", mcptest.Wait)
		}
	}
	h.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	m := c.Response(t, json.RawMessage(`1`))
	if m.Error != nil {
		t.Fatalf("in-flight request not answered before shutdown: %s", m.Raw)
	}
	if e.SessionCount() != 0 {
		t.Fatalf("%d sessions left", e.SessionCount())
	}
}

func TestErrorObjectNeverZero(t *testing.T) {
	tests := []struct {
		err  error
		code int64
		sym  string
	}{
		{errors.New("plain"), -32603, fault.Internal},
		{fmt.Errorf("wrapped: %w", &fault.Error{Code: fault.TemplateNotFound, What: "x"}), -32602, fault.TemplateNotFound},
		{&fault.Error{Code: fault.MissingRequiredVariable}, -32602, fault.MissingRequiredVariable},
		{&fault.Error{Code: "SOMETHING_NEW"}, -32603, "SOMETHING_NEW"},
		{context.DeadlineExceeded, -32603, fault.RequestTimeout},
		{&fault.Error{Code: fault.GitHubRateLimited, RetryAfter: 1500 * time.Millisecond}, -32603, fault.GitHubRateLimited},
	}
	for _, tt := range tests {
		obj := mcp.ErrorObject(tt.err)
		if obj.Code != tt.code {
			t.Errorf("%v: code %d, want %d", tt.err, obj.Code, tt.code)
		}
		var data mcp.ErrorData
		if err := json.Unmarshal(*obj.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.Code != tt.sym {
			t.Errorf("%v: symbol %q, want %q", tt.err, data.Code, tt.sym)
		}
		if tt.sym == fault.GitHubRateLimited && data.RetryAfter != 2 {
			t.Errorf("retry_after %d, want 2 (rounded up)", data.RetryAfter)
		}
	}
}

// TestBurstNeverWaitsBehindBlockedRequests: with many requests blocked, a
// new one still starts at once, so it is answered while the others are
// still blocked.
func TestBurstNeverWaitsBehindBlockedRequests(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	for i := 0; i < 20; i++ {
		c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"b%d","method":"test/block"}`, i))
	}
	for i := 0; i < 20; i++ {
		<-h.started
	}
	if m := c.Request(t, 1, "test/echo", map[string]int{"n": 1}); m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
}

// TestShutdownBoundedByContext: a handler that ignores its context cannot
// hold Shutdown past the deadline.
func TestShutdownBoundedByContext(t *testing.T) {
	started, stuck := make(chan struct{}), make(chan struct{})
	defer close(stuck)
	srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"}, Methods: map[string]mcp.Handler{
		"test/stuck": func(context.Context, *mcp.Request) (any, error) { close(started); <-stuck; return nil, nil },
	}}
	e := mcp.NewEngine(srv, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"test/stuck"}`)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Shutdown reported success with a handler still running")
		}
	case <-time.After(mcptest.Wait):
		t.Fatalf("Shutdown has not returned within %s, far past its deadline: it waits for the stuck handler", mcptest.Wait)
	}
}

// keepingSink keeps every message's Data, as a transport that writes later
// may, with a copy taken at Send to compare against later.
type keepingSink struct {
	changes
	mu     sync.Mutex
	kept   [][]byte
	copies [][]byte
}

func (k *keepingSink) Send(msgs []mcp.Outgoing) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range msgs {
		k.kept = append(k.kept, m.Data)
		k.copies = append(k.copies, bytes.Clone(m.Data))
	}
	k.note()
	return nil
}

func (k *keepingSink) Close() {}

func (k *keepingSink) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.copies)
}

const initFrame = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func newSession(t *testing.T, e *mcp.Engine, sink mcp.Sink) *mcp.Session {
	t.Helper()
	s, err := e.NewSession(context.Background(), sink, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestSinkKeepsWhatItIsHanded: the Data a sink is handed is its own for
// good. A sink that keeps every response unread while thousands more are
// encoded finds each one as it was handed over, whole and answering its
// own request.
func TestSinkKeepsWhatItIsHanded(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	k := &keepingSink{}
	s := newSession(t, e, k)
	s.Deliver([]byte(initFrame), nil)
	const n = 2000
	for i := 1; i <= n; i++ {
		s.Deliver([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test/echo","params":{"pad":%q}}`, i, strings.Repeat("x", i%300))), nil)
	}
	settle(t, "every response", k.watch(), func() bool { return k.count() >= n+1 })
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[string]bool{}
	for i, c := range k.copies {
		if !bytes.Equal(k.kept[i], c) {
			t.Fatalf("response %d changed after Send: %.80q, was %.80q", i, k.kept[i], c)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(c, &m); err != nil || m.Result == nil {
			t.Fatalf("response %d is not whole: %.80q", i, c)
		}
		if seen[string(m.ID)] {
			t.Fatalf("id %s answered twice", m.ID)
		}
		seen[string(m.ID)] = true
	}
	if len(seen) != n+1 {
		t.Fatalf("%d distinct responses, want %d", len(seen), n+1)
	}
}

// TestFrameIsTheSessions: a frame handed to Deliver is read in place, not
// copied, so a handler sees exactly the bytes the transport handed over;
// the rule that the transport never touches it again is what makes that
// safe (see transport.go).
func TestFrameIsTheSessions(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "test/echo", map[string]string{"é": "\u2028"})
	var res struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || string(res.Params) != `{"é":"\u2028"}` {
		t.Fatalf("params seen by the handler: %s (%v)", res.Params, err)
	}
}

// TestUnencodableResultIsAnswered: a result that cannot be encoded is
// answered with an internal error saying so.
func TestUnencodableResultIsAnswered(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	k := &keepingSink{}
	s := newSession(t, e, k)
	s.Deliver([]byte(initFrame), nil)
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"test/unencodable"}`), nil)
	settle(t, "both answers", k.watch(), func() bool { return k.count() >= 2 })
	k.mu.Lock()
	raw := k.copies[1]
	k.mu.Unlock()
	var m mcptest.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	if string(m.ID) != "1" || m.Error == nil || m.Error.Code != -32603 || m.Error.Data.Code != fault.Internal ||
		!strings.Contains(m.Error.Data.Why, "encode result") {
		t.Fatalf("answer = %s, want an internal error about encoding the result", raw)
	}
}

// TestIdleSessionsHoldNoGoroutine: a session's writer runs only while
// there is something to write, so hundreds of sessions that were just
// busy hold no goroutine once they are idle, and every request of their
// bursts is answered exactly once.
func TestIdleSessionsHoldNoGoroutine(t *testing.T) {
	// In a bubble, the writers' and the request goroutines' idle timers run
	// on its clock: once every goroutine waits, time jumps to the next
	// timer, so their leaving is waited for, not guessed.
	synctest.Test(t, func(t *testing.T) {
		start := runtime.NumGoroutine() // other tests' count too
		e, _ := testServer(t, mcp.EngineOptions{})
		sinks := make([]*keepingSink, 300)
		for i := range sinks {
			sinks[i] = &keepingSink{}
			s := newSession(t, e, sinks[i])
			s.Deliver([]byte(initFrame), nil)
			for j := 1; j <= 20; j++ {
				s.Deliver([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, j)), nil)
			}
		}
		synctest.Wait()
		for _, k := range sinks {
			if n := k.count(); n != 21 {
				t.Fatalf("%d messages, want 21 (one per request)", n)
			}
		}
		busy := runtime.NumGoroutine()
		time.Sleep(time.Minute) // past every idle timer of the engine's
		synctest.Wait()
		if n := runtime.NumGoroutine(); n-start > 16 {
			t.Fatalf("%d goroutines more than before the sessions once idle (%d when busy), want at most 16", n-start, busy-start)
		}
	})
}

// TestNewSessionLimit: under a burst of concurrent opens, exactly the
// limit is admitted, and a closed session frees its place.
func TestNewSessionLimit(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	const limit, tries = 50, 400
	var admitted atomic.Int32
	var wg sync.WaitGroup
	sessions := make(chan *mcp.Session, tries)
	for range tries {
		wg.Go(func() {
			s, err := e.NewSession(context.Background(), &keepingSink{}, limit)
			switch {
			case err == nil:
				admitted.Add(1)
				sessions <- s
			case !errors.Is(err, mcp.ErrTooManySessions):
				t.Errorf("NewSession: %v", err)
			}
		})
	}
	wg.Wait()
	close(sessions)
	if n := admitted.Load(); n != limit || e.SessionCount() != limit {
		t.Fatalf("admitted %d, engine holds %d; want %d", n, e.SessionCount(), limit)
	}
	if _, err := e.NewSession(context.Background(), &keepingSink{}, limit); !errors.Is(err, mcp.ErrTooManySessions) {
		t.Fatalf("over the limit: %v, want ErrTooManySessions", err)
	}
	(<-sessions).Close()
	s, err := e.NewSession(context.Background(), &keepingSink{}, limit)
	if err != nil {
		t.Fatalf("no place after a session closed: %v", err)
	}
	s.Close()
	for s := range sessions {
		s.Close()
	}
}

// TestFrameErrors: ParseInbound returns bytes that are no JSON-RPC
// message as a *mcp.FrameError, for the transport to answer its own way,
// with nothing said on the session: NotJSON for bytes that are not JSON
// (-32700, which HTTP answers with status 400); a JSON value that is no
// message keeps the id to answer with. What reads is delivered, and
// answered on the session.
func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		notJSON bool
		frame   bool   // a FrameError
		id      string // its id
		want    int    // answers
	}{
		{name: "malformed", msg: `{"jsonrpc":`, frame: true, notJSON: true, id: "null"},
		{name: "empty", msg: ``, frame: true, notJSON: true, id: "null"},
		{name: "a batch", msg: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, frame: true, id: "null"},
		{name: "no method", msg: `{"jsonrpc":"2.0","id":7}`, frame: true, id: "7"},
		{name: "a ping", msg: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, want: 1},
		{name: "a notification", msg: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testServer(t, mcp.EngineOptions{})
			k := &keepingSink{}
			s := newSession(t, e, k)
			in, err := mcp.ParseInbound([]byte(tc.msg))
			var fe *mcp.FrameError
			if errors.As(err, &fe) != tc.frame {
				t.Fatalf("ParseInbound = %v; want a FrameError: %v", err, tc.frame)
			}
			if tc.frame {
				if fe.NotJSON() != tc.notJSON || string(fe.ID) != tc.id {
					t.Errorf("NotJSON %v, id %s; want %v, %s", fe.NotJSON(), fe.ID, tc.notJSON, tc.id)
				}
				want := int64(-32600)
				if tc.notJSON {
					want = -32700
				}
				if code := mcp.ErrorObject(err).Code; code != want {
					t.Errorf("error code %d, want %d", code, want)
				}
				if k.count() != 0 {
					t.Errorf("%d messages on the session, want none", k.count())
				}
				return
			}
			n := s.DeliverInbound(context.Background(), in, nil)
			if n != tc.want {
				t.Fatalf("DeliverInbound = %d, want %d", n, tc.want)
			}
			settle(t, "every answer", k.watch(), func() bool { return k.count() >= n })
			if k.count() != n {
				t.Errorf("%d messages on the session, want %d", k.count(), n)
			}
		})
	}
}

// testRoute is a request's route that records what it is pushed.
type testRoute struct {
	changes
	json bool // carries no notifications, as a POST answered with JSON

	mu  sync.Mutex
	got []string
}

func (rt *testRoute) Push(m mcp.Outgoing) bool {
	if rt.json && m.Kind == mcp.KindMessage {
		return false
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.got = append(rt.got, describe(m))
	rt.note()
	return true
}

func (rt *testRoute) Resumable() bool { return false }

func (rt *testRoute) lines() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.got...)
}

// TestInlineDelivery: for a transport that waits for the answer on the
// delivering goroutine (it gives the request a Route), quick requests are answered before Deliver
// returns; others (which may wait on the client) run on a goroutine of
// their own, so Deliver returns while they run.
func TestInlineDelivery(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	s := newSession(t, e, &keepingSink{})
	s.Deliver([]byte(initFrame), nil)
	for i, method := range []string{`"prompts/get","params":{"name":"hello"}`, `"prompts/list"`, `"ping"`} {
		rt := &testRoute{}
		id := fmt.Sprint(i + 1)
		s.Deliver([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":`+method+`}`), rt)
		if got := rt.lines(); !slices.Equal(got, []string{"response " + id}) {
			t.Errorf("%s: %q when Deliver returned, want the response", method, got)
		}
	}
	// test/block is not one of ours: it may ask the client something, so
	// it runs on its own goroutine while Deliver returns.
	rt := &testRoute{}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":9,"method":"test/block"}`), rt)
	select {
	case <-h.started:
	case <-time.After(mcptest.Wait):
		t.Fatal("test/block never started")
	}
	if got := rt.lines(); len(got) != 0 {
		t.Fatalf("test/block said %q before it was released", got)
	}
	h.release <- struct{}{}
	settle(t, "test/block answered once released", rt.watch(), func() bool { return slices.Equal(rt.lines(), []string{"response 9"}) })
}

// TestRouteCarriesItsRequest: a request's progress, logs and response go
// to its route and nowhere else, in order; a route that carries no
// notifications leaves them to the session's sink, and the response still
// to the route; a cancelled request ends its route without a response.
func TestRouteCarriesItsRequest(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	k := &keepingSink{}
	s := newSession(t, e, k)
	s.Deliver([]byte(initFrame), nil)
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"info"}}`), nil)
	settle(t, "setLevel answered", k.watch(), func() bool { return k.count() == 2 })

	events := &testRoute{}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"test/progress","params":{"_meta":{"progressToken":"t"}}}`), events)
	want := []string{"notifications/progress", "notifications/progress", "notifications/progress", "notifications/message", "response 1"}
	settle(t, "the route's messages", events.watch(), func() bool { return len(events.lines()) == len(want) })
	if diff := cmp.Diff(want, events.lines()); diff != "" {
		t.Errorf("route (-want +got):\n%s", diff)
	}
	if n := k.count(); n != 2 {
		t.Errorf("the sink got %d messages more, want none", n-2)
	}

	jsonOnly := &testRoute{json: true}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":2,"method":"test/progress","params":{"_meta":{"progressToken":"t"}}}`), jsonOnly)
	settle(t, "the JSON route's response", jsonOnly.watch(), func() bool { return len(jsonOnly.lines()) == 1 })
	settle(t, "the notifications on the sink", k.watch(), func() bool { return k.count() == 2+4 })
	if got := jsonOnly.lines(); !slices.Equal(got, []string{"response 2"}) {
		t.Errorf("JSON route got %q", got)
	}

	cancelled := &testRoute{}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":3,"method":"test/block"}`), cancelled)
	<-h.started
	s.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`), nil)
	settle(t, "the cancelled request's end", cancelled.watch(), func() bool { return len(cancelled.lines()) == 1 })
	if got := cancelled.lines(); !slices.Equal(got, []string{"unanswered"}) {
		t.Errorf("cancelled route got %q", got)
	}
}
