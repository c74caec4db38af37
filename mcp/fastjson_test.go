package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func stdString(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	if err := encodeJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzAppendString: the hand-written string encoder produces exactly what
// encoding/json does (HTML escaping off), for any input.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough for words", "quote\" back\\slash", "\x00\x01\x1f\x7f",
		"한국어 텍스트", "\u2028\u2029", "bad \xff utf8 \xc3", "<html>&amp;</html>", strings.Repeat("a\"b", 20),
		"12345678\n12345678", "\t\r\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		if want := stdString(t, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

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

func BenchmarkAppendString2KB(b *testing.B) {
	s := strings.Repeat("Consider the constraints, the trade-offs and the people affected.\n", 30)
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		buf = appendString(buf[:0], s)
	}
}
