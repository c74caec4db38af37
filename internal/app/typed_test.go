package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// typedTemplate has a variable of each type but string.
const typedTemplate = `{"metadata":{"name":"Typed","description":"Typed values","version":"1.0.0"},
"variables":[
 {"name":"strict","type":"boolean","description":"Strict mode","default":false},
 {"name":"count","type":"integer","description":"How many","required":true},
 {"name":"ratio","type":"number","description":"Share","default":0.5},
 {"name":"files","type":"array","description":"Files to read","required":true}],
"results":[{"name":"s","content":"strict={{strict}} count={{count}} ratio={{ratio}}\n{{files}}"}]}`

func typedClient(t *testing.T, capabilities map[string]any) *mcptest.Client {
	t.Helper()
	dir := t.TempDir()
	writeTemplate(t, dir, "Typed", typedTemplate)
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.InitializeWith(t, mcp.LatestVersion, capabilities)
	return c
}

// A prompt's arguments are strings: prompts/get parses them by type, and
// a value that does not parse is INVALID_ARGUMENT naming the variable, the
// form it takes and an example.
func TestTypedPromptArguments(t *testing.T) {
	t.Parallel()
	c := typedClient(t, nil)
	tests := []struct {
		name string
		args map[string]string
		text string // the prompt's end, when it renders
		err  []string
	}{
		{name: "parsed", args: map[string]string{"count": "3", "files": "[\"a.go\", \"b.go\"]", "strict": "true"},
			text: "strict=true count=3 ratio=0.5\na.go\nb.go"},
		{name: "a list line by line", args: map[string]string{"count": "1", "files": "a.go\nb.go\n"},
			text: "strict=false count=1 ratio=0.5\na.go\nb.go"},
		{name: "not a boolean", args: map[string]string{"count": "3", "files": "a.go", "strict": "yes"},
			err: []string{"strict is not a valid boolean: not true or false", "true or false", `"example":"true"`}},
		{name: "not an integer", args: map[string]string{"count": "2.5", "files": "a.go"},
			err: []string{"count is not a valid integer: not a whole number", "a whole number", `"example":"3"`}},
		{name: "a JSON array of objects", args: map[string]string{"count": "1", "files": `[{"path":"a.go"}]`},
			err: []string{"files is not a valid array: item 0 of the JSON array is an object, not a string", `e.g. [\"first\", \"second\"]`}},
	}
	for i, tt := range tests {
		m := c.Request(t, i+1, "prompts/get", map[string]any{"name": "Typed", "arguments": tt.args})
		if tt.err != nil {
			if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != "INVALID_ARGUMENT" {
				t.Errorf("%s: want an invalid params error, got %s", tt.name, m.Raw)
				continue
			}
			for _, s := range append(tt.err, "INVALID_ARGUMENT") {
				if !strings.Contains(string(m.Raw), s) {
					t.Errorf("%s: no %q in %s", tt.name, s, m.Raw)
				}
			}
			continue
		}
		var res mcp.GetPromptResult
		if err := json.Unmarshal(m.Result, &res); err != nil || m.Error != nil {
			t.Fatalf("%s: %s", tt.name, m.Raw)
		}
		if got := res.Messages[0].Content.Text; !strings.HasSuffix(got, tt.text) {
			t.Errorf("%s: prompt %q does not end with %q", tt.name, got, tt.text)
		}
	}
}

// The render tool takes JSON values and renders them as prompts/get does
// their string form; a value of the wrong type is INVALID_ARGUMENT.
func TestTypedToolArguments(t *testing.T) {
	t.Parallel()
	c := typedClient(t, nil)
	tests := []struct {
		name  string
		args  any
		text  string
		isErr []string
	}{
		{name: "JSON values", args: map[string]any{"count": 3, "files": []string{"a.go", "b <c>.go"}, "strict": true, "ratio": 1e-3},
			text: "strict=true count=3 ratio=0.001\na.go\nb <c>.go"},
		{name: "strings", args: map[string]string{"count": "3", "files": "a.go"},
			text: "strict=false count=3 ratio=0.5\na.go"},
		{name: "a fraction for an integer", args: map[string]any{"count": 2.5, "files": []string{"a.go"}},
			isErr: []string{"INVALID_ARGUMENT", "count is not a valid integer: not a whole number", "pass a whole number for count, e.g. 3"}},
		{name: "a list for a boolean", args: map[string]any{"count": 1, "files": []string{"a.go"}, "strict": []string{"true"}},
			isErr: []string{"INVALID_ARGUMENT", "strict is not a valid boolean", "pass true or false for strict"}},
		{name: "a list of numbers", args: map[string]any{"count": 1, "files": []int{1}},
			isErr: []string{"INVALID_ARGUMENT", "arguments.files.0: Invalid type. Expected: string, given: integer"}},
	}
	for i, tt := range tests {
		res := call(t, c, i+1, "flowyprompt_render_template", map[string]any{"name": "Typed", "arguments": tt.args})
		text := res.Content[0].Text
		if res.IsError != (tt.isErr != nil) {
			t.Errorf("%s: isError = %t:\n%s", tt.name, res.IsError, text)
			continue
		}
		for _, s := range tt.isErr {
			if !strings.Contains(text, s) {
				t.Errorf("%s: no %q in:\n%s", tt.name, s, text)
			}
		}
		if tt.isErr == nil && !strings.HasSuffix(res.StructuredContent["text"].(string), tt.text) {
			t.Errorf("%s: text %q does not end with %q", tt.name, res.StructuredContent["text"], tt.text)
		}
	}
}

// A prompt argument is a string whatever its type: its description says
// how to write it. Completion offers true and false for a boolean.
func TestTypedPromptListAndCompletion(t *testing.T) {
	t.Parallel()
	c := typedClient(t, nil)
	m := c.Request(t, 1, "prompts/list", nil)
	var list struct{ Prompts []mcp.Prompt }
	if err := json.Unmarshal(m.Result, &list); err != nil || len(list.Prompts) != 1 {
		t.Fatalf("%s", m.Raw)
	}
	var descs []string
	for _, a := range list.Prompts[0].Arguments {
		descs = append(descs, a.Description)
	}
	want := []string{
		"Strict mode (boolean: true or false, e.g. true) (default: false)",
		"How many (integer: a whole number, e.g. 3)",
		"Share (number: a number, e.g. 0.5) (default: 0.5)",
		`Files to read (array: a list of strings (a JSON array, or one item per line), e.g. ["first", "second"])`,
	}
	if diff := cmp.Diff(want, descs); diff != "" {
		t.Errorf("argument descriptions (-want +got):\n%s", diff)
	}
	ref := map[string]string{"type": "ref/prompt", "name": "Typed"}
	for i, tt := range []struct {
		arg, typed string
		want       []string
	}{
		{"strict", "", []string{"true", "false"}},
		{"strict", "f", []string{"false"}},
		{"count", "", []string{}},
	} {
		m := c.Request(t, 10+i, "completion/complete", map[string]any{"ref": ref, "argument": map[string]string{"name": tt.arg, "value": tt.typed}})
		var res mcp.CompleteResult
		if err := json.Unmarshal(m.Result, &res); err != nil || m.Error != nil {
			t.Fatalf("%s", m.Raw)
		}
		if !cmp.Equal(res.Completion.Values, tt.want) {
			t.Errorf("complete %s %q = %v, want %v", tt.arg, tt.typed, res.Completion.Values, tt.want)
		}
	}
}

// A form asks for a boolean with a checkbox and for a number with a number
// field; the answers, JSON values, render as the tool's arguments do.
func TestTypedElicitationForm(t *testing.T) {
	t.Parallel()
	c := typedClient(t, map[string]any{"elicitation": map[string]any{}})
	c.Send(mustString(t, map[string]any{"jsonrpc": "2.0", "id": "r", "method": "tools/call",
		"params": map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Typed"}}}))
	req := c.Next(t)
	var p struct {
		RequestedSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"requestedSchema"`
	}
	if req.Method != "elicitation/create" || json.Unmarshal(req.Params, &p) != nil {
		t.Fatalf("expected elicitation, got %s", req.Raw)
	}
	want := map[string]map[string]any{
		"count": {"type": "integer", "title": "count", "description": "How many"},
		"files": {"type": "string", "title": "files", "description": "Files to read (a list of strings (a JSON array, or one item per line))",
			"minLength": float64(1)},
	}
	if diff := cmp.Diff(want, p.RequestedSchema.Properties); diff != "" {
		t.Errorf("form fields (-want +got):\n%s", diff)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"count":4,"files":"x.go\ny.go"}}}`)
	m := c.Response(t, json.RawMessage(`"r"`))
	if !strings.Contains(string(m.Result), `strict=false count=4 ratio=0.5\nx.go\ny.go`) {
		t.Fatalf("answered form: %s", m.Raw)
	}
}

// The get and list tools name a variable's type, so a model knows what
// to pass; a string variable's entry reads as before.
func TestTypedToolDescriptions(t *testing.T) {
	t.Parallel()
	c := typedClient(t, nil)
	get := call(t, c, 1, "flowyprompt_get_template", map[string]any{"name": "Typed"})
	for _, s := range []string{
		"- `strict` (boolean: true or false, optional): Strict mode Default: \"false\".",
		"- `count` (integer: a whole number, required): How many",
		"- `files` (array: a list of strings (a JSON array, or one item per line), required): Files to read",
	} {
		if !strings.Contains(get.Content[0].Text, s) {
			t.Errorf("get_template lacks %q:\n%s", s, get.Content[0].Text)
		}
	}
	list := call(t, c, 2, "flowyprompt_list_templates", map[string]any{})
	if s := "Arguments: strict (boolean, default \"false\"), count (integer, required), ratio (number, default \"0.5\"), files (array, required)"; !strings.Contains(list.Content[0].Text, s) {
		t.Errorf("list_templates lacks %q:\n%s", s, list.Content[0].Text)
	}
	args := list.StructuredContent["templates"].([]any)[0].(map[string]any)["arguments"].([]any)
	var types []any
	for _, a := range args {
		types = append(types, a.(map[string]any)["type"])
	}
	if !cmp.Equal(types, []any{"boolean", "integer", "number", "array"}) {
		t.Errorf("list_templates' argument types: %v", types)
	}
}
