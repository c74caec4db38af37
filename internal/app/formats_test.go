package app_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestFormatsGolden: the built-in examples in the formats teams already
// keep, through the protocol: listed with their titles, arguments and
// model settings (_meta io.flowyprompt/model), rendered as their messages
// (a system message first, as a user message), described by the get tool
// with their model, and read back as a resource in their own media type;
// the validate tool reads a file of another format by its file name.
func TestFormatsGolden(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.Version20250618)
	cases := []exchange{
		{"prompts/get Summarize_Text", "prompts/get", map[string]any{"name": "Summarize_Text",
			"arguments": map[string]string{"audience": "a new hire", "text": "The build is red because the tests share a database."}}},
		{"prompts/get Explain_Code", "prompts/get", map[string]any{"name": "Explain_Code",
			"arguments": map[string]string{"code": "x := y / 0"}}},
		{"prompts/get Customer_Reply", "prompts/get", map[string]any{"name": "Customer_Reply",
			"arguments": map[string]string{"customer_name": "Dana", "message": "I was charged twice."}}},
		{"prompts/get Customer_Reply missing", "prompts/get", map[string]any{"name": "Customer_Reply"}},
		{"get_template Summarize_Text", "tools/call", map[string]any{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "Summarize_Text"}}},
		{"get_template Customer_Reply", "tools/call", map[string]any{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "Customer_Reply"}}},
		{"render_template Explain_Code", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Explain_Code",
			"arguments": map[string]string{"code": "x := y / 0", "level": "beginner"}}}},
		{"resources/read Summarize_Text", "resources/read", map[string]any{"uri": "template://Summarize_Text"}},
		{"validate .prompt.yml", "tools/call", map[string]any{"name": "flowyprompt_validate_template", "arguments": map[string]any{
			"file_name": "hello.prompt.yml", "template": "name: Hello\nmessages:\n  - role: user\n    content: Say hello to {{who}}.\n"}}},
		{"validate bad .prompty", "tools/call", map[string]any{"name": "flowyprompt_validate_template", "arguments": map[string]any{
			"file_name": "hello.prompty", "template": "---\ninputs:\n  who:\n    type: date\n---\nuser:\nHello {{who}}\n"}}},
	}
	got := answers(t, c, cases)
	// prompts/list's entries for the three, from the whole list.
	list := c.Request(t, len(cases)+1, "prompts/list", nil)
	got["prompts/list (the formats' entries)"] = mustJSON(t, promptsNamed(t, list.Result, "Summarize_Text", "Explain_Code", "Customer_Reply"))
	for k, v := range got {
		got[k] = timestamps.ReplaceAll(v, []byte("<time>"))
	}
	golden.JSON(t, filepath.Join("testdata", "formats.golden.json"), got)
}

// promptsNamed picks the prompts named names out of a prompts/list result.
func promptsNamed(t *testing.T, result json.RawMessage, names ...string) []json.RawMessage {
	t.Helper()
	var list struct{ Prompts []json.RawMessage }
	if err := json.Unmarshal(result, &list); err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, p := range list.Prompts {
		var named struct{ Name string }
		if err := json.Unmarshal(p, &named); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, named.Name) {
			out = append(out, p)
		}
	}
	if len(out) != len(names) {
		t.Fatalf("%d of %d prompts listed", len(out), len(names))
	}
	return out
}
