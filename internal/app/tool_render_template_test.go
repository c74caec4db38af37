package app_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestRenderMisspeltArgument: an argument that looks like one of the
// template's variables is refused with the variable it most likely
// meant, as `flowyprompt render` warns of it, instead of the prompt being
// rendered with the default; one like no variable is only named.
func TestRenderMisspeltArgument(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name        string
		args        map[string]string
		isErr       bool
		contains    []string
		suggestions []string
	}{
		{"a misspelt variable", map[string]string{"code": "x", "langauge": "Go"}, true,
			[]string{"INVALID_ARGUMENT", `langauge (did you mean "language"?)`, "code, purpose, language, focus", `rename "langauge" to "language"`},
			[]string{"language"}},
		{"two of them", map[string]string{"code": "x", "langauge": "Go", "focsu": "bugs"}, true,
			[]string{`focsu (did you mean "focus"?), langauge (did you mean "language"?)`}, []string{"focus", "language"}},
		{"an argument like no variable", map[string]string{"code": "x", "colour": "red"}, false,
			[]string{"Ignored arguments that name no variable: colour"}, nil},
	}
	for i, tt := range tests {
		res := call(t, c, i+1, "flowyprompt_render_template", map[string]any{"name": "Code_Review", "arguments": tt.args})
		text := res.Content[0].Text
		if res.IsError != tt.isErr {
			t.Errorf("%s: isError = %t, want %t:\n%s", tt.name, res.IsError, tt.isErr, text)
			continue
		}
		for _, s := range tt.contains {
			if !strings.Contains(text, s) {
				t.Errorf("%s: no %q in:\n%s", tt.name, s, text)
			}
		}
		if tt.isErr {
			var got []string
			for _, s := range res.StructuredContent["suggestions"].([]any) {
				got = append(got, s.(string))
			}
			if !slices.Equal(got, tt.suggestions) {
				t.Errorf("%s: suggestions %v, want %v", tt.name, got, tt.suggestions)
			}
		}
	}
}
