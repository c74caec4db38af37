package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// bigTemplate is a template near the size limit: a long description,
// many variables with long descriptions and enums, and long sections.
func bigTemplate(t *testing.T, name string) string {
	t.Helper()
	words := strings.Repeat("budget filler words ", 300) // 6,000 characters
	var vars []map[string]any
	vars = append(vars, map[string]any{"name": "v00", "type": "string", "description": words[:1500], "required": true})
	for i := 1; i < 20; i++ {
		vars = append(vars, map[string]any{"name": fmt.Sprintf("v%02d", i), "type": "string", "description": words[:1500],
			"default": "a", "enum": []string{"a", "b", "c", "d", "e", "f", "g", "h"}})
	}
	var content strings.Builder
	for i := range vars {
		fmt.Fprintf(&content, "{{v%02d}}\n", i)
	}
	content.WriteString(strings.Repeat(words+"\n", 8))
	doc := map[string]any{
		"metadata":  map[string]any{"name": name, "description": words, "version": "1.0.0", "category": "Budget", "tags": []string{"budget", "big", "filler"}},
		"variables": vars,
		"results":   []map[string]any{{"name": "s", "content": content.String()}},
	}
	return string(mustJSON(t, doc))
}

// TestNoResultExceedsTheBudget: with 120 large templates, no tool result,
// its text and structuredContent together, exceeds the budget; a result
// cut short says truncated and how to get the rest.
func TestNoResultExceedsTheBudget(t *testing.T) {
	t.Parallel()
	const budget = 100_000 // characters, text and structuredContent's JSON together (TOOLS.md)
	dir := t.TempDir()
	for i := range 120 {
		name := fmt.Sprintf("Big_%03d", i)
		writeTemplate(t, dir, name, bigTemplate(t, name))
	}
	// A template whose variables' descriptions fill most of the file.
	wordy := map[string]any{"metadata": map[string]any{"name": "Wordy", "description": "Wordy", "version": "1.0.0"},
		"results": []map[string]any{{"name": "s", "content": "{{v00}}"}}}
	var vars []map[string]any
	for i := range 30 {
		vars = append(vars, map[string]any{"name": fmt.Sprintf("v%02d", i), "type": "string",
			"description": strings.Repeat("d", 2800), "examples": []string{strings.Repeat("e", 200)}})
	}
	wordy["variables"] = vars
	writeTemplate(t, dir, "Wordy", string(mustJSON(t, wordy)))
	e, lib := newDirEngine(t, dir)
	if n := lib.Catalog().Len(); n != 121 {
		t.Fatalf("loaded %d templates: %v", n, lib.Catalog().Invalid())
	}
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	long := strings.Repeat("é", 10_000)
	renderArgs := map[string]string{"v00": long}
	for i := 1; i < 12; i++ {
		renderArgs[fmt.Sprintf("extra%02d", i)] = long // unknown arguments are echoed too
	}
	cases := []struct {
		tool string
		args map[string]any
		more bool // the result is cut short and must say how to get the rest
	}{
		{"flowyprompt_list_templates", map[string]any{}, true},
		{"flowyprompt_list_templates", map[string]any{"limit": 100}, true},
		{"flowyprompt_search_templates", map[string]any{"query": "budget", "limit": 50}, true},
		{"flowyprompt_search_templates", map[string]any{"query": "filler"}, true},
		{"flowyprompt_get_template", map[string]any{"name": "Big_007"}, false},
		{"flowyprompt_get_template", map[string]any{"name": "Wordy"}, true},
		{"flowyprompt_render_template", map[string]any{"name": "Big_007", "arguments": renderArgs}, true},
		{"flowyprompt_validate_template", map[string]any{"template": bigTemplate(t, "Big_new")}, false},
		{"flowyprompt_refresh_templates", map[string]any{}, false},
	}
	for i, tc := range cases {
		res := call(t, c, i+1, tc.tool, tc.args)
		if res.IsError {
			t.Errorf("%s: %s", tc.tool, res.Content[0].Text)
			continue
		}
		sc, _ := json.Marshal(res.StructuredContent)
		text := res.Content[0].Text
		size := utf8.RuneCountInString(text) + utf8.RuneCount(sc)
		t.Logf("%s %v: %d characters (text %d, structuredContent %d); %d bytes", tc.tool, tc.args["limit"], size,
			utf8.RuneCountInString(text), utf8.RuneCount(sc), len(res.raw))
		if size > budget {
			t.Errorf("%s: %d characters, over the %d budget", tc.tool, size, budget)
		}
		if tc.more && (res.StructuredContent["truncated"] != true || !strings.Contains(text, "Truncated")) {
			t.Errorf("%s: cut short without saying so: truncated=%v", tc.tool, res.StructuredContent["truncated"])
		}
	}
}
