package app_test

import (
	"encoding/json"
	"regexp"
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

// TestResultSizes holds the sizes every client pays for in its context
// below ceilings, so they grow only knowingly, and logs them (the closing
// note of issue 13 reports them: go test ./internal/app -run
// TestResultSizes -v).
func TestResultSizes(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	// tools/list was 19.5 KB before flowyprompt_template_history: that
	// tool (1.8 KB with its output and error schemas, the smallest of the
	// read tools) and the version argument of get and render (0.3 KB)
	// take it to 21.6 KB. Versions are a tool of their own rather than a
	// mode of get because a history is a list with its own result shape
	// and cost; the ceiling moves by what that costs and no more. The two
	// flow tools took it to 24.9 KB, more than half of that the error
	// shape each output schema carried; the error's properties are no
	// longer copied into every tool's schema (2.3 KB less), and with the
	// flow list (start_flow without a name) it is 23.0 KB. They are two
	// tools, not a mode of render, because a flow's handle and steps are
	// a state and a result shape render has no place for.
	// flowyprompt_diff_template (issue 26) takes it from 23,376 to
	// 25,039 bytes: 1.7 KB, less than the history tool, its texts cut to
	// the fields a model needs (from and to say what they take once; the
	// output schema describes a side once). It is a tool of its own, not
	// a mode of get, because its result is two diffs and two resolved
	// sides, a shape get has no place for; the ceiling moves by what it
	// costs and no more. A side's absent (a template only one side has)
	// adds 28 bytes, 25,067.
	const toolsListCeiling, listCeiling = 25_100, 25_000
	m := c.Request(t, 1, "tools/list", nil)
	t.Logf("tools/list result: %d bytes", len(m.Result))
	if len(m.Result) > toolsListCeiling {
		t.Errorf("tools/list is %d bytes, over %d: every client carries it", len(m.Result), toolsListCeiling)
	}
	res := call(t, c, 2, "flowyprompt_list_templates", map[string]any{})
	sc, _ := json.Marshal(res.StructuredContent)
	t.Logf("flowyprompt_list_templates {}: %d bytes (text %d bytes, structuredContent %d bytes)", len(res.raw), len(res.Content[0].Text), len(sc))
	if len(res.raw) > listCeiling {
		t.Errorf("the list tool's default result is %d bytes, over %d", len(res.raw), listCeiling)
	}
}

// TestEnumValuesAreEnforced: a value outside a variable's enum is refused,
// by the render tool and prompts/get alike, with the allowed values.
func TestEnumValuesAreEnforced(t *testing.T) {
	t.Parallel()
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

// nextCall reads the "Next page" line of a result's text, as a model
// would, and returns the arguments it shows.
func nextCall(t *testing.T, text, tool string) (map[string]any, bool) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^- Next page: ` + tool + `\((.*)\)$`).FindStringSubmatch(text)
	if line == nil {
		return nil, false
	}
	args := map[string]any{}
	for _, kv := range regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\d+)`).FindAllStringSubmatch(line[1], -1) {
		var v any
		if err := json.Unmarshal([]byte(kv[2]), &v); err != nil {
			t.Fatalf("next page argument %s: %v", kv[0], err)
		}
		args[kv[1]] = v
	}
	return args, true
}

// TestPaginationAsWritten: calling the "Next page" line exactly as shown
// walks every page, for the list and the search tool; a cursor used with
// other filters is INVALID_CURSOR naming them.
func TestPaginationAsWritten(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	id := 0
	cases := []struct {
		tool  string
		first map[string]any
		items string
	}{
		{"flowyprompt_list_templates", map[string]any{"tag": "GIT", "limit": 1}, "templates"},
		{"flowyprompt_list_templates", map[string]any{"category": "engineering", "limit": 2}, "templates"},
		{"flowyprompt_search_templates", map[string]any{"query": "review", "limit": 2}, "matches"},
		{"flowyprompt_search_templates", map[string]any{"query": "review", "tag": "code-review", "limit": 1}, "matches"},
	}
	for _, tc := range cases {
		args := tc.first
		seen := map[string]bool{}
		total, pages := -1, 0
		var cursor string
		for {
			id++
			res := call(t, c, id, tc.tool, args)
			if res.IsError {
				t.Fatalf("%s %v: %s", tc.tool, args, res.Content[0].Text)
			}
			pages++
			sc := res.StructuredContent
			items := sc[tc.items].([]any)
			if sc["returned"] != float64(len(items)) {
				t.Errorf("%s %v: returned %v, %d items", tc.tool, args, sc["returned"], len(items))
			}
			total = int(sc["total"].(float64))
			for _, it := range items {
				name := it.(map[string]any)["name"].(string)
				if seen[name] {
					t.Errorf("%s: %s on two pages", tc.tool, name)
				}
				seen[name] = true
			}
			next, ok := nextCall(t, res.Content[0].Text, tc.tool)
			if nc, _ := sc["next_cursor"].(string); (nc != "") != ok || (ok && next["cursor"] != nc) {
				t.Fatalf("%s %v: next_cursor %q, next page line %v", tc.tool, args, nc, next)
			}
			if !ok {
				break
			}
			for k, v := range tc.first {
				if next[k] != v && !(k == "limit" && next[k] == float64(v.(int))) {
					t.Errorf("%s: the next page line drops %s=%v: %v", tc.tool, k, v, next)
				}
			}
			cursor = next["cursor"].(string)
			args = next
		}
		if len(seen) != total || pages < 2 {
			t.Errorf("%s %v: %d pages saw %d of %d", tc.tool, tc.first, pages, len(seen), total)
		}
		// The same cursor with another filter is refused, naming both.
		other := map[string]any{"cursor": cursor, "tag": "nope"}
		if tc.tool == "flowyprompt_search_templates" {
			other["query"] = "other words"
		}
		id++
		res := call(t, c, id, tc.tool, other)
		text := res.Content[0].Text
		if !res.IsError || !strings.Contains(text, "INVALID_CURSOR") || !strings.Contains(text, `"nope"`) {
			t.Errorf("%s with a cursor and other filters:\n%s", tc.tool, text)
		}
	}
}

// TestValidateResultMatchesDescription: what flowyprompt_validate_template
// returns is what its description and output schema say: every field of
// its structuredContent is in both, the description promises nothing the
// result lacks, and the text names an invalid file's code.
func TestValidateResultMatchesDescription(t *testing.T) {
	t.Parallel()
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
