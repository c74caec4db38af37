package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// toolResult is a tools/call result as a client decodes it.
type toolResult struct {
	Content           []mcp.Content  `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	raw               json.RawMessage
}

func call(t *testing.T, c *mcptest.Client, id int, name string, args any) toolResult {
	t.Helper()
	m := c.Request(t, id, "tools/call", map[string]any{"name": name, "arguments": args})
	if m.Error != nil {
		t.Fatalf("%s: %s", name, m.Raw)
	}
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("%s: %.500s", name, m.Raw)
	}
	res.raw = m.Result
	return res
}

// TestResultSizes logs the sizes the closing note of issue 13 reports:
// go test ./internal/app -run TestResultSizes -v
func TestResultSizes(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "tools/list", nil)
	t.Logf("tools/list result: %d bytes", len(m.Result))
	res := call(t, c, 2, "flowyprompt_list_templates", map[string]any{})
	sc, _ := json.Marshal(res.StructuredContent)
	t.Logf("flowyprompt_list_templates {}: %d bytes (text %d bytes, structuredContent %d bytes)", len(res.raw), len(res.Content[0].Text), len(sc))
	_ = strings.TrimSpace
}

// TestEnumValuesAreEnforced: a value outside a variable's enum is refused,
// by the render tool and prompts/get alike, with the allowed values.
func TestEnumValuesAreEnforced(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	cases := []struct {
		focus  string
		refuse bool
	}{
		{"speed", true},
		{"Security", true}, // enum values are matched exactly; the error suggests "security"
		{"security", false},
		{"", false}, // empty counts as not given: the default applies
	}
	for i, tc := range cases {
		args := map[string]string{"code": "x", "focus": tc.focus}
		res := call(t, c, 10*i+1, "flowyprompt_render_template", map[string]any{"name": "Code_Review", "arguments": args})
		text := res.Content[0].Text
		if res.IsError != tc.refuse {
			t.Errorf("render focus=%q: isError %v, want %v\n%s", tc.focus, res.IsError, tc.refuse, text)
			continue
		}
		m := c.Request(t, 10*i+2, "prompts/get", map[string]any{"name": "Code_Review", "arguments": args})
		if (m.Error != nil) != tc.refuse {
			t.Errorf("prompts/get focus=%q: %s", tc.focus, m.Raw)
		}
		if !tc.refuse {
			continue
		}
		for _, want := range []string{"INVALID_ARGUMENT", "focus", "overall, correctness, security, performance, readability, tests"} {
			if !strings.Contains(text, want) {
				t.Errorf("render focus=%q: the error does not say %q:\n%s", tc.focus, want, text)
			}
		}
		if m.Error.Data.Code != "INVALID_ARGUMENT" || !strings.Contains(m.Error.Message+m.Error.Data.How, "overall") {
			t.Errorf("prompts/get focus=%q: %s", tc.focus, m.Raw)
		}
	}
}
