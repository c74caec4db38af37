package app_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// searchNames calls the search tool with args and returns the names it
// found, in order, or the error text.
func searchNames(t *testing.T, c *mcptest.Client, id int, args map[string]any) ([]string, string, bool) {
	t.Helper()
	text, sc, isErr := callResult(t, c, id, "flowyprompt_search_templates", args)
	var names []string
	ms, _ := sc["matches"].([]any)
	for _, m := range ms {
		names = append(names, m.(map[string]any)["name"].(string))
	}
	return names, text, isErr
}

// TestSearchExamplesKeepTheirPromise: every example query the search
// tool's description and schema offer finds a template.
func TestSearchExamplesKeepTheirPromise(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "tools/list", nil)
	type toolDef struct {
		Name        string
		Description string
		InputSchema struct {
			Properties map[string]struct{ Description string } `json:"properties"`
		} `json:"inputSchema"`
	}
	var res struct {
		Tools []toolDef `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(x toolDef) bool { return x.Name == "flowyprompt_search_templates" })
	if i < 0 {
		t.Fatal("no search tool")
	}
	tool := res.Tools[i]
	var queries []string
	// The USE WHEN examples: ("write a commit message", "…").
	if _, use, ok := strings.Cut(tool.Description, "USE WHEN:"); ok {
		use, _, _ = strings.Cut(use, "RETURNS:")
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(use, -1) {
			queries = append(queries, q[1])
		}
	}
	// The query parameter's EXAMPLE line.
	desc := tool.InputSchema.Properties["query"].Description
	if _, ex, ok := strings.Cut(desc, "EXAMPLE:"); ok {
		ex, _, _ = strings.Cut(ex, "\n")
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(ex, -1) {
			queries = append(queries, q[1])
		}
	}
	if len(queries) < 3 {
		t.Fatalf("found only %q as example queries", queries)
	}
	for j, q := range queries {
		names, text, isErr := searchNames(t, c, 10+j, map[string]any{"query": q})
		if isErr || len(names) == 0 {
			t.Errorf("example query %q finds nothing:\n%s", q, text)
		}
	}
}

// TestSearchKorean: a Korean query word matches by its leading syllables,
// so particles and endings ("이메일을", "작성해줘") and compounds do not
// hide a template; the full word still ranks above a shortened one.
func TestSearchKorean(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		query string
		first string // "" for no match
	}{
		{"브랜드", "Brand_Positioning_Strategy"},
		{"브랜드를", "Brand_Positioning_Strategy"},
		{"포지셔닝 전략을", "Brand_Positioning_Strategy"},
		{"업무 이메일 작성해줘", "Korean_Business_Email"},
		{"이메일을", "Korean_Business_Email"},
		{"고객에게 이메일", "Korean_Business_Email"},
		{"회의록 정리", ""}, // no template holds Korean meeting text
		{"쀍쀍쀍", ""},
	}
	for i, tt := range tests {
		names, text, isErr := searchNames(t, c, 10+i, map[string]any{"query": tt.query})
		if isErr {
			t.Errorf("%q: error %s", tt.query, text)
			continue
		}
		switch {
		case tt.first == "" && len(names) > 0:
			t.Errorf("%q: found %v, want nothing", tt.query, names)
		case tt.first != "" && (len(names) == 0 || names[0] != tt.first):
			t.Errorf("%q: found %v, want %s first", tt.query, names, tt.first)
		}
	}
}

// TestSearchCategory: the category filter keeps only templates of that
// category (case-insensitive), as the list tool's does.
func TestSearchCategory(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"query": "review"}, []string{"API_Design_Review", "Code_Review", "SQL_Review"}},
		{map[string]any{"query": "review", "category": "engineering"}, []string{"API_Design_Review", "Code_Review", "Pull_Request_Description", "SQL_Review"}},
		{map[string]any{"query": "notes", "category": "Product"}, []string{"Release_Notes"}},
		{map[string]any{"query": "notes", "category": "Productivity"}, []string{"Meeting_Summary"}},
		{map[string]any{"query": "review", "category": "Nope"}, nil},
	}
	for i, tt := range tests {
		names, text, isErr := searchNames(t, c, 10+i, tt.args)
		if isErr {
			t.Errorf("%v: error %s", tt.args, text)
			continue
		}
		for _, w := range tt.want {
			if !slices.Contains(names, w) {
				t.Errorf("%v: %s missing from %v", tt.args, w, names)
			}
		}
		if tt.args["category"] != nil {
			if len(names) != len(tt.want) {
				t.Errorf("%v: found %v, want only %v", tt.args, names, tt.want)
			}
		}
	}
}

// TestSearchSnippetsDoNotRepeatTheDescription: a match shows its
// description once; the snippet, when there is one, is other text.
func TestSearchSnippetsDoNotRepeatTheDescription(t *testing.T) {
	t.Parallel()
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
