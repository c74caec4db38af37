package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type toolCallResult struct {
	Content           []mcp.Content  `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

// TestRenderToolAttachesResources: the render tool returns the template's
// resources as prompts/get does, as embedded resources after the text and
// named in structuredContent, within the result budget.
func TestRenderToolAttachesResources(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("y", 60_000)
	writeFiles(t, dir, map[string]string{
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
			var res toolCallResult
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
