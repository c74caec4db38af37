package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
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
		// Text escaped in advance is copied as given.
		&GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: EscapedTextContent("a\n\"b\" \u2028", jsonstr.AppendEscaped(nil, "a\n\"b\" \u2028"))}}},
		&CallToolResult{Content: []Content{EscapedTextContent("## R\tok", jsonstr.AppendEscaped(nil, "## R\tok")), EscapedTextContent("", nil)}},
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
}

// TestFastSizeLeavesRoom: for the results the hot paths build (text escaped
// in advance, no structuredContent), fastSize leaves room for all that
// appendFast writes, so encoding them never outgrows the buffer, and not
// much more.
func TestFastSizeLeavesRoom(t *testing.T) {
	text := strings.Repeat("line with \"quotes\"\n", 500)
	escaped := EscapedTextContent(text, jsonstr.AppendEscaped(nil, text))
	tests := []struct {
		name string
		r    any
	}{
		{"prompt", &GetPromptResult{Description: "d", Messages: []PromptMessage{{Role: "user", Content: escaped}}}},
		{"prompt, no description, two messages", &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: escaped}, {Role: "assistant", Content: TextContent("ok")}}}},
		{"tool result", &CallToolResult{Content: []Content{escaped}}},
		{"tool error", &CallToolResult{Content: []Content{TextContent("failed")}, IsError: true}},
	}
	for _, tt := range tests {
		got, ok := appendFast(nil, tt.r)
		if !ok {
			t.Fatalf("%s: not encoded fast", tt.name)
		}
		if n := fastSize(tt.r); n < len(got) || n > len(got)+64 {
			t.Errorf("%s: fastSize %d for %d bytes", tt.name, n, len(got))
		}
	}
	if n := fastSize(&InitializeResult{}); n != 0 {
		t.Errorf("fastSize of a shape appendFast does not take = %d, want 0", n)
	}
}
