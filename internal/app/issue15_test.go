package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// TestListTextShowsEnums: the list tool's text names each variable's
// allowed values, as its description promises (issue 13, item 15).
func TestListTextShowsEnums(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	res := call(t, c, 1, "flowyprompt_list_templates", map[string]any{"limit": 100})
	text := res.Content[0].Text
	tests := []struct{ template, want string }{
		{"Code_Review", `focus (default "overall"; one of overall, correctness, security, performance, readability, tests)`},
		{"Commit_Message", `style (default "conventional"; one of conventional, plain)`},
		{"Code_Review", `code (required)`},
	}
	for _, tt := range tests {
		entry := text[strings.Index(text, "**"+tt.template+"**"):]
		entry, _, _ = strings.Cut(entry, "\n\n")
		if !strings.Contains(entry, tt.want) {
			t.Errorf("%s's entry lacks %q:\n%s", tt.template, tt.want, entry)
		}
	}
}

// TestSearchSnippetsDoNotRepeatTheDescription: a match shows its
// description once; the snippet, when there is one, is other text (issue
// 13, item 15).
func TestSearchSnippetsDoNotRepeatTheDescription(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct{ query string }{
		{"prioritized"}, // in Code_Review's description only
		{"commit"},
		{"review"},
		{"Engineering"}, // a category: no text around it
	}
	for i, tt := range tests {
		res := call(t, c, i+1, "flowyprompt_search_templates", map[string]any{"query": tt.query})
		matches, _ := res.StructuredContent["matches"].([]any)
		if len(matches) == 0 {
			t.Errorf("%q: no matches", tt.query)
		}
		for _, m := range matches {
			m := m.(map[string]any)
			snippet, _ := m["snippet"].(string)
			desc, _ := m["description"].(string)
			core := strings.Trim(snippet, "…")
			if snippet != "" && (strings.Contains(strings.Join(strings.Fields(desc), " "), core) || strings.Contains(res.Content[0].Text, "> "+desc)) {
				t.Errorf("%q: %s's snippet repeats its description: %q", tt.query, m["name"], snippet)
			}
		}
	}
}

// TestResourceDescriptionsAreSentences: resources/list describes each
// resource in a sentence (issue 13, item 15).
func TestResourceDescriptionsAreSentences(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"Guided.json": `{"metadata":{"name":"Guided","description":"Writes in house style","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Write it."}],"resources":["guides/style.md","shared.md"]}`,
		"Other.json": `{"metadata":{"name":"Other","description":"Other things.","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Read it."}],"resources":["shared.md"]}`,
		"guides/style.md": "# Style",
		"shared.md":       "shared",
	})
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "resources/list", nil)
	var list mcp.ListResourcesResult
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"template://Guided":                "Writes in house style.",
		"template://Other":                 "Other things.",
		"template-file:///guides/style.md": "A context file that the template Guided lists as a resource.",
		"template-file:///shared.md":       "A context file that the templates Guided and Other list as a resource.",
	}
	got := map[string]string{}
	for _, r := range list.Resources {
		got[r.URI] = r.Description
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources/list descriptions (-want +got):\n%s", diff)
	}
}

// TestGetInvalidTemplateSaysWhy: asking for a template whose file failed
// to load says that the file exists and why it is invalid, instead of
// "none of the templates has metadata.name" (issue 13, item 15).
func TestGetInvalidTemplateSaysWhy(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"Good.json":      `{"metadata":{"name":"Good","description":"Fine.","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`,
		"Broken.json":    `{"metadata":{"name":"Broken","description":"No version."},"variables":[],"results":[{"name":"s","content":"x"}]}`,
		"team/Half.json": `{"metadata":{"name":"Half"`,
	})
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		tool, name string
		want       []string
	}{
		{"flowyprompt_get_template", "Broken", []string{"Broken.json exists but is invalid", "/metadata/version", "flowyprompt_validate_template"}},
		{"flowyprompt_render_template", "Broken", []string{"Broken.json exists but is invalid"}},
		{"flowyprompt_get_template", "Half", []string{"team/Half.json exists but is invalid"}},
	}
	for i, tt := range tests {
		res := call(t, c, i+1, tt.tool, map[string]any{"name": tt.name})
		text := res.Content[0].Text
		if !res.IsError || res.StructuredContent["code"] != "TEMPLATE_NOT_FOUND" {
			t.Errorf("%s %s: want a TEMPLATE_NOT_FOUND error, got %.300s", tt.tool, tt.name, res.raw)
		}
		if strings.Contains(text, "none of the") {
			t.Errorf("%s %s: says no template has the name, though its file is there:\n%s", tt.tool, tt.name, text)
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s: text lacks %q:\n%s", tt.tool, tt.name, w, text)
			}
		}
	}
}

// TestValidateResultMatchesDescription: what flowyprompt_validate_template
// returns is what its description and output schema say: every field of
// its structuredContent is in both, the description promises nothing the
// result lacks, and the text names an invalid file's code (issue 13, item
// 15).
func TestValidateResultMatchesDescription(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "tools/list", nil)
	var list mcp.ListToolsResult
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	var desc string
	var schema struct{ Properties map[string]any }
	for _, tl := range list.Tools {
		if tl.Name == "flowyprompt_validate_template" {
			desc = tl.Description
			if err := json.Unmarshal(tl.OutputSchema, &schema); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, returns, _ := strings.Cut(desc, "RETURNS:")
	returns, _, _ = strings.Cut(returns, "RELATED TOOLS:")
	if strings.Contains(returns, "preview") {
		t.Errorf("the description promises a preview the result does not have:\n%s", returns)
	}
	const valid = `{"metadata":{"name":"Ok","description":"Fine.","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`
	tests := []struct {
		name, template string
		text           []string
	}{
		{"valid", valid, []string{"Valid template Ok"}},
		{"invalid", `{"metadata":{"name":"Bad"}}`, []string{"INVALID_TEMPLATE", "/metadata/version"}},
		{"too large", `{"metadata":{"name":"Big","description":"` + strings.Repeat("x", 110_000) + `"}}`, []string{"TEMPLATE_TOO_LARGE"}},
	}
	for i, tt := range tests {
		res := call(t, c, i+2, "flowyprompt_validate_template", map[string]any{"template": tt.template})
		for k := range res.StructuredContent {
			if _, ok := schema.Properties[k]; !ok {
				t.Errorf("%s: structuredContent.%s is not in the output schema", tt.name, k)
			}
			if !strings.Contains(returns, k) {
				t.Errorf("%s: structuredContent.%s is not in the description's RETURNS:\n%s", tt.name, k, returns)
			}
		}
		for _, w := range tt.text {
			if !strings.Contains(res.Content[0].Text, w) {
				t.Errorf("%s: text lacks %q:\n%.600s", tt.name, w, res.Content[0].Text)
			}
		}
	}
}
