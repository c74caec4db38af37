package mcp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// meta is the _meta of a 2026-07-28 request; extra members are added.
func meta(extra string) string {
	m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`
	if extra != "" {
		m += "," + extra
	}
	return m + "}"
}

// TestModernGolden sends 2026-era requests on a session that was never
// initialized (as a stdio client does after its server/discover probe) and
// compares every answer with the golden file: the members each result
// carries, the cache hints, and the errors of the era.
func TestModernGolden(t *testing.T) {
	cases := []struct{ name, send string }{
		{"discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta("") + `}}`},
		{"discover without _meta", `{"jsonrpc":"2.0","id":2,"method":"server/discover"}`},
		{"prompts/list, first page", `{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{` + meta("") + `}}`},
		{"prompts/get", `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{` + meta("") + `,"name":"hello","arguments":{"who":"x"}}}`},
		{"prompts/get with _meta last", `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"hello",` + meta("") + `}}`},
		{"unknown prompt", `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{` + meta("") + `,"name":"nope"}}`},
		{"no protocol version", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"no client capabilities", `{"jsonrpc":"2.0","id":8,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"unsupported version", `{"jsonrpc":"2.0","id":9,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"_meta not an object", `{"jsonrpc":"2.0","id":10,"method":"prompts/list","params":{"_meta":[1]}}`},
		{"unknown log level", `{"jsonrpc":"2.0","id":11,"method":"prompts/list","params":{` + meta(`"io.modelcontextprotocol/logLevel":"loud"`) + `}}`},
		{"ping was removed", `{"jsonrpc":"2.0","id":12,"method":"ping","params":{` + meta("") + `}}`},
		{"logging/setLevel was removed", `{"jsonrpc":"2.0","id":13,"method":"logging/setLevel","params":{` + meta("") + `,"level":"debug"}}`},
		{"initialize is not a 2026 method", `{"jsonrpc":"2.0","id":14,"method":"initialize","params":{` + meta("") + `}}`},
		{"no calls to the client", `{"jsonrpc":"2.0","id":15,"method":"test/elicit","params":{` + meta("") + `}}`},
		{"a handler's map result", `{"jsonrpc":"2.0","id":16,"method":"test/echo","params":{` + meta("") + `}}`},
	}
	e, _ := testServer(t, mcp.EngineOptions{})
	got := map[string]json.RawMessage{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptest.Connect(t, e)
			c.Send(tc.send)
			m := c.Next(t)
			got[tc.name] = m.Raw
			if m.Error == nil {
				var res struct {
					ResultType string                     `json:"resultType"`
					Meta       map[string]json.RawMessage `json:"_meta"`
				}
				if err := json.Unmarshal(m.Result, &res); err != nil || res.ResultType != "complete" || res.Meta[mcp.MetaServerInfo] == nil {
					t.Fatalf("a 2026 result without resultType or serverInfo: %s", m.Raw)
				}
			}
			// Nothing was remembered: the session is still not initialized,
			// and a legacy request on it is still refused.
			if c.S.Initialized() {
				t.Fatal("a 2026 request initialized the session")
			}
		})
	}
	golden.JSON(t, filepath.Join("testdata", "modern.golden.json"), got)
}

// TestModernLogLevel: a 2026 request gets log messages only when its _meta
// asks for a level, and only at or above it; progress goes with its token.
func TestModernLogLevel(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	tests := []struct {
		name     string
		meta     string
		wantLogs int
	}{
		{"no level", meta(`"progressToken":"t"`), 0},
		{"debug", meta(`"progressToken":"t","io.modelcontextprotocol/logLevel":"debug"`), 1},
		{"error", meta(`"progressToken":"t","io.modelcontextprotocol/logLevel":"error"`), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mcptest.Connect(t, e)
			c.Send(`{"jsonrpc":"2.0","id":1,"method":"test/progress","params":{` + tc.meta + `}}`)
			var logs, progress int
			for {
				m := c.Next(t)
				if m.ID != nil {
					break
				}
				switch m.Method {
				case mcp.NotificationMessage:
					logs++
				case mcp.NotificationProgress:
					progress++
				}
			}
			if logs != tc.wantLogs || progress != 3 {
				t.Fatalf("%d log messages and %d progress notifications, want %d and 3", logs, progress, tc.wantLogs)
			}
		})
	}
}

// TestListenOnSession: subscriptions/listen on a shared stream (stdio): the
// acknowledgement and every notification carry the subscription's id; only
// what was asked for arrives; notifications/cancelled ends it without a
// response, and a shutdown ends it with one.
func TestListenOnSession(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Send(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{` + meta("") +
		`,"notifications":{"promptsListChanged":true,"toolsListChanged":true,"resourceSubscriptions":["x://a"]}}}`)
	ack := c.Next(t)
	var ackParams struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications mcp.SubscriptionFilter     `json:"notifications"`
	}
	if err := json.Unmarshal(ack.Params, &ackParams); err != nil || ack.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message = %s, want the acknowledgement", ack.Raw)
	}
	// The server has prompts only: it agrees to what it can send.
	if string(ackParams.Meta[mcp.MetaSubscriptionID]) != `"sub-1"` || !ackParams.Notifications.PromptsListChanged ||
		ackParams.Notifications.ToolsListChanged || len(ackParams.Notifications.ResourceSubscriptions) != 0 {
		t.Fatalf("acknowledgement = %s", ack.Raw)
	}
	wantListeners(t, e, 1)
	e.Notify(mcp.NotificationToolsListChanged, nil)
	e.Notify(mcp.NotificationPromptsListChanged, nil)
	m := c.Next(t)
	if m.Method != mcp.NotificationPromptsListChanged || !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
		t.Fatalf("got %s, want the tagged prompts list_changed (and no tools one)", m.Raw)
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-1"}}`)
	drained(t, c.S)
	wantListeners(t, e, 0)
	if p := c.Request(t, 2, "prompts/list", json.RawMessage(`{`+meta("")+`}`)); p.Error != nil || c.Len() != 0 {
		t.Fatalf("after cancelling: %s, %d more messages (a cancelled listen gets no response)", p.Raw, c.Len())
	}

	c.Send(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{` + meta("") + `,"notifications":{"promptsListChanged":true}}}`)
	c.Next(t) // the acknowledgement
	wantListeners(t, e, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go e.Shutdown(ctx)
	end := c.Next(t)
	if string(end.ID) != "7" || !strings.Contains(string(end.Result), `"io.modelcontextprotocol/subscriptionId":7`) ||
		!strings.Contains(string(end.Result), `"resultType":"complete"`) {
		t.Fatalf("at shutdown: %s, want the listen's result naming its subscription", end.Raw)
	}
}

// wantListeners checks the engine's open subscriptions. No wait is
// needed: a listen sends its acknowledgement and registers in one step
// under the engine's lock, which Listeners takes, so once the client has
// the acknowledgement the subscription counts; it is let go of before its
// request ends, which its response (or Session.Drain, for one cancelled
// without a response) tells.
func wantListeners(t *testing.T, e *mcp.Engine, n int) {
	t.Helper()
	if got := e.Listeners(); got != n {
		t.Fatalf("%d listeners, want %d", got, n)
	}
}

// drained waits until the session has handed over the answers of all its
// requests, and let go of every request.
func drained(t *testing.T, s *mcp.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcptest.Wait)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("requests still in flight: %v", err)
	}
}

// route collects what an Exchange pushes; with limit set, it takes at most
// that many notifications, as a stream whose client stopped reading.
type route struct {
	events bool
	limit  int
	mu     sync.Mutex
	got    []mcp.Outgoing
	first  chan struct{} // closed as the first message is taken
	done   chan struct{}
}

func newRoute(events bool) *route {
	return &route{events: events, first: make(chan struct{}), done: make(chan struct{})}
}

func (r *route) Push(m mcp.Outgoing) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Kind == mcp.KindMessage && (!r.events || r.limit > 0 && len(r.got) >= r.limit) {
		return false
	}
	r.got = append(r.got, m)
	if len(r.got) == 1 {
		close(r.first)
	}
	if m.Kind == mcp.KindResponse || m.Kind == mcp.KindUnanswered {
		close(r.done)
	}
	return true
}

func (r *route) Resumable() bool { return false }

// TestExchange: a 2026 request with no session at all, as /mcp serves it:
// what Prepare refuses and with which code, and what Run pushes.
func TestExchange(t *testing.T) {
	e, h := testServer(t, mcp.EngineOptions{})
	refused := []struct {
		name, send string
		code       string
	}{
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, mcp.CodeInvalidParams},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, mcp.CodeUnsupportedVersion},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope","params":{` + meta("") + `}}`, mcp.CodeMethodNotFound},
		{"removed method", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{` + meta("") + `}}`, mcp.CodeMethodNotFound},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{` + meta("") + `}}`, mcp.CodeInvalidRequest},
	}
	for _, tc := range refused {
		in, err := mcp.ParseInbound([]byte(tc.send))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Prepare(in); err == nil || !strings.Contains(string(e.ErrorResponse(in.ID(), err, true)), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: Prepare = %v, want %s", tc.name, err, tc.code)
		}
	}

	run := func(ctx context.Context, send string, events bool) *route {
		in, err := mcp.ParseInbound([]byte(send))
		if err != nil {
			t.Fatal(err)
		}
		x, err := e.Prepare(in)
		if err != nil {
			t.Fatal(err)
		}
		rt := newRoute(events)
		go x.Run(ctx, rt)
		select {
		case <-rt.done:
		case <-time.After(mcptest.Wait):
			t.Fatal("no answer")
		}
		return rt
	}
	// Progress and logs go on the request's own stream, before the response.
	rt := run(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"test/progress","params":{`+meta(`"progressToken":1,"io.modelcontextprotocol/logLevel":"info"`)+`}}`, true)
	if len(rt.got) != 5 || rt.got[4].Kind != mcp.KindResponse || rt.got[4].Err != nil {
		t.Fatalf("pushed %d messages, want 3 progress, 1 log and the response", len(rt.got))
	}
	// A JSON-only answer drops them: there is no session to send them on.
	rt = run(context.Background(), `{"jsonrpc":"2.0","id":3,"method":"test/progress","params":{`+meta(`"progressToken":1`)+`}}`, false)
	if len(rt.got) != 1 || rt.got[0].Kind != mcp.KindResponse {
		t.Fatalf("pushed %d messages to a JSON answer, want the response alone", len(rt.got))
	}
	// An error response carries its error, whose code gives the
	// transport its status.
	rt = run(context.Background(), `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{`+meta("")+`,"name":"nope"}}`, false)
	if code := mcp.ErrorObjectFor(rt.got[0].Err, true).Code; rt.got[0].Err == nil || code != -32602 {
		t.Fatalf("Err = %v (code %d), want one of code -32602", rt.got[0].Err, code)
	}
	// The client going away cancels the request: no response.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.started; cancel() }()
	rt = run(ctx, `{"jsonrpc":"2.0","id":5,"method":"test/block","params":{`+meta("")+`}}`, true)
	if len(rt.got) != 1 || rt.got[0].Kind != mcp.KindUnanswered {
		t.Fatalf("a cancelled request pushed %+v, want KindUnanswered alone", rt.got)
	}
}

// FuzzParseInbound: any bytes are read or refused without a panic; a
// message read as modern either prepares or is refused with one of the
// era's codes, never a code of our own making.
func FuzzParseInbound(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta("") + `}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"hello",` + meta(`"io.modelcontextprotocol/logLevel":"debug"`) + `}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":null}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"x://y","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + strings.Repeat("n", mcp.MaxClientInfoField+1) + `"}}}}`))
	e, _ := testServer(f, mcp.EngineOptions{})
	codes := map[string]bool{mcp.CodeInvalidParams: true, mcp.CodeUnsupportedVersion: true, mcp.CodeMethodNotFound: true, mcp.CodeInvalidRequest: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := mcp.ParseInbound(data)
		if err != nil {
			return
		}
		name, named := in.Name()
		if named && !mcp.NamedMethod(in.Method()) || !named && name != "" {
			t.Fatalf("Name() = %q, %v for %s", name, named, in.Method())
		}
		if !in.Modern() {
			return
		}
		if _, err := e.Prepare(in); err != nil {
			var obj struct {
				Error struct {
					Data mcp.ErrorData `json:"data"`
				} `json:"error"`
			}
			if json.Unmarshal(e.ErrorResponse(in.ID(), err, true), &obj) != nil || !codes[obj.Error.Data.Code] {
				t.Fatalf("Prepare refused %q with %v", data, err)
			}
		}
	})
}

// TestListenBehind: a subscription whose stream cannot take another
// notification (its client stopped reading) ends with an error, rather
// than losing notifications without a word; the client listens again.
func TestListenBehind(t *testing.T) {
	e, _ := testServer(t, mcp.EngineOptions{})
	in, err := mcp.ParseInbound([]byte(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{` + meta("") +
		`,"notifications":{"promptsListChanged":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRoute(true)
	rt.limit = 2
	go x.Run(context.Background(), rt)
	select {
	case <-rt.first:
	case <-time.After(mcptest.Wait):
		t.Fatal("no acknowledgement")
	}
	wantListeners(t, e, 1)
	e.Notify(mcp.NotificationPromptsListChanged, nil) // taken: the acknowledgement and this one fill it
	e.Notify(mcp.NotificationPromptsListChanged, nil) // refused: the subscription ends
	select {
	case <-rt.done:
	case <-time.After(mcptest.Wait):
		t.Fatal("the subscription did not end")
	}
	last := rt.got[len(rt.got)-1]
	if len(rt.got) != 3 || last.Kind != mcp.KindResponse || last.Err == nil || !strings.Contains(string(last.Data), "stopped reading") {
		t.Fatalf("pushed %d messages, the last %s; want the acknowledgement, one notification and an error response", len(rt.got), last.Data)
	}
	wantListeners(t, e, 0)
}

// schemaTools has one tool whose input schema a test changes.
type schemaTools struct{ schema *string }

func (s schemaTools) ListTools(context.Context, *mcp.Request) ([]mcp.Tool, error) {
	return []mcp.Tool{{Name: "route", InputSchema: json.RawMessage(*s.schema)}}, nil
}

func (schemaTools) CallTool(context.Context, *mcp.Request, *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// TestParamHeadersFollowTheSchema: what ParamHeaders read of a tool's
// schema is kept only while the schema stays the same.
func TestParamHeadersFollowTheSchema(t *testing.T) {
	schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"}, Tools: schemaTools{&schema}}, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	for _, want := range []string{"Region", "Region", "Zone"} {
		schema = strings.Replace(schema, `"Region"`, `"`+want+`"`, 1)
		got, err := e.ParamHeaders(context.Background(), "route")
		if err != nil || len(got) != 1 || got[0] != (mcp.ParamHeader{Property: "region", Header: want}) {
			t.Fatalf("ParamHeaders = %v, %v; want region in %s", got, err, want)
		}
	}
	if got, err := e.ParamHeaders(context.Background(), "other"); err != nil || got != nil {
		t.Errorf("an unknown tool's headers = %v, %v", got, err)
	}
}
