package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// connect starts an engine over fresh fixtures and an initialized
// in-memory client declaring caps.
func connect(t *testing.T, caps map[string]any) (*mcptest.Client, *mcp.Engine, *fixtures) {
	t.Helper()
	// The scenarios' ~50 ms pacing adds nothing to these tests.
	oldStep, oldReconnect := stepDelay, reconnectDelay
	stepDelay, reconnectDelay = time.Millisecond, time.Millisecond
	t.Cleanup(func() { stepDelay, reconnectDelay = oldStep, oldReconnect })
	fx := newFixtures()
	e := newEngine(fx, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	c := mcptest.Connect(t, e)
	c.InitializeWith(t, mcp.LatestVersion, caps)
	return c, e, fx
}

// asJSON decodes raw into a generic value so comparisons ignore key order
// and spacing.
func asJSON(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	return v
}

func result(t *testing.T, m mcptest.Message) any {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("unexpected error %+v", m.Error)
	}
	return asJSON(t, m.Result)
}

// TestListings pins everything the server advertises, which is what the
// suite's list scenarios and fixture lookups read.
func TestListings(t *testing.T) {
	c, _, _ := connect(t, nil)
	got := map[string]any{}
	for i, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		got[method] = result(t, c.Request(t, i+1, method, nil))
	}
	golden.JSON(t, filepath.Join("testdata", "listings.golden.json"), got)
}

// TestListingsMeetSuiteRules checks the rules the suite applies to every
// entry, independently of the golden file.
func TestListingsMeetSuiteRules(t *testing.T) {
	c, _, _ := connect(t, nil)
	var tools mcp.ListToolsResult
	if err := json.Unmarshal(c.Request(t, 1, "tools/list", nil).Result, &tools); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("tool %s input schema %s is not an object schema (%v)", tool.Name, tool.InputSchema, err)
		}
	}
	for _, want := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
		"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
		"json_schema_2020_12_tool", "test_reconnection", "test_x_mcp_header",
		"test_missing_capability", "test_streaming_elicitation", "test_logging_tool", "test_trigger_tool_change", "test_trigger_prompt_change",
		"test_input_required_result_elicitation", "test_input_required_result_sampling", "test_input_required_result_list_roots",
		"test_input_required_result_request_state", "test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
		"test_input_required_result_tampered_state", "test_input_required_result_capabilities"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	// http-header-validation calls the first tool with no arguments and
	// wants it to succeed.
	first := c.Request(t, 3, "tools/call", map[string]any{"name": tools.Tools[0].Name, "arguments": map[string]any{}})
	if first.Error != nil || strings.Contains(string(first.Result), `"isError":true`) {
		t.Errorf("the first tool, %s, fails with no arguments: %s", tools.Tools[0].Name, first.Raw)
	}
	var prompts mcp.ListPromptsResult
	if err := json.Unmarshal(c.Request(t, 2, "prompts/list", nil).Result, &prompts); err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts.Prompts {
		if p.Description == "" || p.Arguments == nil {
			t.Errorf("prompt %s: description %q, arguments %v: want both present", p.Name, p.Description, p.Arguments)
		}
	}
}

func TestSimpleToolResults(t *testing.T) {
	tests := []struct {
		tool string
		args any
		want string
	}{
		{"test_simple_text", nil, `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`},
		{"test_image_content", map[string]any{}, `{"content":[{"type":"image","data":"` + testImagePNG + `","mimeType":"image/png"}]}`},
		{"test_audio_content", map[string]any{}, `{"content":[{"type":"audio","data":"` + testAudioWAV + `","mimeType":"audio/wav"}]}`},
		{"test_embedded_resource", map[string]any{}, `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource",` +
			`"mimeType":"text/plain","text":"This is an embedded resource content."}}]}`},
		{"test_multiple_content_types", map[string]any{}, `{"content":[{"type":"text","text":"Multiple content types test:"},` +
			`{"type":"image","data":"` + testImagePNG + `","mimeType":"image/png"},` +
			`{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}]}`},
		{"test_error_handling", map[string]any{}, `{"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}],"isError":true}`},
		{"json_schema_2020_12_tool", map[string]any{"name": "n", "address": map[string]any{"city": "c"}},
			`{"content":[{"type":"text","text":"JSON Schema 2020-12 tool called with: {\"address\":{\"city\":\"c\"},\"name\":\"n\"}"}]}`},
		{"test_reconnection", map[string]any{}, `{"content":[{"type":"text","text":"Reconnection test completed successfully. ` +
			`If you received this, the client properly reconnected after stream closure."}]}`},
		{"test_sampling", map[string]any{}, `{"content":[{"type":"text","text":"invalid arguments: prompt is required"}],"isError":true}`},
		{"test_x_mcp_header", map[string]any{"region": "eu-west", "level": 3}, `{"content":[{"type":"text","text":"region=eu-west"}]}`},
		{"test_x_mcp_header", map[string]any{}, `{"content":[{"type":"text","text":"region="}]}`},
		{"test_streaming_elicitation", map[string]any{}, `{"content":[{"type":"text","text":"stream observed: result frames only, no top-level requests"}]}`},
		{"test_elicitation", map[string]any{"message": 3}, `{"content":[{"type":"text","text":"invalid arguments: json: cannot unmarshal ` +
			`number into Go struct field .message of type string"}],"isError":true}`},
	}
	c, _, _ := connect(t, nil)
	for i, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			params := map[string]any{"name": tc.tool}
			if tc.args != nil {
				params["arguments"] = tc.args
			}
			got := result(t, c.Request(t, i+1, "tools/call", params))
			if diff := cmp.Diff(asJSON(t, []byte(tc.want)), got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	c, _, _ := connect(t, nil)
	m := c.Request(t, 1, "tools/call", map[string]any{"name": "nope"})
	if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != "TOOL_NOT_FOUND" {
		t.Fatalf("got %s, want a -32602 TOOL_NOT_FOUND error", m.Raw)
	}
}

// methods lists the methods of every message after the initialize
// exchange, in the order they were sent, with responses as "response".
func methods(c *mcptest.Client) []string {
	var out []string
	for _, m := range c.All() {
		if m.Method == "" {
			out = append(out, "response")
		} else {
			out = append(out, m.Method)
		}
	}
	return out
}

func TestToolWithLogging(t *testing.T) {
	tests := []struct {
		name  string
		level string // "" leaves the session at its default (warning)
		want  []string
	}{
		{"debug level sees the three info logs, then the result", "debug",
			[]string{"log: Tool execution started", "log: Tool processing data", "log: Tool execution completed", "response"}},
		{"default level filters them", "", []string{"response"}},
		{"error level filters them", "error", []string{"response"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := connect(t, nil)
			if tc.level != "" {
				result(t, c.Request(t, "lvl", "logging/setLevel", map[string]any{"level": tc.level}))
			}
			c.Send(`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`)
			// Messages arrive in the order the server sent them.
			var got []string
			for len(got) == 0 || got[len(got)-1] != "response" {
				m := c.Next(t)
				switch m.Method {
				case "":
					if diff := cmp.Diff(asJSON(t, []byte(`{"content":[{"type":"text","text":"Tool with logging executed successfully"}]}`)),
						result(t, m)); diff != "" {
						t.Errorf("result (-want +got):\n%s", diff)
					}
					got = append(got, "response")
				case mcp.NotificationMessage:
					var p mcp.LoggingMessageParams
					if err := json.Unmarshal(m.Params, &p); err != nil {
						t.Fatal(err)
					}
					if p.Level != "info" || p.Logger != loggerName {
						t.Errorf("log %s: want level info from %s", m.Params, loggerName)
					}
					got = append(got, "log: "+p.Data.(string))
				default:
					t.Fatalf("unexpected message %s", m.Raw)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolWithProgress(t *testing.T) {
	tests := []struct {
		name  string
		token any
		want  []mcp.ProgressParams
	}{
		{"string token", "progress-test-1", []mcp.ProgressParams{
			{ProgressToken: json.RawMessage(`"progress-test-1"`), Progress: 0, Total: 100, Message: "Completed step 0 of 100"},
			{ProgressToken: json.RawMessage(`"progress-test-1"`), Progress: 50, Total: 100, Message: "Completed step 50 of 100"},
			{ProgressToken: json.RawMessage(`"progress-test-1"`), Progress: 100, Total: 100, Message: "Completed step 100 of 100"},
		}},
		{"integer token", 7, []mcp.ProgressParams{
			{ProgressToken: json.RawMessage(`7`), Progress: 0, Total: 100, Message: "Completed step 0 of 100"},
			{ProgressToken: json.RawMessage(`7`), Progress: 50, Total: 100, Message: "Completed step 50 of 100"},
			{ProgressToken: json.RawMessage(`7`), Progress: 100, Total: 100, Message: "Completed step 100 of 100"},
		}},
		{"no token, no progress", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := connect(t, nil)
			params := map[string]any{"name": "test_tool_with_progress", "arguments": map[string]any{}}
			if tc.token != nil {
				params["_meta"] = map[string]any{"progressToken": tc.token}
			}
			raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
			if err != nil {
				t.Fatal(err)
			}
			c.Send(string(raw))
			// Progress counts only when it arrives before the result: a
			// client forgets the token once the request is answered.
			var got []mcp.ProgressParams
			var res mcptest.Message
			for res.Raw == nil {
				m := c.Next(t)
				switch m.Method {
				case "":
					res = m
				case mcp.NotificationProgress:
					var p mcp.ProgressParams
					if err := json.Unmarshal(m.Params, &p); err != nil {
						t.Fatal(err)
					}
					got = append(got, p)
				default:
					t.Fatalf("unexpected message %s", m.Raw)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			wantToken := "none"
			if tc.token != nil {
				b, _ := json.Marshal(tc.token)
				wantToken = string(b)
			}
			want := `{"content":[{"type":"text","text":"Progress test completed (progress token ` + strings.ReplaceAll(wantToken, `"`, `\"`) + `)"}]}`
			if diff := cmp.Diff(asJSON(t, []byte(want)), result(t, res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// serverRequest waits for the server→client request the fixture sends,
// checks its method and returns its id and params.
func serverRequest(t *testing.T, c *mcptest.Client, method string) (json.RawMessage, any) {
	t.Helper()
	m := c.Next(t)
	if m.Method != method || m.ID == nil {
		t.Fatalf("got %s, want a %s request", m.Raw, method)
	}
	return m.ID, asJSON(t, m.Params)
}

func TestSampling(t *testing.T) {
	c, _, _ := connect(t, map[string]any{"sampling": map[string]any{}})
	c.Send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"Test prompt for sampling"}}}`)
	id, params := serverRequest(t, c, mcp.MethodSamplingCreateMessage)
	want := `{"messages":[{"role":"user","content":{"type":"text","text":"Test prompt for sampling"}}],"maxTokens":100}`
	if diff := cmp.Diff(asJSON(t, []byte(want)), params); diff != "" {
		t.Errorf("sampling request (-want +got):\n%s", diff)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","content":{"type":"text",` +
		`"text":"This is a test response from the client"},"model":"test-model","stopReason":"endTurn"}}`)
	got := result(t, c.Response(t, json.RawMessage(`"s"`)))
	wantRes := `{"content":[{"type":"text","text":"LLM response: This is a test response from the client"}]}`
	if diff := cmp.Diff(asJSON(t, []byte(wantRes)), got); diff != "" {
		t.Errorf("tool result (-want +got):\n%s", diff)
	}
}

func TestSamplingFailures(t *testing.T) {
	t.Run("client without the capability", func(t *testing.T) {
		c, _, _ := connect(t, nil)
		got := result(t, c.Request(t, 1, "tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "p"}}))
		want := `{"content":[{"type":"text","text":"the client does not support sampling: it declared no sampling capability at initialize"}],"isError":true}`
		if diff := cmp.Diff(asJSON(t, []byte(want)), got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if n := c.Len(); n != 0 {
			t.Errorf("the server sent %d more messages, want none: %v", n, methods(c))
		}
	})
	t.Run("client answers with an error", func(t *testing.T) {
		c, _, _ := connect(t, map[string]any{"sampling": map[string]any{}})
		c.Send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"p"}}}`)
		id, _ := serverRequest(t, c, mcp.MethodSamplingCreateMessage)
		c.Send(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-1,"message":"user rejected sampling"}}`)
		got := result(t, c.Response(t, json.RawMessage(`"s"`)))
		want := `{"content":[{"type":"text","text":"sampling failed: jsonrpc2: code -1 message: user rejected sampling"}],"isError":true}`
		if diff := cmp.Diff(asJSON(t, []byte(want)), got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestElicitationTools(t *testing.T) {
	tests := []struct {
		tool       string
		args       string
		message    string
		schema     json.RawMessage
		answer     string
		wantResult string
	}{
		{"test_elicitation", `{"message":"Please provide your information"}`, "Please provide your information", userSchema,
			`{"action":"accept","content":{"username":"testuser","email":"test@example.com"}}`,
			`User response: action=accept, content={"username":"testuser","email":"test@example.com"}`},
		{"test_elicitation", `{"message":"m"}`, "m", userSchema, `{"action":"decline"}`,
			`User response: action=decline, content={}`},
		{"test_elicitation_sep1034_defaults", `{}`, "Please review and update the form fields with defaults", sep1034Schema,
			`{"action":"accept","content":{"name":"Jane Smith","age":25,"score":88.0,"status":"inactive","verified":false}}`,
			`Elicitation completed: action=accept, content={"name":"Jane Smith","age":25,"score":88.0,"status":"inactive","verified":false}`},
		{"test_elicitation_sep1330_enums", `{}`, "Please select options from the enum fields", sep1330Schema,
			`{"action":"cancel"}`, `Elicitation completed: action=cancel, content={}`},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			c, _, _ := connect(t, map[string]any{"elicitation": map[string]any{}})
			c.Send(`{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"` + tc.tool + `","arguments":` + tc.args + `}}`)
			id, params := serverRequest(t, c, mcp.MethodElicitationCreate)
			want := map[string]any{"message": tc.message, "requestedSchema": asJSON(t, tc.schema)}
			if diff := cmp.Diff(want, params); diff != "" {
				t.Errorf("elicitation request (-want +got):\n%s", diff)
			}
			c.Send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + tc.answer + `}`)
			got := result(t, c.Response(t, json.RawMessage(`"e"`)))
			wantRes := map[string]any{"content": []any{map[string]any{"type": "text", "text": tc.wantResult}}}
			if diff := cmp.Diff(wantRes, got); diff != "" {
				t.Errorf("tool result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestElicitationSchemasMeetSEPs checks the form schemas against what the
// SEP-1034 and SEP-1330 scenarios look for, field by field.
func TestElicitationSchemasMeetSEPs(t *testing.T) {
	var s1034 struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
			Enum    []any  `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(sep1034Schema, &s1034); err != nil {
		t.Fatal(err)
	}
	defaults := map[string][2]any{
		"name": {"string", "John Doe"}, "age": {"integer", 30.0}, "score": {"number", 95.5},
		"status": {"string", "active"}, "verified": {"boolean", true},
	}
	for field, want := range defaults {
		p, ok := s1034.Properties[field]
		if !ok || p.Type != want[0] || p.Default != want[1] {
			t.Errorf("SEP-1034 %s = %+v, want type %v default %v", field, p, want[0], want[1])
		}
	}
	if !cmp.Equal(s1034.Properties["status"].Enum, []any{"active", "inactive", "pending"}) {
		t.Errorf("SEP-1034 status enum = %v", s1034.Properties["status"].Enum)
	}

	var s1330 struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(sep1330Schema, &s1330); err != nil {
		t.Fatal(err)
	}
	titled := func(v any) bool {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return false
		}
		for _, item := range list {
			m, _ := item.(map[string]any)
			if _, ok := m["const"].(string); !ok {
				return false
			}
			if _, ok := m["title"].(string); !ok {
				return false
			}
		}
		return true
	}
	p := s1330.Properties
	checks := []struct {
		name string
		ok   bool
	}{
		{"untitledSingle: string enum, no oneOf or enumNames", p["untitledSingle"]["type"] == "string" && p["untitledSingle"]["enum"] != nil &&
			p["untitledSingle"]["oneOf"] == nil && p["untitledSingle"]["enumNames"] == nil},
		{"titledSingle: string oneOf const/title, no enum", p["titledSingle"]["type"] == "string" && titled(p["titledSingle"]["oneOf"]) &&
			p["titledSingle"]["enum"] == nil},
		{"legacyEnum: enum and enumNames of equal length", p["legacyEnum"]["type"] == "string" &&
			len(p["legacyEnum"]["enum"].([]any)) == len(p["legacyEnum"]["enumNames"].([]any))},
		{"untitledMulti: array of string enum items", p["untitledMulti"]["type"] == "array" &&
			p["untitledMulti"]["items"].(map[string]any)["type"] == "string" && p["untitledMulti"]["items"].(map[string]any)["enum"] != nil &&
			p["untitledMulti"]["items"].(map[string]any)["anyOf"] == nil},
		{"titledMulti: array of anyOf const/title items", p["titledMulti"]["type"] == "array" &&
			titled(p["titledMulti"]["items"].(map[string]any)["anyOf"]) && p["titledMulti"]["items"].(map[string]any)["enum"] == nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("SEP-1330 %s: not so in %s", c.name, sep1330Schema)
		}
	}
}

func TestElicitationWithoutCapability(t *testing.T) {
	for _, tool := range []string{"test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"} {
		t.Run(tool, func(t *testing.T) {
			c, _, _ := connect(t, map[string]any{"sampling": map[string]any{}})
			got := result(t, c.Request(t, 1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"message": "m"}}))
			want := `{"content":[{"type":"text","text":"the client does not support elicitation: it declared no elicitation capability at initialize"}],"isError":true}`
			if diff := cmp.Diff(asJSON(t, []byte(want)), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	tests := []struct {
		name     string
		args     map[string]string
		want     string // result JSON, or ""
		wantCode string // error.data.code, or ""
	}{
		{"test_simple_prompt", nil, `{"description":"A simple prompt without arguments","messages":[` +
			`{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}`, ""},
		{"test_prompt_with_arguments", map[string]string{"arg1": "testValue1", "arg2": "testValue2"},
			`{"description":"A prompt with required arguments","messages":[` +
				`{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]}`, ""},
		{"test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://example-resource"},
			`{"description":"A prompt that includes an embedded resource","messages":[` +
				`{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain",` +
				`"text":"Embedded resource content for testing."}}},` +
				`{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}`, ""},
		{"test_prompt_with_image", nil, `{"description":"A prompt that includes image content","messages":[` +
			`{"role":"user","content":{"type":"image","data":"` + testImagePNG + `","mimeType":"image/png"}},` +
			`{"role":"user","content":{"type":"text","text":"Please analyze the image above."}}]}`, ""},
		{"test_prompt_with_arguments", map[string]string{"arg1": "x"}, "", "MISSING_REQUIRED_VARIABLE"},
		{"test_prompt_with_embedded_resource", nil, "", "MISSING_REQUIRED_VARIABLE"},
		{"no_such_prompt", nil, "", mcp.CodeInvalidParams},
	}
	c, _, _ := connect(t, nil)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"name": tc.name}
			if tc.args != nil {
				params["arguments"] = tc.args
			}
			m := c.Request(t, i+1, "prompts/get", params)
			if tc.wantCode != "" {
				if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != tc.wantCode {
					t.Fatalf("got %s, want a -32602 %s error", m.Raw, tc.wantCode)
				}
				return
			}
			if diff := cmp.Diff(asJSON(t, []byte(tc.want)), result(t, m)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResources(t *testing.T) {
	tests := []struct {
		uri      string
		want     string
		wantCode int64
	}{
		{uriStaticText, `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}`, 0},
		{uriStaticBinary, `{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"` + testImagePNG + `"}]}`, 0},
		{uriWatched, `{"contents":[{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content (revision 0)"}]}`, 0},
		{"test://template/123/data", `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json",` +
			`"text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}]}`, 0},
		{"test://template/a%22b/data", `{"contents":[{"uri":"test://template/a%22b/data","mimeType":"application/json",` +
			`"text":"{\"id\":\"a%22b\",\"templateTest\":true,\"data\":\"Data for ID: a%22b\"}"}]}`, 0},
		{"test://template//data", "", -32002},
		{"test://template/1/2/data", "", -32002},
		{"test://nothing", "", -32002},
	}
	c, _, _ := connect(t, nil)
	for i, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			m := c.Request(t, i+1, "resources/read", map[string]any{"uri": tc.uri})
			if tc.wantCode != 0 {
				if m.Error == nil || m.Error.Code != tc.wantCode {
					t.Fatalf("got %s, want error %d", m.Raw, tc.wantCode)
				}
				return
			}
			if diff := cmp.Diff(asJSON(t, []byte(tc.want)), result(t, m)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatchedResourceUpdates(t *testing.T) {
	c, e, fx := connect(t, nil)
	result(t, c.Request(t, 1, "resources/subscribe", map[string]any{"uri": uriWatched}))
	e.ResourceUpdated(fx.touchWatched())
	n := c.Notification(t, mcp.NotificationResourceUpdated)
	if diff := cmp.Diff(map[string]any{"uri": uriWatched}, asJSON(t, n.Params)); diff != "" {
		t.Errorf("notification params (-want +got):\n%s", diff)
	}
	got := result(t, c.Request(t, 2, "resources/read", map[string]any{"uri": uriWatched}))
	want := `{"contents":[{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content (revision 1)"}]}`
	if diff := cmp.Diff(asJSON(t, []byte(want)), got); diff != "" {
		t.Errorf("after one change (-want +got):\n%s", diff)
	}

	result(t, c.Request(t, 3, "resources/unsubscribe", map[string]any{"uri": uriWatched}))
	e.ResourceUpdated(fx.touchWatched())
	// A request answered after the change proves the change was processed:
	// an update notification would have been queued before this answer.
	result(t, c.Request(t, 4, "ping", nil))
	for _, m := range c.All() {
		if m.Method == mcp.NotificationResourceUpdated {
			t.Errorf("notified after unsubscribing: %s", m.Raw)
		}
	}
}

func TestCompletion(t *testing.T) {
	tests := []struct {
		name     string
		ref      map[string]any
		arg      string
		value    string
		want     []string
		wantCode bool
	}{
		{"prompt argument by prefix", map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "par", []string{"paris", "park", "party"}, false},
		{"prompt argument, the suite's value", map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "test", []string{"test-value-1"}, false},
		{"nothing matches", map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg2", "zzz", []string{}, false},
		{"empty value offers all", map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg2", "", []string{"test-value-2", "world"}, false},
		{"template variable", map[string]any{"type": "ref/resource", "uri": uriTemplate}, "id", "1", []string{"1", "123"}, false},
		{"unknown prompt", map[string]any{"type": "ref/prompt", "name": "nope"}, "arg1", "", nil, true},
		{"unknown argument", map[string]any{"type": "ref/prompt", "name": "test_simple_prompt"}, "x", "", nil, true},
		{"unknown template", map[string]any{"type": "ref/resource", "uri": "test://other/{id}"}, "id", "", nil, true},
		{"unknown ref type", map[string]any{"type": "ref/tool", "name": "x"}, "a", "", nil, true},
	}
	c, _, _ := connect(t, nil)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := c.Request(t, i+1, "completion/complete", map[string]any{"ref": tc.ref,
				"argument": map[string]any{"name": tc.arg, "value": tc.value}})
			if tc.wantCode {
				if m.Error == nil || m.Error.Code != -32602 {
					t.Fatalf("got %s, want a -32602 error", m.Raw)
				}
				return
			}
			var res mcp.CompleteResult
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatalf("%s: %v", m.Raw, err)
			}
			want := mcp.Completion{Values: tc.want, Total: len(tc.want)}
			if diff := cmp.Diff(want, res.Completion); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
