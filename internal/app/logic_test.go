package app_test

import (
	"path/filepath"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestLogicGolden serves the library of testdata/logic (templates with
// optional sections, lists and partials, a conversation using them, and
// one including a cycle of partials) through prompts/get and the render
// tool, and compares every answer with the golden file (as JSON).
func TestLogicGolden(t *testing.T) {
	t.Parallel()
	e, _ := newDirEngine(t, filepath.Join("testdata", "logic"))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.Version20250618)
	full := map[string]string{"topic": "the cache", "context": "It leaks under load.", "files": `["cache.go", "cache_test.go"]`, "strict": "true"}
	bare := map[string]string{"topic": "the cache"}
	standup := map[string]string{"done": "Fixed the cache\nWrote its test"}
	render := func(name string, args map[string]string) map[string]any {
		return map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": name, "arguments": args}}
	}
	cases := []exchange{
		{"prompts/list", "prompts/list", nil},
		{"prompts/get sections given", "prompts/get", map[string]any{"name": "Review_Brief", "arguments": full}},
		{"prompts/get sections left out", "prompts/get", map[string]any{"name": "Review_Brief", "arguments": bare}},
		{"prompts/get a list by lines", "prompts/get", map[string]any{"name": "Review_Brief",
			"arguments": map[string]string{"topic": "t", "files": "a.go\nb.go", "strict": "false"}}},
		{"prompts/get a value with braces", "prompts/get", map[string]any{"name": "Review_Brief",
			"arguments": map[string]string{"topic": "{{context}}", "files": `["{{> house_style}}"]`, "context": "{{#if strict}}"}}},
		{"prompts/get not a list", "prompts/get", map[string]any{"name": "Review_Brief", "arguments": map[string]string{"topic": "t", "files": "[1, 2]"}}},
		{"prompts/get not a boolean", "prompts/get", map[string]any{"name": "Review_Brief", "arguments": map[string]string{"topic": "t", "strict": "maybe"}}},
		{"prompts/get conversation", "prompts/get", map[string]any{"name": "Standup_Chat", "arguments": standup}},
		{"prompts/get a cycle of partials", "prompts/get", map[string]any{"name": "Cyclic"}},
		{"render sections given", "tools/call", render("Review_Brief", full)},
		{"render sections left out", "tools/call", render("Review_Brief", bare)},
		{"render conversation", "tools/call", render("Standup_Chat", map[string]string{"done": `["Fixed the cache"]`, "blocked": "review"})},
		{"validate an unclosed block", "tools/call", map[string]any{"name": "flowyprompt_validate_template",
			"arguments": map[string]any{"template": `{"metadata":{"name":"Open","description":"d","version":"1.0.0"},` +
				`"variables":[{"name":"x","type":"string","description":"d"},{"name":"items","type":"string","description":"d"}],` +
				`"results":[{"name":"S","content":"Intro\n{{#if x}}\n{{x}}\n{{#each items}}{{this}}{{/each}}\n{{#if ghost}}!{{/if}}"}]}`}}},
	}
	golden.JSON(t, filepath.Join("testdata", "logic.golden.json"), answers(t, c, cases))
}
