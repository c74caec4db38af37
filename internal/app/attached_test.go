package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// TestRenderToolAttachesResources: the render tool returns the template's
// resources as prompts/get does, as embedded resources after the text and
// named in structuredContent, within the result budget.
func TestRenderToolAttachesResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := strings.Repeat("y", 60_000)
	testfiles.Write(t, dir, map[string]string{
		"Guided.json": `{"metadata":{"name":"Guided","description":"Writes","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Write it, following the attached guide."}],"resources":["guides/style.md","template://Style"]}`,
		"Style.json": `{"metadata":{"name":"Style","description":"House style","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Be brief."}]}`,
		"Heavy.json": `{"metadata":{"name":"Heavy","description":"Heavy","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Read both."}],"resources":["a.txt","b.txt","small.txt"]}`,
		"guides/style.md": "# Style\nBe brief.",
		"a.txt":           big,
		"b.txt":           big,
		"small.txt":       "small",
	})
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name     string
		template string
		// attached are the URIs of the embedded resources, in order.
		attached []string
		// listed is structuredContent.resources' uris with "included".
		listed  map[string]bool
		textHas []string
	}{
		{name: "file and template", template: "Guided",
			attached: []string{"template-file:///guides/style.md", "template://Style"},
			listed:   map[string]bool{"template-file:///guides/style.md": true, "template://Style": true}},
		// 120,000 characters of resources do not fit: the second is left
		// out, named, with the way to read it; the small one after it fits.
		{name: "over the budget", template: "Heavy",
			attached: []string{"template-file:///a.txt", "template-file:///small.txt"},
			listed:   map[string]bool{"template-file:///a.txt": true, "template-file:///b.txt": false, "template-file:///small.txt": true},
			textHas:  []string{"template-file:///b.txt", "resources/read"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.Request(t, 10+i, "tools/call", map[string]any{"name": "flowyprompt_render_template",
				"arguments": map[string]any{"name": tt.template}})
			var res toolResult
			if err := json.Unmarshal(m.Result, &res); err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("render: %.500s", m.Raw)
			}
			if res.Content[0].Type != "text" {
				t.Fatalf("first block is %q, want the text", res.Content[0].Type)
			}
			var got []string
			size := len([]rune(res.Content[0].Text))
			for _, b := range res.Content[1:] {
				if b.Type != "resource" || b.Resource == nil {
					t.Fatalf("block %+v is not an embedded resource", b)
				}
				got = append(got, b.Resource.URI)
				size += len([]rune(b.Resource.Text)) + len(b.Resource.Blob)
			}
			if strings.Join(got, " ") != strings.Join(tt.attached, " ") {
				t.Errorf("embedded resources = %v, want %v", got, tt.attached)
			}
			if size > app.ResultBudget {
				t.Errorf("result carries %d characters, over the %d budget", size, app.ResultBudget)
			}
			list, _ := res.StructuredContent["resources"].([]any)
			named := map[string]bool{}
			for _, r := range list {
				r := r.(map[string]any)
				named[r["uri"].(string)] = r["included"] == true
			}
			if len(named) != len(tt.listed) {
				t.Errorf("structuredContent.resources = %v, want %v", list, tt.listed)
			}
			for uri, inc := range tt.listed {
				if got, ok := named[uri]; !ok || got != inc {
					t.Errorf("structuredContent.resources[%s] included = %v (listed %v), want %v", uri, got, ok, inc)
				}
			}
			for _, s := range tt.textHas {
				if !strings.Contains(res.Content[0].Text, s) {
					t.Errorf("text lacks %q:\n%s", s, res.Content[0].Text)
				}
			}
		})
	}
}

// TestMissingResourceDegrades: a listed file that is not there does not
// fail the prompt: prompts/get and the render tool serve the text with a
// note naming it, the server logs a warning, and resources/list does not
// advertise the file.
func TestMissingResourceDegrades(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"Guided.json": `{"metadata":{"name":"Guided","description":"Writes","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Write it, following the attached guide."}],"resources":["guides/missing.md","here.md"]}`,
		"here.md": "# Here",
	})
	var logs testfiles.SyncBuffer
	lib := templates.NewLibrary(folder.New(dir, templates.BuildOptions{}), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Version: "test", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{})
	t.Cleanup(a.Attach(e))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	const missing = "template-file:///guides/missing.md"

	tests := []struct {
		name   string
		method string
		params any
		check  func(t *testing.T, m mcptest.Message)
	}{
		{name: "prompts/get", method: "prompts/get", params: map[string]any{"name": "Guided"}, check: func(t *testing.T, m mcptest.Message) {
			var res mcp.GetPromptResult
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Messages) != 3 {
				t.Fatalf("want the text, the file that is there and a note: %s", m.Raw)
			}
			if !strings.Contains(res.Messages[0].Content.Text, "Write it") {
				t.Errorf("first message is not the prompt: %+v", res.Messages[0])
			}
			if r := res.Messages[1].Content.Resource; r == nil || r.URI != "template-file:///here.md" {
				t.Errorf("second message is not here.md: %+v", res.Messages[1])
			}
			if note := res.Messages[2].Content.Text; !strings.Contains(note, "guides/missing.md") || !strings.Contains(note, "not attached") {
				t.Errorf("no note naming the missing file: %+v", res.Messages[2])
			}
		}},
		{name: "render tool", method: "tools/call", params: map[string]any{"name": "flowyprompt_render_template",
			"arguments": map[string]any{"name": "Guided"}}, check: func(t *testing.T, m mcptest.Message) {
			var res toolResult
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.IsError || len(res.Content) != 2 {
				t.Fatalf("want the text and here.md: %s", m.Raw)
			}
			if !strings.Contains(res.Content[0].Text, missing) || !strings.Contains(res.Content[0].Text, "Not attached") {
				t.Errorf("text names no missing file:\n%s", res.Content[0].Text)
			}
			list, _ := res.StructuredContent["resources"].([]any)
			if len(list) != 2 || list[0].(map[string]any)["uri"] != missing || list[0].(map[string]any)["included"] != false ||
				list[0].(map[string]any)["error"] == nil {
				t.Errorf("structuredContent.resources = %v, want the missing file not included, with its error", list)
			}
		}},
		{name: "resources/list", method: "resources/list", check: func(t *testing.T, m mcptest.Message) {
			if strings.Contains(string(m.Result), "missing.md") || !strings.Contains(string(m.Result), "template-file:///here.md") {
				t.Errorf("resources/list advertises the missing file, or not the one there: %s", m.Result)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, c.Request(t, 10+i, tt.method, tt.params))
		})
	}
	// Logged once, though two requests met it.
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "guides/missing.md") {
		t.Errorf("want one warning about the missing file, got %d:\n%s", n, logs.String())
	}
}
