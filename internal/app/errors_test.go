package app_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/xeipuuv/gojsonschema"
)

// TestToolErrorsModelsCanBranchOn: a failed tool call carries its error
// as structuredContent too ({code, what, why, how, suggestions, problems,
// retryable, retry_after}), valid against the tool's outputSchema (the
// TypeScript SDK checks structuredContent even when isError); an invalid
// argument names the field's format and an example; "did you mean" covers
// template names, categories, tags and search words.
func TestToolErrorsModelsCanBranchOn(t *testing.T) {
	t.Parallel()
	e, a, _ := newEngine(t, templates.Embedded())
	schemas := outputSchemas(t, a)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	cases := []struct {
		tool     string
		args     map[string]any
		isError  bool
		code     string
		text     []string // in the text
		problems []string // in structuredContent.problems
		suggest  string   // in structuredContent.suggestions
	}{
		{tool: "flowyprompt_get_template", args: map[string]any{"name": "Comit_Message"}, isError: true, code: "TEMPLATE_NOT_FOUND",
			suggest: "Commit_Message"},
		{tool: "flowyprompt_list_templates", args: map[string]any{"limit": 1000}, isError: true, code: "INVALID_ARGUMENT",
			text: []string{"limit", "integer 1–100", "20"}, problems: []string{"limit: ", "expected integer 1–100, e.g. 20"}},
		{tool: "flowyprompt_render_template", args: map[string]any{"name": "bad name!"}, isError: true, code: "INVALID_ARGUMENT",
			problems: []string{"name: ", "e.g. "}},
		{tool: "flowyprompt_render_template", args: map[string]any{"name": "Code_Review"}, isError: true, code: "MISSING_REQUIRED_VARIABLE"},
		{tool: "flowyprompt_render_template", args: map[string]any{"name": "Code_Review", "arguments": map[string]string{"code": "x", "focus": "securty"}},
			isError: true, code: "INVALID_ARGUMENT", text: []string{"overall, correctness"}},
		{tool: "flowyprompt_list_templates", args: map[string]any{"category": "Engg"}, text: []string{"Did you mean", "Engineering"}, suggest: "category Engineering"},
		{tool: "flowyprompt_list_templates", args: map[string]any{"tag": "gti"}, text: []string{"Did you mean", "git"}, suggest: "tag git"},
		{tool: "flowyprompt_search_templates", args: map[string]any{"query": "comit"}, text: []string{"Did you mean", "Commit_Message"}, suggest: "Commit_Message"},
		{tool: "flowyprompt_search_templates", args: map[string]any{"query": "commit", "tag": "gti"}, text: []string{"Did you mean", `tag="git"`}, suggest: "tag git"},
		{tool: "flowyprompt_search_templates", args: map[string]any{"query": "reveiw"}, text: []string{"Did you mean", "review"}, suggest: "review"},
	}
	for i, tc := range cases {
		res := call(t, c, i+1, tc.tool, tc.args)
		text := res.Content[0].Text
		sc := res.StructuredContent
		if res.IsError != tc.isError {
			t.Errorf("%s %v: isError %v\n%s", tc.tool, tc.args, res.IsError, text)
			continue
		}
		if sc == nil {
			t.Errorf("%s %v: no structuredContent\n%s", tc.tool, tc.args, text)
			continue
		}
		if r, err := schemas[tc.tool].Validate(gojsonschema.NewGoLoader(sc)); err != nil || !r.Valid() {
			t.Errorf("%s %v: structuredContent violates outputSchema: %v %v", tc.tool, tc.args, err, r.Errors())
		}
		for _, want := range tc.text {
			if !strings.Contains(text, want) {
				t.Errorf("%s %v: the text does not say %q:\n%s", tc.tool, tc.args, want, text)
			}
		}
		strs := func(key string) []string {
			var out []string
			list, _ := sc[key].([]any)
			for _, v := range list {
				s, _ := v.(string)
				out = append(out, s)
			}
			return out
		}
		if tc.suggest != "" && !slices.Contains(strs("suggestions"), tc.suggest) {
			t.Errorf("%s %v: suggestions %v, want %q among them", tc.tool, tc.args, sc["suggestions"], tc.suggest)
		}
		if !tc.isError {
			continue
		}
		if sc["code"] != tc.code || sc["what"] == "" || sc["how"] == "" {
			t.Errorf("%s %v: structuredContent %v, want code %s with what and how", tc.tool, tc.args, sc, tc.code)
		}
		if _, ok := sc["retryable"].(bool); !ok {
			t.Errorf("%s %v: no retryable flag: %v", tc.tool, tc.args, sc)
		}
		problems := strings.Join(strs("problems"), "\n")
		for _, want := range tc.problems {
			if !strings.Contains(problems, want) {
				t.Errorf("%s %v: problems %q do not say %q", tc.tool, tc.args, problems, want)
			}
		}
	}
}

// TestGetInvalidTemplateSaysWhy: asking for a template whose file failed
// to load says that the file exists and why it is invalid, instead of
// "none of the templates has metadata.name".
func TestGetInvalidTemplateSaysWhy(t *testing.T) {
	t.Parallel()
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
