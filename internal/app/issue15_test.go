package app_test

import (
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
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
