package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

type count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func counts(t *testing.T, sc map[string]any, key string) []count {
	t.Helper()
	raw, ok := sc[key]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var out []count
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %s", key, b)
	}
	return out
}

// TestListCounts: counts=true adds how many matching templates each
// category and tag has, most first, in the text and structuredContent
// (issue 13, item 14).
func TestListCounts(t *testing.T) {
	t.Parallel()
	e, _, lib := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	// What the counts should be, from the catalog.
	want := func(tag string) (map[string]int, map[string]int) {
		cats, tags := map[string]int{}, map[string]int{}
		for _, en := range lib.Catalog().Templates() {
			m := en.Template.Metadata
			if tag != "" && !strings.Contains(","+strings.Join(m.Tags, ",")+",", ","+tag+",") {
				continue
			}
			if m.Category != "" {
				cats[m.Category]++
			}
			for _, tg := range m.Tags {
				tags[tg]++
			}
		}
		return cats, tags
	}
	asMap := func(cs []count) map[string]int {
		m := map[string]int{}
		for _, c := range cs {
			m[c.Name] = c.Count
		}
		return m
	}
	tests := []struct {
		name string
		args map[string]any
		tag  string
	}{
		{"whole library", map[string]any{"counts": true, "limit": 1}, ""},
		{"within a filter", map[string]any{"counts": true, "tag": "git"}, "git"},
	}
	for i, tt := range tests {
		res := call(t, c, i+1, "flowyprompt_list_templates", tt.args)
		if res.IsError {
			t.Fatalf("%s: %s", tt.name, res.Content[0].Text)
		}
		wantCats, wantTags := want(tt.tag)
		gotCats, gotTags := counts(t, res.StructuredContent, "categories"), counts(t, res.StructuredContent, "tags")
		if diff := cmp.Diff(wantCats, asMap(gotCats)); diff != "" {
			t.Errorf("%s: categories (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(wantTags, asMap(gotTags)); diff != "" {
			t.Errorf("%s: tags (-want +got):\n%s", tt.name, diff)
		}
		for j := 1; j < len(gotTags); j++ {
			if gotTags[j].Count > gotTags[j-1].Count {
				t.Errorf("%s: tags not most first: %v", tt.name, gotTags)
			}
		}
		text := res.Content[0].Text
		for cat, n := range wantCats {
			if !strings.Contains(text, fmt.Sprintf("%s (%d)", cat, n)) {
				t.Errorf("%s: text lacks %s (%d):\n%s", tt.name, cat, n, text)
			}
		}
		if !strings.Contains(text, "## Categories") || !strings.Contains(text, "## Tags") {
			t.Errorf("%s: text lacks the counts' sections:\n%s", tt.name, text)
		}
	}
	// Without counts=true the result has none.
	res := call(t, c, 10, "flowyprompt_list_templates", map[string]any{})
	if _, ok := res.StructuredContent["categories"]; ok || strings.Contains(res.Content[0].Text, "## Categories") {
		t.Errorf("counts without counts=true")
	}
}

// TestListCountsWithinBudget: a library with hundreds of long tags keeps
// its counts, and the page, within the result budget: the most common
// come first, the rest are counted as left out.
func TestListCountsWithinBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 300 {
		name := fmt.Sprintf("T_%03d", i)
		tag := fmt.Sprintf("tag-%03d-%s", i, strings.Repeat("x", 80))
		files[name+".json"] = fmt.Sprintf(`{"metadata":{"name":%q,"description":%q,"version":"1.0.0","category":"Category %03d %s","tags":[%q,"common"]},`+
			`"variables":[],"results":[{"name":"s","content":"x"}]}`, name, strings.Repeat("d", 900), i, strings.Repeat("y", 60), tag)
	}
	testfiles.Write(t, dir, files)
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	res := call(t, c, 1, "flowyprompt_list_templates", map[string]any{"counts": true, "limit": 100})
	sc, _ := json.Marshal(res.StructuredContent)
	if size := utf8.RuneCountInString(res.Content[0].Text) + utf8.RuneCount(sc); size > 100_000 {
		t.Errorf("%d characters, over the budget", size)
	}
	tags := counts(t, res.StructuredContent, "tags")
	if len(tags) == 0 || tags[0] != (count{"common", 300}) || len(tags) >= 301 {
		t.Errorf("tags: %d, first %v", len(tags), tags[:min(1, len(tags))])
	}
	if res.StructuredContent["counts_truncated"] != true || !strings.Contains(res.Content[0].Text, "more tags") {
		t.Errorf("counts cut short without saying so: %v", res.StructuredContent["counts_truncated"])
	}
}
