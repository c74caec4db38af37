package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/xeipuuv/gojsonschema"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

func newEngine(t *testing.T, src templates.Source) (*mcp.Engine, *app.App, *templates.Library) {
	t.Helper()
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Version: "test"})
	e := mcptest.Engine(t, a.Server(), mcp.EngineOptions{})
	t.Cleanup(a.Attach(e))
	return e, a, lib
}

// newDirEngine serves the template folder dir (not watched: a test that
// wants changes noticed runs the library, or calls the refresh tool).
func newDirEngine(t *testing.T, dir string) (*mcp.Engine, *templates.Library) {
	t.Helper()
	e, _, lib := newEngine(t, folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}}))
	return e, lib
}

type exchange struct {
	name   string
	method string
	params any
}

// answers sends each exchange in turn and returns what came back, by
// name: the result, or the error, as a golden file holds it.
func answers(t *testing.T, c *mcptest.Client, cases []exchange) map[string]json.RawMessage {
	t.Helper()
	got := map[string]json.RawMessage{}
	for i, ex := range cases {
		m := c.Request(t, i+1, ex.method, ex.params)
		if m.Error != nil {
			got[ex.name] = mustJSON(t, map[string]any{"error": m.Error})
		} else {
			got[ex.name] = mustJSON(t, map[string]any{"result": json.RawMessage(m.Result)})
		}
	}
	return got
}

// TestExchangesGolden drives the embedded library through the protocol and
// compares every answer with the golden file (as JSON).
func TestExchangesGolden(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.Version20250618)
	codeReview := map[string]string{"code": "func add(a, b int) int { return a - b }", "language": "Go"}
	cases := []exchange{
		{"prompts/list", "prompts/list", nil},
		{"prompts/get Code_Review", "prompts/get", map[string]any{"name": "Code_Review", "arguments": codeReview}},
		{"prompts/get Brand_Positioning_Strategy", "prompts/get", map[string]any{"name": "Brand_Positioning_Strategy",
			"arguments": map[string]string{"company_name": "테크스타트업", "industry": "AI", "target_customer": "B2B SaaS 기업"}}},
		{"prompts/get missing required", "prompts/get", map[string]any{"name": "Brand_Positioning_Strategy"}},
		{"prompts/get unknown", "prompts/get", map[string]any{"name": "Code_Reveiw"}},
		{"prompts/get bad name", "prompts/get", map[string]any{"name": "../../etc/passwd"}},
		{"tools/list", "tools/list", nil},
		{"list_templates", "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": map[string]any{"limit": 3}}},
		{"list_templates by tag", "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": map[string]any{"tag": "git"}}},
		{"list_templates bad limit", "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": map[string]any{"limit": 1000}}},
		{"list_templates bad cursor", "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": map[string]any{"cursor": "nope"}}},
		{"search commit", "tools/call", map[string]any{"name": "flowyprompt_search_templates", "arguments": map[string]any{"query": "commit message"}}},
		{"search korean", "tools/call", map[string]any{"name": "flowyprompt_search_templates", "arguments": map[string]any{"query": "브랜드"}}},
		{"search nothing", "tools/call", map[string]any{"name": "flowyprompt_search_templates", "arguments": map[string]any{"query": "zzzzqqq"}}},
		{"search missing query", "tools/call", map[string]any{"name": "flowyprompt_search_templates", "arguments": map[string]any{}}},
		{"get_template", "tools/call", map[string]any{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "Commit_Message"}}},
		{"get_template unknown", "tools/call", map[string]any{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "Comit_Message"}}},
		{"render_template", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Code_Review", "arguments": codeReview}}},
		{"render_template missing", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Code_Review"}}},
		{"render_template unknown argument", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Code_Review",
			"arguments": map[string]string{"code": "x", "colour": "red"}}}},
		{"render_template object value", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Code_Review",
			"arguments": map[string]any{"code": map[string]any{"x": 42}}}}},
		{"validate valid", "tools/call", map[string]any{"name": "flowyprompt_validate_template", "arguments": map[string]any{"template": validTemplate}}},
		{"validate invalid", "tools/call", map[string]any{"name": "flowyprompt_validate_template", "arguments": map[string]any{"template": invalidTemplate}}},
		{"validate not json", "tools/call", map[string]any{"name": "flowyprompt_validate_template", "arguments": map[string]any{"template": "{nope"}}},
		{"refresh", "tools/call", map[string]any{"name": "flowyprompt_refresh_templates", "arguments": map[string]any{}}},
		{"unknown tool", "tools/call", map[string]any{"name": "flowyprompt_delete_everything", "arguments": map[string]any{}}},
	}
	got := answers(t, c, cases)
	for k, v := range got {
		got[k] = timestamps.ReplaceAll(v, []byte("<time>"))
	}
	golden.JSON(t, filepath.Join("testdata", "exchanges.golden.json"), got)
}

// timestamps are scrubbed from golden output: load times differ per run.
var timestamps = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)

const validTemplate = `{"metadata":{"name":"Hello","description":"Greets someone","version":"1.0.0"},
"variables":[{"name":"who","type":"string","description":"Who to greet","required":true}],
"results":[{"name":"Greeting","content":"Say hello to {{who}}."}]}`

const invalidTemplate = `{"metadata":{"name":"bad name!","version":"one"},
"variables":[{"name":"who","type":"int","description":""}],
"results":[]}`

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestToolsFollowTheStandard checks every tool against the seed-004
// standard and the MCP rules: names, descriptions, schemas, annotations.
func TestToolsFollowTheStandard(t *testing.T) {
	t.Parallel()
	_, a, _ := newEngine(t, templates.Embedded())
	tools, err := a.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"flowyprompt_list_templates", "flowyprompt_search_templates", "flowyprompt_get_template",
		"flowyprompt_render_template", "flowyprompt_validate_template", "flowyprompt_template_history", "flowyprompt_diff_template",
		"flowyprompt_refresh_templates", "flowyprompt_start_flow", "flowyprompt_next_flow_step"}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		for _, section := range []string{"USE WHEN:", "RETURNS:", "RELATED TOOLS:", "LIMITS:"} {
			if !strings.Contains(tl.Description, section) {
				t.Errorf("%s: description lacks %s", tl.Name, section)
			}
		}
		if tl.Annotations == nil || tl.Annotations.ReadOnlyHint == nil || !*tl.Annotations.ReadOnlyHint {
			t.Errorf("%s: read tools must be annotated readOnlyHint", tl.Name)
		}
		var schema struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: input schema must be an object schema: %v", tl.Name, err)
		}
		for p, def := range schema.Properties {
			d, _ := def["description"].(string)
			if d == "" {
				t.Errorf("%s.%s: parameter has no description", tl.Name, p)
			}
		}
		if _, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(tl.OutputSchema)); err != nil {
			t.Errorf("%s: output schema does not compile: %v", tl.Name, err)
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// TestStructuredContentMatchesOutputSchema: every successful call's
// structuredContent validates against the tool's outputSchema, and its
// text is self-sufficient (starts with a Result section).
func TestStructuredContentMatchesOutputSchema(t *testing.T) {
	t.Parallel()
	e, a, _ := newEngine(t, templates.Embedded())
	schemas := outputSchemas(t, a)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	calls := []map[string]any{
		{"name": "flowyprompt_list_templates", "arguments": map[string]any{}},
		{"name": "flowyprompt_list_templates", "arguments": map[string]any{"limit": 2, "category": "Engineering"}},
		{"name": "flowyprompt_search_templates", "arguments": map[string]any{"query": "review"}},
		{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "SQL_Review"}},
		{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Meeting_Summary", "arguments": map[string]string{"transcript": "we met"}}},
		{"name": "flowyprompt_validate_template", "arguments": map[string]any{"template": invalidTemplate}},
		{"name": "flowyprompt_refresh_templates"},
	}
	for i, call := range calls {
		m := c.Request(t, i, "tools/call", call)
		var res mcp.CallToolResult
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatalf("%v: %s", call, m.Raw)
		}
		if res.IsError {
			t.Errorf("%v failed: %s", call["name"], res.Content[0].Text)
			continue
		}
		if len(res.Content) == 0 || res.Content[0].Type != "text" || !strings.HasPrefix(res.Content[0].Text, "## Result\n") {
			t.Errorf("%v: content[0] must be a self-sufficient text starting with ## Result", call["name"])
		}
		r, err := schemas[call["name"].(string)].Validate(gojsonschema.NewGoLoader(res.StructuredContent))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Valid() {
			t.Errorf("%v: structuredContent violates outputSchema: %v", call["name"], r.Errors())
		}
	}
}

// TestListPaginatesWholeLibrary walks every page of the list tool.
func TestListPaginatesWholeLibrary(t *testing.T) {
	t.Parallel()
	e, _, lib := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	var names []string
	cursor := ""
	for i := 0; i < 50; i++ {
		args := map[string]any{"limit": 4}
		if cursor != "" {
			args["cursor"] = cursor
		}
		m := c.Request(t, i, "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": args})
		var res struct {
			StructuredContent struct {
				Templates []struct{ Name string } `json:"templates"`
				Next      string                  `json:"next_cursor"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, tm := range res.StructuredContent.Templates {
			names = append(names, tm.Name)
		}
		if res.StructuredContent.Next == "" {
			break
		}
		cursor = res.StructuredContent.Next
	}
	var want []string
	for _, e := range lib.Catalog().Templates() {
		want = append(want, e.Template.Metadata.Name)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("paged names (-want +got):\n%s", diff)
	}
}

// watchedDirClient serves dir with its watcher running until the test
// ends, and connects an initialized client.
func watchedDirClient(t *testing.T, dir string) *mcptest.Client {
	t.Helper()
	e, lib := newDirEngine(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = lib.Run(ctx) }()
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	return c
}

// TestDirectoryChangeReachesSessions: editing the folder sends list_changed
// for prompts and tools, and the next prompts/get serves the new content.
func TestDirectoryChangeReachesSessions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmpl := func(name, content string) string {
		return `{"metadata":{"name":"` + name + `","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"` + content + `"}]}`
	}
	writeTemplate(t, dir, "One", tmpl("One", "first"))
	c := watchedDirClient(t, dir)
	writeTemplate(t, dir, "Two", tmpl("Two", "second"))
	c.Notification(t, mcp.NotificationPromptsListChanged)
	c.Notification(t, mcp.NotificationToolsListChanged)
	m := c.Request(t, 1, "prompts/get", map[string]any{"name": "Two"})
	if m.Error != nil || !strings.Contains(string(m.Result), "second") {
		t.Fatalf("new template not served: %s", m.Raw)
	}
	// A half-written file never empties the catalog.
	if err := os.WriteFile(filepath.Join(dir, "One.json"), []byte(`{"metadata":{"name":"One"`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The watcher has handled the broken file once clients hear of it.
	if n := c.Notification(t, mcp.NotificationMessage); !strings.Contains(string(n.Params), "One.json") {
		t.Fatalf("warning = %s, want one about One.json", n.Params)
	}
	m = c.Request(t, 2, "prompts/get", map[string]any{"name": "One"})
	if m.Error != nil || !strings.Contains(string(m.Result), "first") {
		t.Fatalf("previous version of One not kept: %s", m.Raw)
	}
}

// outputSchemas compiles every tool's outputSchema, by tool name.
func outputSchemas(t *testing.T, a *app.App) map[string]*gojsonschema.Schema {
	t.Helper()
	tools, _ := a.ListTools(context.Background(), nil)
	schemas := map[string]*gojsonschema.Schema{}
	for _, tl := range tools {
		s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(tl.OutputSchema))
		if err != nil {
			t.Fatal(err)
		}
		schemas[tl.Name] = s
	}
	return schemas
}
