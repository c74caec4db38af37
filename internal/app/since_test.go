package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestUpdatedSince: list items carry lastUpdated, and list and search keep
// only the templates updated since a duration ago or a date.
func TestUpdatedSince(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	dir := t.TempDir()
	write := func(name, lastUpdated string) {
		md := fmt.Sprintf(`"name":%q,"description":"Review notes %s","version":"1.0.0"`, name, name)
		if lastUpdated != "" {
			md += fmt.Sprintf(`,"lastUpdated":%q`, lastUpdated)
		}
		body := `{"metadata":{` + md + `},"variables":[],"results":[{"name":"s","content":"Review."}]}`
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recent := now.Add(-2 * 24 * time.Hour).Format(time.RFC3339)
	older := now.Add(-30 * 24 * time.Hour).Format(time.DateOnly)
	write("Recent", recent)
	write("Older", older)
	write("Undated", "")
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	// lastUpdated in the list's items and text.
	text, sc, _ := callResult(t, c, 1, "flowyprompt_list_templates", map[string]any{})
	got := map[string]any{}
	for _, it := range sc["templates"].([]any) {
		m := it.(map[string]any)
		got[m["name"].(string)] = m["lastUpdated"]
	}
	if got["Recent"] != recent || got["Older"] != older || got["Undated"] != nil {
		t.Errorf("lastUpdated: %v", got)
	}
	if !strings.Contains(text, "updated "+older) {
		t.Errorf("list text does not show lastUpdated:\n%s", text)
	}

	tenDaysAgo := now.Add(-10 * 24 * time.Hour).Format(time.DateOnly)
	tests := []struct {
		since string
		want  []string
		isErr bool
	}{
		{"7d", []string{"Recent"}, false},
		{"72h", []string{"Recent"}, false},
		{"1w", []string{"Recent"}, false},
		{"60d", []string{"Older", "Recent"}, false},
		{tenDaysAgo, []string{"Recent"}, false},
		{now.Add(-40 * 24 * time.Hour).Format(time.RFC3339), []string{"Older", "Recent"}, false},
		{"3000-01-01", nil, false},
		{"yesterday", nil, true},
		{"2026-13-01", nil, true},
	}
	for i, tt := range tests {
		for j, tool := range []string{"flowyprompt_list_templates", "flowyprompt_search_templates"} {
			args := map[string]any{"updated_since": tt.since}
			key := "templates"
			if j == 1 {
				args["query"] = "review"
				key = "matches"
			}
			text, sc, isErr := callResult(t, c, 10+2*i+j, tool, args)
			if isErr != tt.isErr {
				t.Errorf("%s %q: isError=%v:\n%s", tool, tt.since, isErr, text)
				continue
			}
			if isErr {
				if !strings.Contains(text, "updated_since") || !strings.Contains(text, "7d") {
					t.Errorf("%s %q: the error does not name the field and its format:\n%s", tool, tt.since, text)
				}
				continue
			}
			var names []string
			items, _ := sc[key].([]any)
			for _, it := range items {
				names = append(names, it.(map[string]any)["name"].(string))
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("%s %q: got %v, want %v", tool, tt.since, names, tt.want)
			}
		}
	}
}
