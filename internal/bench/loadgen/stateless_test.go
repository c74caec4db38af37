package loadgen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatelessRequest(t *testing.T) {
	meta := func(caps string) string {
		return `{"io.modelcontextprotocol/clientCapabilities":` + caps +
			`,"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"1"}` +
			`,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	}
	base := []header{{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}, {"MCP-Protocol-Version", "2026-07-28"}}
	with := func(hs ...header) []header { return append(append([]header(nil), base...), hs...) }
	tests := []struct {
		name        string
		method      string
		params      string
		wantParams  string
		wantHeaders []header
		wantErr     string
	}{
		{name: "prompts/get", method: "prompts/get", params: `{"name":"Bench_API_00","arguments":{"topic":"x"}}`,
			wantParams:  `{"_meta":` + meta(`{}`) + `,"arguments":{"topic":"x"},"name":"Bench_API_00"}`,
			wantHeaders: with(header{"Mcp-Method", "prompts/get"}, header{"Mcp-Name", "Bench_API_00"})},
		{name: "tools/call", method: "tools/call", params: `{"name":"render","arguments":{}}`,
			wantParams:  `{"_meta":` + meta(`{}`) + `,"arguments":{},"name":"render"}`,
			wantHeaders: with(header{"Mcp-Method", "tools/call"}, header{"Mcp-Name", "render"})},
		{name: "resources/read names the uri", method: "resources/read", params: `{"uri":"file:///a.json"}`,
			wantParams:  `{"_meta":` + meta(`{}`) + `,"uri":"file:///a.json"}`,
			wantHeaders: with(header{"Mcp-Method", "resources/read"}, header{"Mcp-Name", "file:///a.json"})},
		{name: "no params", method: "prompts/list",
			wantParams:  `{"_meta":` + meta(`{}`) + `}`,
			wantHeaders: with(header{"Mcp-Method", "prompts/list"})},
		{name: "a _meta of its own is kept, the protocol's keys set", method: "ping",
			params:      `{"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}`,
			wantParams:  `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}}`,
			wantHeaders: with(header{"Mcp-Method", "ping"})},
		{name: "params not an object", method: "ping", params: `[1]`, wantErr: "must be a JSON object"},
		{name: "params null", method: "ping", params: `null`, wantErr: "must be a JSON object"},
		{name: "_meta not an object", method: "ping", params: `{"_meta":5}`, wantErr: "_meta must be a JSON object"},
		{name: "no name", method: "prompts/get", params: `{"arguments":{}}`, wantErr: "needs a string params.name"},
		{name: "name not a string", method: "tools/call", params: `{"name":3}`, wantErr: "needs a string params.name"},
		{name: "a name that needs encoding", method: "prompts/get", params: `{"name":"요금"}`, wantErr: "would need encoding"},
		{name: "a name with a trailing blank", method: "prompts/get", params: `{"name":"a "}`, wantErr: "would need encoding"},
		{name: "a name that looks encoded", method: "prompts/get", params: `{"name":"=?base64?YQ==?="}`, wantErr: "would need encoding"},
		{name: "no method", params: `{}`, wantErr: "no method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, headers, err := statelessRequest(tt.method, json.RawMessage(tt.params), "2026-07-28")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(params) != tt.wantParams {
				t.Errorf("params\n got %s\nwant %s", params, tt.wantParams)
			}
			if diff := cmp.Diff(tt.wantHeaders, headers, cmp.AllowUnexported(header{})); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzStatelessRequest: for any params object, the request keeps every
// member but _meta as it was, carries the protocol's _meta, and its
// Mcp-Name header, when there is one, is the name in the body.
func FuzzStatelessRequest(f *testing.F) {
	for _, seed := range []struct{ method, params string }{
		{"prompts/get", `{"name":"Bench_API_00","arguments":{"topic":"rate limits"}}`},
		{"tools/call", `{"name":"a\u0062c","arguments":{"x":[1,2,{"y":null}]}}`},
		{"resources/read", `{"uri":"file:///x","_meta":{"k":"v"}}`},
		{"ping", `{}`},
		{"prompts/get", `{"name":"\u0000"}`},
	} {
		f.Add(seed.method, seed.params)
	}
	f.Fuzz(func(t *testing.T, method, in string) {
		params, headers, err := statelessRequest(method, json.RawMessage(in), "2026-07-28")
		if err != nil {
			return
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &before); err != nil && in != "" {
			t.Fatalf("accepted params that are not an object: %q", in)
		}
		if err := json.Unmarshal(params, &after); err != nil {
			t.Fatalf("params out are not an object: %v: %s", err, params)
		}
		for k, v := range before {
			if k == "_meta" {
				continue
			}
			if !jsonEqual(v, after[k]) {
				t.Fatalf("params.%s changed: %s -> %s", k, v, after[k])
			}
		}
		var meta struct {
			Version string          `json:"io.modelcontextprotocol/protocolVersion"`
			Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		}
		if err := json.Unmarshal(after["_meta"], &meta); err != nil || meta.Version != "2026-07-28" || len(meta.Caps) == 0 {
			t.Fatalf("_meta %s (%v)", after["_meta"], err)
		}
		got := map[string]string{}
		for _, h := range headers {
			got[h.name] = h.value
			if !headerSafe(h.value) {
				t.Fatalf("header %s: %q is not a plain value", h.name, h.value)
			}
		}
		if got["Mcp-Method"] != method || got["MCP-Protocol-Version"] != "2026-07-28" {
			t.Fatalf("headers %v for %s", got, method)
		}
		if key := nameKey(method); key != "" {
			var name string
			if err := json.Unmarshal(after[key], &name); err != nil || got["Mcp-Name"] != name {
				t.Fatalf("Mcp-Name %q, body %s %s", got["Mcp-Name"], key, after[key])
			}
		} else if _, ok := got["Mcp-Name"]; ok {
			t.Fatalf("Mcp-Name for %s", method)
		}
	})
}

// jsonEqual compares two JSON values by meaning.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}
