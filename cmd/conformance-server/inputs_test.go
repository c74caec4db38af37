package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// defaultCaps are the client capabilities the suite's modern requests
// declare unless a scenario says otherwise.
var defaultCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{"listChanged": true}}

// modernClient is an in-memory client that sends requests of revision
// 2026-07-28: no initialize, their context in params._meta.
type modernClient struct {
	*mcptest.Client
	n int
}

func connectModern(t *testing.T) (*modernClient, *fixtures) {
	t.Helper()
	fx := newFixtures()
	e := newEngine(fx, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return &modernClient{Client: mcptest.Connect(t, e)}, fx
}

// modernParams returns params with the _meta of a modern request declaring
// caps, and the extra _meta members.
func modernParams(params map[string]any, caps any, meta map[string]any) map[string]any {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	m := map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: caps,
		mcp.MetaClientInfo: map[string]any{"name": "go-test", "version": "1"}}
	for k, v := range meta {
		m[k] = v
	}
	p["_meta"] = m
	return p
}

// request sends a modern request and returns its response.
func (c *modernClient) request(t *testing.T, method string, params map[string]any, caps any) mcptest.Message {
	t.Helper()
	c.n++
	return c.Request(t, c.n, method, modernParams(params, caps, nil))
}

// modernResult is the part of a modern result these tests read.
type modernResult struct {
	ResultType    string                      `json:"resultType"`
	InputRequests map[string]mcp.InputRequest `json:"inputRequests"`
	RequestState  string                      `json:"requestState"`
	Content       []mcp.Content               `json:"content"`
	IsError       bool                        `json:"isError"`
	Messages      []mcp.PromptMessage         `json:"messages"`
}

func decodeModern(t *testing.T, m mcptest.Message) modernResult {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("unexpected error %s", m.Raw)
	}
	var r modernResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("%s: %v", m.Raw, err)
	}
	return r
}

// asks checks that m asks for input with exactly these keys and methods,
// and returns the result.
func asks(t *testing.T, m mcptest.Message, want map[string]string) modernResult {
	t.Helper()
	r := decodeModern(t, m)
	if r.ResultType != "input_required" {
		t.Fatalf("got %s, want an input_required result", m.Raw)
	}
	got := map[string]string{}
	for k, q := range r.InputRequests {
		got[k] = q.Method
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("input requests of %s (-want +got):\n%s", m.Raw, diff)
	}
	return r
}

// completes checks that m is a complete tool result whose text is want.
func completes(t *testing.T, m mcptest.Message, want string) {
	t.Helper()
	r := decodeModern(t, m)
	if r.ResultType != "complete" || len(r.Content) != 1 || r.Content[0].Text != want || r.IsError {
		t.Fatalf("got %s, want a complete result with text %q", m.Raw, want)
	}
}

// refused checks that m is a JSON-RPC error with code.
func refused(t *testing.T, m mcptest.Message, code int64) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code {
		t.Fatalf("got %s, want error %d", m.Raw, code)
	}
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

var sampled = map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Hello there!"},
	"model": "test-model", "stopReason": "endTurn"}

var roots = map[string]any{"roots": []any{map[string]any{"uri": "file:///test/root", "name": "Test Root"}}}

func call(name string, retry map[string]any) map[string]any {
	p := map[string]any{"name": name, "arguments": map[string]any{}}
	for k, v := range retry {
		p[k] = v
	}
	return p
}

func TestElicitationInputRequired(t *testing.T) {
	const tool = "test_input_required_result_elicitation"
	c, _ := connectModern(t)
	first := asks(t, c.request(t, "tools/call", call(tool, nil), defaultCaps), map[string]string{"user_name": mcp.MethodElicitationCreate})
	if first.RequestState != "" {
		t.Errorf("requestState %q: the answer under user_name is all this tool needs", first.RequestState)
	}
	wantQ := `{"method":"elicitation/create","params":{"message":"What is your name?",` +
		`"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
	gotQ, _ := json.Marshal(first.InputRequests["user_name"])
	if diff := cmp.Diff(asJSON(t, []byte(wantQ)), asJSON(t, gotQ)); diff != "" {
		t.Errorf("question (-want +got):\n%s", diff)
	}
	tests := []struct {
		name    string
		answers any
		want    string // "" asks again
	}{
		{"answered", map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}, "Hello, Alice!"},
		{"extra keys ignored", map[string]any{"user_name": accept(map[string]any{"name": "Alice"}),
			"unknown_extra_key": accept(map[string]any{"foo": "bar"})}, "Hello, Alice!"},
		{"declined", map[string]any{"user_name": map[string]any{"action": "decline"}}, "No name given: the user chose to decline"},
		{"wrong key", map[string]any{"wrong_key": accept(map[string]any{"data": "wrong"})}, ""},
		{"not an elicitation answer", map[string]any{"user_name": 12345}, ""},
		{"no name in it", map[string]any{"user_name": accept(map[string]any{"nom": "Alice"})}, ""},
		{"null", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := c.request(t, "tools/call", call(tool, map[string]any{"inputResponses": tc.answers}), defaultCaps)
			if tc.want == "" {
				asks(t, m, map[string]string{"user_name": mcp.MethodElicitationCreate})
				return
			}
			completes(t, m, tc.want)
		})
	}
}

func TestSingleInputTools(t *testing.T) {
	tests := []struct {
		tool, key, method string
		answer            any
		want              string
	}{
		{"test_input_required_result_sampling", "capital_question", mcp.MethodSamplingCreateMessage, sampled, "Sampling response: Hello there!"},
		{"test_input_required_result_list_roots", "client_roots", methodRootsList, roots, "Client exposed 1 root(s): file:///test/root"},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			c, _ := connectModern(t)
			asks(t, c.request(t, "tools/call", call(tc.tool, nil), defaultCaps), map[string]string{tc.key: tc.method})
			asks(t, c.request(t, "tools/call", call(tc.tool, map[string]any{"inputResponses": map[string]any{tc.key: "nonsense"}}), defaultCaps),
				map[string]string{tc.key: tc.method})
			completes(t, c.request(t, "tools/call", call(tc.tool, map[string]any{"inputResponses": map[string]any{tc.key: tc.answer}}), defaultCaps), tc.want)
		})
	}
}

func TestRequestStateIsSealed(t *testing.T) {
	for _, tool := range []string{"test_input_required_result_request_state", "test_input_required_result_tampered_state"} {
		t.Run(tool, func(t *testing.T) {
			c, _ := connectModern(t)
			first := asks(t, c.request(t, "tools/call", call(tool, nil), defaultCaps), map[string]string{"confirm": mcp.MethodElicitationCreate})
			if first.RequestState == "" {
				t.Fatal("no requestState")
			}
			ok := map[string]any{"confirm": accept(map[string]any{"ok": true})}
			completes(t, c.request(t, "tools/call", call(tool, map[string]any{"inputResponses": ok, "requestState": first.RequestState}), defaultCaps),
				"state-ok: requestState received and confirmation accepted")
			// Without its state the retry is asked again, with one.
			again := asks(t, c.request(t, "tools/call", call(tool, map[string]any{"inputResponses": ok}), defaultCaps),
				map[string]string{"confirm": mcp.MethodElicitationCreate})
			if again.RequestState == "" {
				t.Error("asked again without a requestState")
			}
			other := asks(t, c.request(t, "tools/call", call("test_input_required_result_multi_round", nil), defaultCaps),
				map[string]string{"step1": mcp.MethodElicitationCreate})
			for name, state := range map[string]string{
				"tampered":           first.RequestState + "-TAMPERED",
				"payload changed":    "e30" + first.RequestState[strings.Index(first.RequestState, "."):],
				"another tool's":     other.RequestState,
				"not a state at all": "request_state",
			} {
				t.Run(name, func(t *testing.T) {
					refused(t, c.request(t, "tools/call", call(tool, map[string]any{"inputResponses": ok, "requestState": state}), defaultCaps), -32602)
				})
			}
		})
	}
}

func TestMultipleInputs(t *testing.T) {
	const tool = "test_input_required_result_multiple_inputs"
	c, _ := connectModern(t)
	all := map[string]string{"user_name": mcp.MethodElicitationCreate, "greeting": mcp.MethodSamplingCreateMessage, "client_roots": methodRootsList}
	first := asks(t, c.request(t, "tools/call", call(tool, nil), defaultCaps), all)
	if first.RequestState == "" {
		t.Fatal("no requestState")
	}
	// Part of the answers: the rest is asked again, what was got travels
	// in the new state.
	partial := asks(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": first.RequestState,
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Alice"}), "greeting": sampled}}), defaultCaps),
		map[string]string{"client_roots": methodRootsList})
	completes(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": partial.RequestState,
		"inputResponses": map[string]any{"client_roots": roots}}), defaultCaps), "Hello there! Alice — 1 root(s) visible")
	completes(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": first.RequestState,
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Bob"}), "greeting": sampled, "client_roots": roots}}), defaultCaps),
		"Hello there! Bob — 1 root(s) visible")
}

func TestMultiRound(t *testing.T) {
	const tool = "test_input_required_result_multi_round"
	c, _ := connectModern(t)
	r1 := asks(t, c.request(t, "tools/call", call(tool, nil), defaultCaps), map[string]string{"step1": mcp.MethodElicitationCreate})
	r2 := asks(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": r1.RequestState,
		"inputResponses": map[string]any{"step1": accept(map[string]any{"name": "Alice"})}}), defaultCaps),
		map[string]string{"step2": mcp.MethodElicitationCreate})
	if r2.RequestState == "" || r2.RequestState == r1.RequestState {
		t.Fatalf("round 2 state %q, want a new one (round 1: %q)", r2.RequestState, r1.RequestState)
	}
	// A round-2 retry without its answer is asked again.
	asks(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": r2.RequestState}), defaultCaps),
		map[string]string{"step2": mcp.MethodElicitationCreate})
	completes(t, c.request(t, "tools/call", call(tool, map[string]any{"requestState": r2.RequestState,
		"inputResponses": map[string]any{"step2": accept(map[string]any{"color": "blue"})}}), defaultCaps),
		"Multi-round complete: Alice likes blue")
}

func TestCapabilityAwareInputs(t *testing.T) {
	const tool = "test_input_required_result_capabilities"
	tests := []struct {
		name string
		caps any
		want map[string]string // nil: completes at once
	}{
		{"sampling only", map[string]any{"sampling": map[string]any{}}, map[string]string{"greeting": mcp.MethodSamplingCreateMessage}},
		{"all three", defaultCaps, map[string]string{"user_name": mcp.MethodElicitationCreate,
			"greeting": mcp.MethodSamplingCreateMessage, "client_roots": methodRootsList}},
		{"none", map[string]any{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := connectModern(t)
			m := c.request(t, "tools/call", call(tool, nil), tc.caps)
			if tc.want == nil {
				completes(t, m, "No declared client capability supports an in-band input request")
				return
			}
			asks(t, m, tc.want)
		})
	}
	c, _ := connectModern(t)
	completes(t, c.request(t, "tools/call", call(tool, map[string]any{"inputResponses": map[string]any{"greeting": sampled}}),
		map[string]any{"sampling": map[string]any{}}), "Capability-aware input requests fulfilled: greeting")
}

func TestInputRequiredPrompt(t *testing.T) {
	const prompt = "test_input_required_result_prompt"
	c, _ := connectModern(t)
	asks(t, c.request(t, "prompts/get", map[string]any{"name": prompt}, defaultCaps), map[string]string{"user_context": mcp.MethodElicitationCreate})
	r := decodeModern(t, c.request(t, "prompts/get", map[string]any{"name": prompt,
		"inputResponses": map[string]any{"user_context": accept(map[string]any{"context": "test context"})}}, defaultCaps))
	want := []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Context: test context")}}
	if r.ResultType != "complete" || !cmp.Equal(want, r.Messages) {
		t.Errorf("got %+v, want a complete prompt with %+v", r, want)
	}
}

// TestListsNeverAskForInput: input_required belongs to tools/call,
// prompts/get and resources/read.
func TestListsNeverAskForInput(t *testing.T) {
	c, _ := connectModern(t)
	for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		if r := decodeModern(t, c.request(t, method, nil, defaultCaps)); r.ResultType != "complete" {
			t.Errorf("%s: resultType %q", method, r.ResultType)
		}
	}
}

// TestLegacyClientsAreAsked: a 2025 client, which has a session, is asked
// the same questions as server→client requests, and gets one answer.
func TestLegacyClientsAreAsked(t *testing.T) {
	type exchange struct {
		method string
		answer string
	}
	name := `{"action":"accept","content":{"name":"Alice"}}`
	sample := `{"role":"assistant","content":{"type":"text","text":"Hi"},"model":"m"}`
	rootsAnswer := `{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}`
	tests := []struct {
		name, method, target string
		exchanges            []exchange
		want                 string
	}{
		{"elicitation", "tools/call", "test_input_required_result_elicitation",
			[]exchange{{mcp.MethodElicitationCreate, name}}, `{"content":[{"type":"text","text":"Hello, Alice!"}]}`},
		{"an unusable answer is asked again", "tools/call", "test_input_required_result_elicitation",
			[]exchange{{mcp.MethodElicitationCreate, `{"action":"accept","content":{}}`}, {mcp.MethodElicitationCreate, name}},
			`{"content":[{"type":"text","text":"Hello, Alice!"}]}`},
		{"multi-round", "tools/call", "test_input_required_result_multi_round",
			[]exchange{{mcp.MethodElicitationCreate, name}, {mcp.MethodElicitationCreate, `{"action":"accept","content":{"color":"red"}}`}},
			`{"content":[{"type":"text","text":"Multi-round complete: Alice likes red"}]}`},
		{"request state", "tools/call", "test_input_required_result_request_state",
			[]exchange{{mcp.MethodElicitationCreate, `{"action":"accept","content":{"ok":true}}`}},
			`{"content":[{"type":"text","text":"state-ok: requestState received and confirmation accepted"}]}`},
		{"three kinds, in key order", "tools/call", "test_input_required_result_multiple_inputs",
			[]exchange{{methodRootsList, rootsAnswer}, {mcp.MethodSamplingCreateMessage, sample}, {mcp.MethodElicitationCreate, name}},
			`{"content":[{"type":"text","text":"Hi Alice — 2 root(s) visible"}]}`},
		{"prompt", "prompts/get", "test_input_required_result_prompt",
			[]exchange{{mcp.MethodElicitationCreate, `{"action":"accept","content":{"context":"c"}}`}},
			`{"description":"A prompt with elicited context","messages":[{"role":"user","content":{"type":"text","text":"Context: c"}}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := connect(t, defaultCaps)
			c.Send(`{"jsonrpc":"2.0","id":"q","method":"` + tc.method + `","params":{"name":"` + tc.target + `"}}`)
			for _, x := range tc.exchanges {
				id, _ := serverRequest(t, c, x.method)
				c.Send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + x.answer + `}`)
			}
			if diff := cmp.Diff(asJSON(t, []byte(tc.want)), result(t, c.Response(t, json.RawMessage(`"q"`)))); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyClientWithoutCapability(t *testing.T) {
	c, _, _ := connect(t, map[string]any{"sampling": map[string]any{}})
	got := result(t, c.Request(t, 1, "tools/call", map[string]any{"name": "test_input_required_result_elicitation"}))
	want := `{"content":[{"type":"text","text":"the client does not support elicitation/create: it declared no elicitation capability at initialize"}],"isError":true}`
	if diff := cmp.Diff(asJSON(t, []byte(want)), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	m := c.Request(t, 2, "prompts/get", map[string]any{"name": "test_input_required_result_prompt"})
	if m.Error == nil || m.Error.Code != -32600 || m.Error.Data.Code != mcp.CodeInvalidRequest {
		t.Errorf("prompt without elicitation: got %s, want a -32600 %s error", m.Raw, mcp.CodeInvalidRequest)
	}
}

func TestMissingCapability(t *testing.T) {
	c, _ := connectModern(t)
	m := c.request(t, "tools/call", call("test_missing_capability", nil), map[string]any{})
	refused(t, m, -32021)
	var env struct {
		Error struct {
			Data struct {
				RequiredCapabilities map[string]any `json:"requiredCapabilities"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Raw, &env); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"sampling": map[string]any{}}; !cmp.Equal(want, env.Error.Data.RequiredCapabilities) {
		t.Errorf("error.data.requiredCapabilities = %v, want %v", env.Error.Data.RequiredCapabilities, want)
	}
	completes(t, c.request(t, "tools/call", call("test_missing_capability", nil), map[string]any{"sampling": map[string]any{}}),
		"the client declared sampling")
}

func TestLoggingToolHonoursLogLevel(t *testing.T) {
	for _, level := range []string{"", "info", "error"} {
		t.Run("level "+level, func(t *testing.T) {
			c, _ := connectModern(t)
			var meta map[string]any
			if level != "" {
				meta = map[string]any{mcp.MetaLogLevel: level}
			}
			c.Send(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": "log", "method": "tools/call",
				"params": modernParams(call("test_logging_tool", nil), map[string]any{}, meta)}))
			completes(t, c.Response(t, json.RawMessage(`"log"`)), "test_logging_tool executed")
			var logs []string
			for _, m := range c.All() {
				logs = append(logs, string(m.Params))
			}
			var want []string
			if level == "info" {
				want = []string{`{"level":"info","logger":"conformance-server","data":"test_logging_tool executed"}`}
			}
			if diff := cmp.Diff(want, logs); diff != "" {
				t.Errorf("messages before the result (-want +got):\n%s", diff)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTriggersChangeLists: the trigger tools change the tool and prompt
// lists, and subscriptions that asked for it are told, tagged with their
// id; others are not.
func TestTriggersChangeLists(t *testing.T) {
	c, _ := connectModern(t)
	c.Send(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
		"params": modernParams(map[string]any{"notifications": map[string]any{"promptsListChanged": true}}, map[string]any{}, nil)}))
	c.Notification(t, mcp.NotificationSubscriptionsAcknowledged)
	completes(t, c.request(t, "tools/call", call("test_trigger_tool_change", nil), map[string]any{}), "tools_list_changed published (change 1)")
	completes(t, c.request(t, "tools/call", call("test_trigger_prompt_change", nil), map[string]any{}), "prompts_list_changed published (change 1)")
	n := c.Notification(t, mcp.NotificationPromptsListChanged)
	if want := `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"}}`; string(n.Params) != want {
		t.Errorf("prompts/list_changed params %s, want %s", n.Params, want)
	}
	for _, m := range c.All() {
		if m.Method == mcp.NotificationToolsListChanged {
			t.Errorf("a prompts-only subscription got %s", m.Raw)
		}
	}
	var tools mcp.ListToolsResult
	if err := json.Unmarshal(c.request(t, "tools/list", nil, map[string]any{}).Result, &tools); err != nil {
		t.Fatal(err)
	}
	if last := tools.Tools[len(tools.Tools)-1]; last.Name != transientTool || !strings.Contains(last.Description, "change 1") {
		t.Errorf("last tool %+v, want the transient one at change 1", last)
	}
	completes(t, c.request(t, "tools/call", call(transientTool, nil), map[string]any{}), "The transient tool does nothing")
	var prompts mcp.ListPromptsResult
	if err := json.Unmarshal(c.request(t, "prompts/list", nil, map[string]any{}).Result, &prompts); err != nil {
		t.Fatal(err)
	}
	if last := prompts.Prompts[len(prompts.Prompts)-1]; last.Name != transientPrompt {
		t.Errorf("last prompt %+v, want the transient one", last)
	}
}

// TestTriggerReachesLegacySessions: a 2025 session hears of the change
// too.
func TestTriggerReachesLegacySessions(t *testing.T) {
	c, _, _ := connect(t, nil)
	result(t, c.Request(t, 1, "tools/call", map[string]any{"name": "test_trigger_tool_change"}))
	c.Notification(t, mcp.NotificationToolsListChanged)
}
