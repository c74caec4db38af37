package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// TestOversizedValues sends a value 40 times the 10,000-character limit
// down every path that renders or echoes one. Each answer is at most a
// result's budget (no path copies the value, let alone several times),
// and those that render refuse it naming the limit.
func TestOversizedValues(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("+ a line of the diff\n", 4*render.MaxValueLength/20*10)
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	limit := "10000"
	tests := []struct {
		name   string
		method string
		params map[string]any
		want   string // in the answer; "" when the answer need only be small
	}{
		{"prompts/get of a template", mcp.MethodPromptsGet,
			map[string]any{"name": "Code_Review", "arguments": map[string]any{"code": big}}, limit},
		{"prompts/get of a flow", mcp.MethodPromptsGet,
			map[string]any{"name": "flow:ship_a_change", "arguments": map[string]any{"diff": big, "purpose": "p"}}, limit},
		{"the render tool", "tools/call", map[string]any{"name": "flowyprompt_render_template",
			"arguments": map[string]any{"name": "Code_Review", "arguments": map[string]any{"code": big}}}, limit},
		{"start a flow", "tools/call", map[string]any{"name": "flowyprompt_start_flow",
			"arguments": map[string]any{"name": "ship_a_change", "arguments": map[string]any{"diff": big}}}, limit},
		{"read a template resource", "resources/read", map[string]any{"uri": app.TemplateURIPrefix + big}, "not found"},
		{"read a file resource", "resources/read", map[string]any{"uri": app.FileURIPrefix + big}, "unknown resource"},
		{"read another resource", "resources/read", map[string]any{"uri": "other://" + big}, "unknown resource"},
		{"complete an argument", "completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "Code_Review"},
			"argument": map[string]any{"name": "code", "value": big}}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.Request(t, 10+i, tt.method, tt.params)
			t.Logf("%s: %d bytes", tt.name, len(m.Raw))
			if len(m.Raw) > app.ResultBudget {
				t.Errorf("answer of %d bytes, over the result budget of %d: %.300s", len(m.Raw), app.ResultBudget, m.Raw)
			}
			if tt.want != "" && !strings.Contains(string(m.Raw), tt.want) {
				t.Errorf("answer lacks %q: %.500s", tt.want, m.Raw)
			}
		})
	}
}

// TestFlowPromptBudget: a flow's prompt stays within the result budget
// when its values, each within the limit, multiply: a template that uses
// its value twelve times is cut, saying so, and a step whose variable
// joins two copies of a value (over the limit, so described instead of
// rendered) shows the value cut, not whole.
func TestFlowPromptBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	many := strings.Repeat("{{input}} ", 12)
	for name, content := range map[string]string{"echo": many, "plain": "PLAIN {{input}}"} {
		data := fmt.Sprintf(`{"metadata":{"name":%q,"version":"1.0.0","description":"d"},
			"variables":[{"name":"input","type":"string","description":"d","required":true}],
			"results":[{"name":"r","content":%q}]}`, name, content)
		writeTemplate(t, dir, name, data)
	}
	if err := os.Mkdir(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	flow := `{"name":"grow","description":"Grow a value","arguments":[{"name":"topic","description":"t","required":true}],"steps":[
		{"name":"echo","template":"echo","variables":{"input":"{{topic}}"}},
		{"name":"twice","template":"plain","variables":{"input":"{{topic}}{{topic}}"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "flows", "grow.json"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	topic := strings.Repeat("x", render.MaxValueLength)
	m := c.Request(t, 2, mcp.MethodPromptsGet, map[string]any{"name": "flow:grow", "arguments": map[string]any{"topic": topic}})
	if m.Error != nil {
		t.Fatalf("prompts/get: %s", m.Raw)
	}
	t.Logf("flow prompt: %d bytes", len(m.Raw))
	if len(m.Raw) > app.ResultBudget {
		t.Errorf("flow prompt of %d bytes, over the result budget of %d", len(m.Raw), app.ResultBudget)
	}
	for _, w := range []string{"⚠️ Truncated: this step's prompt has 1200", "Run the flow step by step with flowyprompt_start_flow",
		"(20000 characters in all)"} {
		if !strings.Contains(string(m.Raw), w) {
			t.Errorf("flow prompt lacks %q", w)
		}
	}
}

// TestErrorsHideTheFolder: what a client sees of a folder library names
// its files relative to the folder, never the folder's path on the
// server's machine: not found, versions unsupported (a folder in no Git
// work tree), a save's location.
func TestErrorsHideTheFolder(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	writeTemplate(t, dir, "Local_Note", string(sourceTemplate("Local_Note", "local note")))
	src := folder.New(dir, templates.BuildOptions{})
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Version: "test", AllowWrite: true, Writer: src})
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name   string
		method string
		params map[string]any
		want   string
	}{
		{"a template not found", "tools/call", map[string]any{"name": "flowyprompt_get_template", "arguments": map[string]any{"name": "Nope"}},
			"in the template folder"},
		{"a prompt not found", mcp.MethodPromptsGet, map[string]any{"name": "Nope"}, "in the template folder"},
		{"versions unsupported", "tools/call", map[string]any{"name": "flowyprompt_template_history", "arguments": map[string]any{"name": "Local_Note"}},
			"VERSIONS_UNSUPPORTED"},
		{"a save", "tools/call", map[string]any{"name": "flowyprompt_save_template",
			"arguments": map[string]any{"template": string(sourceTemplate("Saved_Note", "saved")), "message": "Add a note"}}, "Saved_Note.json"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.Request(t, 10+i, tt.method, tt.params)
			if !strings.Contains(string(m.Raw), tt.want) {
				t.Errorf("answer lacks %q: %s", tt.want, m.Raw)
			}
			if strings.Contains(string(m.Raw), dir) {
				t.Errorf("answer names the folder %s: %s", dir, m.Raw)
			}
		})
	}
}
