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
