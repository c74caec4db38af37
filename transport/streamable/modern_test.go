package streamable_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
)

const meta26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// body builds a 2026 request; params are members to add beside _meta.
func body(id int, method, params string) string {
	p := meta26
	if params != "" {
		p += "," + params
	}
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + p + `}}`
}

// TestModernPost is the 2026 shape of /mcp, one request at a time: no
// session, the mirrored headers checked against the body, and each error
// with the status the revision gives it.
func TestModernPost(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	std := func(method string, more ...string) []string {
		return append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}, more...)
	}
	tests := []struct {
		name       string
		body       string
		header     []string
		wantStatus int
		wantCode   int64 // JSON-RPC error code; 0: a result
	}{
		{"discover", body(1, "server/discover", ""), std("server/discover"), 200, 0},
		{"prompts/list", body(1, "prompts/list", ""), std("prompts/list"), 200, 0},
		{"prompts/get", body(1, "prompts/get", `"name":"Code_Review","arguments":{"code":"x"}`), std("prompts/get", "Mcp-Name", "Code_Review"), 200, 0},
		{"name in Base64", body(1, "prompts/get", `"name":"Code_Review","arguments":{"code":"x"}`), std("prompts/get", "Mcp-Name", "=?base64?Q29kZV9SZXZpZXc=?="), 200, 0},
		{"tools/call", body(1, "tools/call", `"name":"flowyprompt_list_templates","arguments":{}`), std("tools/call", "Mcp-Name", "flowyprompt_list_templates"), 200, 0},
		{"lower-case header names", body(1, "tools/list", ""), []string{"mcp-protocol-version", "2026-07-28", "mcp-method", "tools/list"}, 200, 0},
		{"unknown prompt", body(1, "prompts/get", `"name":"Nope"`), std("prompts/get", "Mcp-Name", "Nope"), 400, -32602},
		{"unknown resource", body(1, "resources/read", `"uri":"flowyprompt://templates/Nope"`), std("resources/read", "Mcp-Name", "flowyprompt://templates/Nope"), 400, -32602},
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, std("server/discover"), 400, -32602},
		{"no version header", body(1, "server/discover", ""), []string{"Mcp-Method", "server/discover"}, 400, -32020},
		{"version header differs", body(1, "server/discover", ""), []string{"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "server/discover"}, 400, -32020},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"MCP-Protocol-Version", "v999", "Mcp-Method", "server/discover"}, 400, -32022},
		{"no Mcp-Method", body(1, "tools/list", ""), []string{"MCP-Protocol-Version", "2026-07-28"}, 400, -32020},
		{"Mcp-Method of another method", body(1, "tools/list", ""), std("prompts/list"), 400, -32020},
		{"Mcp-Method in other case", body(1, "tools/list", ""), std("TOOLS/LIST"), 400, -32020},
		{"no Mcp-Name", body(1, "prompts/get", `"name":"Code_Review"`), std("prompts/get"), 400, -32020},
		{"Mcp-Name of another prompt", body(1, "prompts/get", `"name":"Code_Review"`), std("prompts/get", "Mcp-Name", "Other"), 400, -32020},
		{"Mcp-Name bad Base64", body(1, "prompts/get", `"name":"Code_Review"`), std("prompts/get", "Mcp-Name", "=?base64?Q29kZV9SZXZpZXc?="), 400, -32020},
		{"unknown method", body(1, "nope/nothing", ""), std("nope/nothing"), 404, -32601},
		{"ping was removed", body(1, "ping", ""), std("ping"), 404, -32601},
		{"resources/subscribe was removed", body(1, "resources/subscribe", `"uri":"x"`), std("resources/subscribe"), 404, -32601},
		{"initialize under a 2026 header", body(1, "initialize", ""), std("initialize"), 404, -32601},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, "", acceptBoth, tc.body, tc.header...)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			if r.header.Get("Mcp-Session-Id") != "" {
				t.Fatal("a 2026 request was handed a session")
			}
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code int64 `json:"code"`
					Data struct {
						Supported []string `json:"supported"`
					} `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body), &m); err != nil || m.ID != 1 {
				t.Fatalf("not one JSON-RPC response naming id 1: %s", r.body)
			}
			switch {
			case tc.wantCode == 0 && (m.Error != nil || !strings.Contains(string(m.Result), `"resultType":"complete"`)):
				t.Fatalf("want a complete result: %s", r.body)
			case tc.wantCode != 0 && (m.Error == nil || m.Error.Code != tc.wantCode):
				t.Fatalf("want error %d: %s", tc.wantCode, r.body)
			case tc.name == "unknown resource" && !strings.Contains(r.body, `"uri":"flowyprompt://templates/Nope"`):
				t.Fatalf("a missing resource's error does not name its uri in error.data: %s", r.body)
			case tc.wantCode == -32022 && (len(m.Error.Data.Supported) == 0 || m.Error.Data.Supported[0] != mcp.Version20260728):
				t.Fatalf("an unsupported version's error does not list the supported ones: %s", r.body)
			}
		})
	}
	if n := f.h.Sessions(); n != 0 {
		t.Fatalf("%d sessions after 2026 requests, want none", n)
	}

	// A notification needs no headers and gets 202.
	r := f.do(t, http.MethodPost, "", acceptBoth, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{`+meta26+`,"requestId":1}}`,
		"MCP-Protocol-Version", "2026-07-28")
	if r.status != http.StatusAccepted || r.body != "" {
		t.Fatalf("notification: %d %q", r.status, r.body)
	}
}

// TestModernStreams: a client that prefers streams gets its result as an
// event stream, its progress first, but an error as JSON with its status.
func TestModernStreams(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{PreferStreams: true})
	hdr := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "test/progress"}
	r := f.do(t, http.MethodPost, "", acceptBoth, body(1, "test/progress", `"_meta":null`), hdr...)
	if r.status != 400 {
		t.Fatalf("a _meta of null: %d %s", r.status, r.body)
	}
	r = f.do(t, http.MethodPost, "", acceptBoth,
		`{"jsonrpc":"2.0","id":2,"method":"test/progress","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p","io.modelcontextprotocol/logLevel":"warning"}}}`, hdr...)
	if ct := r.header.Get("Content-Type"); r.status != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%d %s: %s", r.status, ct, r.body)
	}
	order := []string{`"method":"notifications/progress"`, `"method":"notifications/message"`, `"id":2,"result"`}
	at := 0
	for _, want := range order {
		i := strings.Index(r.body[at:], want)
		if i < 0 {
			t.Fatalf("stream lacks %s after byte %d: %s", want, at, r.body)
		}
		at += i
	}
	if strings.Contains(r.body, "id: ") {
		t.Fatalf("a 2026 stream carries event ids (they are for resuming, which the revision removed): %s", r.body)
	}
	r = f.do(t, http.MethodPost, "", acceptBoth, body(3, "prompts/get", `"name":"Nope"`), "MCP-Protocol-Version", "2026-07-28",
		"Mcp-Method", "prompts/get", "Mcp-Name", "Nope")
	if r.status != 400 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("an error under PreferStreams: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}

// TestModernListen: subscriptions/listen over /mcp is a long POST whose
// event stream carries the acknowledgement and the change notifications,
// tagged with its id, until the client hangs up.
func TestModernListen(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.ts.URL+"/mcp",
		strings.NewReader(body(9, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptBoth)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("listen: %d %s", resp.StatusCode, ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		t.Helper()
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				return d
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return ""
	}
	if ack := next(); !strings.Contains(ack, `"method":"notifications/subscriptions/acknowledged"`) ||
		!strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":9`) || !strings.Contains(ack, `"toolsListChanged":true`) {
		t.Fatalf("first event = %s, want the tagged acknowledgement", ack)
	}
	transporttest.Settle(t, mcptest.Wait, "listener registered", func() bool { return f.e.Listeners() == 1 })
	f.e.Notify(mcp.NotificationPromptsListChanged, nil) // not asked for
	f.e.Notify(mcp.NotificationToolsListChanged, nil)
	if n := next(); !strings.Contains(n, `"method":"notifications/tools/list_changed"`) || !strings.Contains(n, `"io.modelcontextprotocol/subscriptionId":9`) {
		t.Fatalf("event = %s, want the tagged tools list_changed", n)
	}
	cancel()
	transporttest.Settle(t, mcptest.Wait, "listener gone after the client hung up", func() bool { return f.e.Listeners() == 0 })

	// A client that takes JSON only cannot listen.
	r := f.do(t, http.MethodPost, "", "application/json", body(1, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`),
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	if r.status == 200 && !strings.Contains(r.body, `"error"`) {
		t.Fatalf("listen answered as JSON: %d %s", r.status, r.body)
	}
}

// mirrorTools has one tool whose input schema mirrors three arguments in
// Mcp-Param-* headers.
type mirrorTools struct{}

func (mirrorTools) ListTools(context.Context, *mcp.Request) ([]mcp.Tool, error) {
	return []mcp.Tool{{Name: "route", Description: "mirrors its arguments", InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"region":{"type":"string","x-mcp-header":"Region"},"level":{"type":"integer","x-mcp-header":"Level"},` +
		`"flag":{"type":"boolean","x-mcp-header":"Flag"},"note":{"type":"string"}}}`)}}, nil
}

func (mirrorTools) CallTool(_ context.Context, _ *mcp.Request, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(p.Arguments))}}, nil
}

// TestModernParamHeaders: an argument a tool's schema marks with
// x-mcp-header must be mirrored, when present, in Mcp-Param-<name>, and
// match: strings as they are or in Base64, numbers numerically, booleans
// as true or false.
func TestModernParamHeaders(t *testing.T) {
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"}, Tools: mirrorTools{}},
		mcp.EngineOptions{Logger: transporttest.Quiet})
	ts := httptest.NewServer(streamable.New(e, streamable.Options{}))
	t.Cleanup(func() { ts.Close(); _ = e.Shutdown(context.Background()) })
	tests := []struct {
		name   string
		args   string
		header []string
		want   int
	}{
		{"all mirrored", `{"region":"us-west1","level":42,"flag":true}`, []string{"Mcp-Param-Region", "us-west1", "Mcp-Param-Level", "42", "Mcp-Param-Flag", "true"}, 200},
		{"a number written otherwise", `{"level":42}`, []string{"Mcp-Param-Level", "42.0"}, 200},
		{"in Base64", `{"region":"Hello, 世界"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="}, 200},
		{"absent from the arguments, absent from the headers", `{"note":"x"}`, nil, 200},
		{"null is absent", `{"region":null}`, nil, 200},
		{"not wrapped is literal", `{"region":"SGVsbG8="}`, []string{"Mcp-Param-Region", "SGVsbG8="}, 200},
		{"missing", `{"region":"us-west1"}`, nil, 400},
		{"different", `{"region":"us-west1"}`, []string{"Mcp-Param-Region", "eu-west1"}, 400},
		{"another number", `{"level":42}`, []string{"Mcp-Param-Level", "43"}, 400},
		{"a boolean in other case", `{"flag":true}`, []string{"Mcp-Param-Flag", "True"}, 400},
		{"Base64 without padding", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8?="}, 400},
		{"Base64 with bad characters", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVs!!!bG8=?="}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body(1, "tools/call", `"name":"route","arguments":`+tc.args)))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"Content-Type": "application/json", "Accept": acceptBoth,
				"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "route"} {
				req.Header.Set(k, v)
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == 400 && !strings.Contains(string(b), `"code":-32020`) {
				t.Fatalf("want a -32020 HeaderMismatch: %s", b)
			}
		})
	}
}

// TestModernListenCap: a listen stream holds a place under the caps for as
// long as its POST lasts: a client at its cap gets 429 and a JSON-RPC error
// naming the limit, with the request's id; once the stream ends, its place
// is free again.
func TestModernListenCap(t *testing.T) {
	gate := httpx.NewGate(httpx.Limits{Max: 10, PerClient: 1})
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{Settings: httpx.Settings{Gate: gate}})
	listen := func(ctx context.Context, id int) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.ts.URL+"/mcp",
			strings.NewReader(body(id, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := f.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := listen(ctx, 1)
	defer first.Body.Close()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first listen: %d", first.StatusCode)
	}
	if got := gate.Counts(); got.Listens != 1 || got.Total != 1 {
		t.Fatalf("counts with one stream open: %+v", got)
	}
	second := listen(context.Background(), 2)
	b, _ := io.ReadAll(second.Body)
	second.Body.Close()
	var answer struct {
		ID    int `json:"id"`
		Error struct {
			Data mcp.ErrorData `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatalf("second listen: %d %q: %v", second.StatusCode, b, err)
	}
	if second.StatusCode != http.StatusTooManyRequests || answer.ID != 2 || answer.Error.Data.Code != mcp.CodeClientLimit ||
		answer.Error.Data.Details["limit"] != "max-sessions-per-client" {
		t.Fatalf("second listen: %d %s, want 429 %s naming max-sessions-per-client, with id 2", second.StatusCode, b, mcp.CodeClientLimit)
	}
	cancel()
	transporttest.Settle(t, mcptest.Wait, "the first stream's place given back", func() bool { return gate.Counts() == httpx.Counts{} })
	third := listen(context.Background(), 3)
	third.Body.Close()
	if third.StatusCode != http.StatusOK {
		t.Fatalf("listen once the first ended: %d", third.StatusCode)
	}
}
