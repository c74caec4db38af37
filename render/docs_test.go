package render

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// docBlock returns the first fenced block with language lang after the
// first line of docs/templates.md that contains marker.
func docBlock(t *testing.T, doc, marker, lang string) string {
	t.Helper()
	at := strings.Index(doc, marker)
	if at < 0 {
		t.Fatalf("docs/templates.md no longer has %q", marker)
	}
	rest := doc[at:]
	open := strings.Index(rest, "\n```"+lang+"\n")
	if open < 0 {
		t.Fatalf("docs/templates.md has no %s block after %q", lang, marker)
	}
	body := rest[open+len("\n```"+lang+"\n"):]
	end := strings.Index(body, "\n```\n")
	if end < 0 {
		t.Fatalf("the %s block after %q is not closed", lang, marker)
	}
	return body[:end]
}

// TestDocsConversationExample: the Conversations section of
// docs/templates.md shows what is rendered from its example, as written.
func TestDocsConversationExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "templates.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	tp := parse(t, []byte(docBlock(t, doc, "`templates/Pair_Review.json`:", "json")))
	msgs, err := Conversation(tp, map[string]string{"diff": "+retries = 5", "focus": "tests"})
	if err != nil {
		t.Fatal(err)
	}
	var shown []struct {
		Role    string `json:"role"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(docBlock(t, doc, "returns these messages", "json")), &shown); err != nil {
		t.Fatalf("the page's messages are not JSON: %v", err)
	}
	var want []Message
	for _, m := range shown {
		if m.Content.Type != "text" {
			t.Errorf("the page shows content of type %q", m.Content.Type)
		}
		want = append(want, Message{Role: m.Role, Text: m.Content.Text})
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("the page's prompts/get messages (-page +rendered):\n%s", diff)
	}
	if got, want := Transcript(msgs), docBlock(t, doc, "prints this transcript", "markdown"); got != want {
		t.Errorf("the page's transcript differs:\n%s\nrendered:\n%s", want, got)
	}
}

// TestDocsSectionsExample: the section of the "Sections, lists and
// partials" part of docs/templates.md renders as the page says: no empty
// heading without context, the files listed, the partial included.
func TestDocsSectionsExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "templates.md"))
	if err != nil {
		t.Fatal(err)
	}
	var section map[string]any
	if err := json.Unmarshal([]byte(docBlock(t, string(raw), "## Sections, lists and partials", "json")), &section); err != nil {
		t.Fatalf("the page's section is not JSON: %v", err)
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": "Docs", "description": "d", "version": "1.0.0"},
		"variables": []map[string]any{
			{"name": "topic", "type": "string", "description": "d", "required": true},
			{"name": "context", "type": "string", "description": "d"},
			{"name": "files", "type": "array", "description": "d"},
		},
		"results": []any{section},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := templates.Build([]templates.File{{Path: "Docs.json", Data: data},
		{Path: "partials/house_style.md", Data: []byte("Answer briefly.")}}, templates.BuildOptions{})
	e, ok := c.Lookup("Docs")
	if !ok {
		t.Fatalf("the page's section is invalid: %v", c.Invalid())
	}
	tests := []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"topic": "the cache"},
			"## Task\n\nReview the cache.\n\n## Files\n\nNo files given: ask for them.\n\nAnswer briefly."},
		{map[string]string{"topic": "the cache", "context": "It leaks.", "files": `["cache.go", "cache_test.go"]`},
			"## Task\n\nReview the cache.\n\n## Context\n\nIt leaks.\n\n## Files\n\n- cache.go\n- cache_test.go\n\nAnswer briefly."},
	}
	for _, tt := range tests {
		got, err := body(t, e.Template, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%v renders\n%q\nwant\n%q", tt.args, got, tt.want)
		}
	}
}
