package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/templates"
)

// proposer is a writer that proposes, as the GitHub source does: the
// first save opens pull request #7, the next ones update it.
type proposer struct {
	mu    sync.Mutex
	saves int
}

func (p *proposer) SaveTemplate(_ context.Context, name string, _ []byte, _ string) (templates.Saved, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.saves++
	pr := &templates.Proposal{URL: "https://github.com/acme/prompts/pull/7", Number: 7, Branch: "flowyprompt/" + name + "-0a1b2c3d", Updated: p.saves > 1}
	return templates.Saved{Location: pr.URL, Proposal: pr}, nil
}

func (p *proposer) ProposedFile(context.Context, int, string) ([]byte, string, error) {
	return nil, "", nil
}

// TestSaveToolProposes: with a writer that proposes, the answer names the
// pull request (text and structuredContent), says nothing is served until
// it is merged, and the tool is titled and annotated as a proposal, which
// replaces nothing.
func TestSaveToolProposes(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true, Writer: &proposer{}})
	m := c.Request(t, 1, "tools/list", nil)
	var list struct {
		Tools []struct {
			Name, Title string
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "flowyprompt_save_template" && (tool.Title != "Propose a template (pull request)" || tool.Annotations["destructiveHint"] != false) {
			t.Errorf("save tool title %q, annotations %v; want a proposal, not destructive", tool.Title, tool.Annotations)
		}
	}
	tests := []struct {
		name        string
		wantText    []string
		wantUpdated bool
	}{
		{"the first save opens", []string{"Opened pull request #7 proposing template team_hello v1.0.0", "nothing is served until it is merged",
			"## Pull request\nhttps://github.com/acme/prompts/pull/7 (branch flowyprompt/team_hello-0a1b2c3d)"}, false},
		{"the next one updates", []string{"Updated pull request #7 proposing template team_hello", "updates this pull request"}, true},
	}
	for i, tt := range tests {
		text, sc, isErr := callResult(t, c, 10+i, "flowyprompt_save_template", map[string]string{"template": saveTemplate, "message": "add"})
		if isErr {
			t.Fatalf("%s: %s", tt.name, text)
		}
		for _, want := range tt.wantText {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the text lacks %q:\n%s", tt.name, want, text)
			}
		}
		pr, _ := sc["pull_request"].(map[string]any)
		if pr["url"] != "https://github.com/acme/prompts/pull/7" || pr["number"] != float64(7) || pr["branch"] != "flowyprompt/team_hello-0a1b2c3d" ||
			pr["updated"] != tt.wantUpdated || sc["location"] != pr["url"] {
			t.Errorf("%s: structuredContent %v", tt.name, sc)
		}
	}
}
