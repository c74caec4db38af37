package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendFastMatchesEncodingJSON: the hand-encoded results are the same
// bytes encoding/json writes.
func TestAppendFastMatchesEncodingJSON(t *testing.T) {
	results := []any{
		&GetPromptResult{Description: "d <&>", Messages: []PromptMessage{{Role: "user", Content: TextContent("# T\n\n\"x\" ☃")}}},
		&GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("")}, {Role: "assistant", Content: TextContent("b")}}},
		&GetPromptResult{Messages: []PromptMessage{}},
		&CallToolResult{Content: []Content{TextContent("## Result\nok <b>")}, StructuredContent: map[string]any{"b": 1, "a": "x<y"}},
		&CallToolResult{Content: []Content{TextContent("failed")}, IsError: true},
		&CallToolResult{Content: []Content{}},
		// Text that needs escaping, and text that is empty.
		&GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("a\n\"b\" \u2028 \x01 \xff")}}},
		&CallToolResult{Content: []Content{TextContent("## R\tok"), TextContent("")}},
		// Structured content the tool encoded itself.
		&CallToolResult{Content: []Content{TextContent("ok")}, StructuredContent: json.RawMessage(`{"a":"x<y","b":[1,2]}`)},
	}
	for _, r := range results {
		got, ok := appendFast(nil, r)
		if !ok {
			t.Fatalf("%+v not encoded fast", r)
		}
		var want bytes.Buffer
		if err := encodeJSON(&want, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("fast %s\nwant %s", got, want.Bytes())
		}
		if !json.Valid(got) {
			t.Errorf("invalid JSON %s", got)
		}
	}
	// Anything else takes the general path.
	if _, ok := appendFast(nil, &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: Content{Type: "resource", Resource: &ResourceContents{URI: "x"}}}}}); ok {
		t.Error("a resource message was encoded by the fast path")
	}
	// A result with _meta (a template's model settings) too, so the
	// _meta is never dropped.
	withMeta := &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("x")}}, Meta: map[string]any{"io.flowyprompt/model": map[string]any{"name": "m"}}}
	if _, ok := appendFast(nil, withMeta); ok {
		t.Error("a result with _meta was encoded by the fast path")
	}
	var buf bytes.Buffer
	if err := encodeJSON(&buf, withMeta); err != nil || !strings.Contains(buf.String(), `"_meta":{"io.flowyprompt/model":{"name":"m"}}`) {
		t.Errorf("encoded %s, %v", buf.String(), err)
	}
}

// TestFastSizeLeavesRoom: for the results the hot paths build (prompt
// text, no structuredContent), fastSize leaves room for all that
// appendFast writes, so encoding them allocates once, and not much more.
func TestFastSizeLeavesRoom(t *testing.T) {
	// A prompt: a newline or a quote every dozen bytes or so.
	prompt := TextContent(strings.Repeat("A line of the prompt, and a \"quote\".\n", 60))
	tests := []struct {
		name string
		r    any
	}{
		{"prompt", &GetPromptResult{Description: "d", Messages: []PromptMessage{{Role: "user", Content: prompt}}}},
		{"prompt, no description, two messages", &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: prompt}, {Role: "assistant", Content: TextContent("ok")}}}},
		{"tool result", &CallToolResult{Content: []Content{prompt}}},
		{"tool result, structured content encoded already", &CallToolResult{Content: []Content{prompt},
			StructuredContent: json.RawMessage(`{"text":"` + strings.Repeat("x", 2000) + `"}`)}},
		{"tool error", &CallToolResult{Content: []Content{TextContent("failed")}, IsError: true}},
	}
	for _, tt := range tests {
		got, ok := appendFast(nil, tt.r)
		if !ok {
			t.Fatalf("%s: not encoded fast", tt.name)
		}
		if n := fastSize(tt.r); n < len(got) || n > len(got)+len(got)/6+64 {
			t.Errorf("%s: fastSize %d for %d bytes", tt.name, n, len(got))
		}
	}
	if n := fastSize(&InitializeResult{}); n != 0 {
		t.Errorf("fastSize of a shape appendFast does not take = %d, want 0", n)
	}
}
