package review_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/review"
	"github.com/flowyprompt/flowyprompt/templates"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"equal texts have no diff", "a\nb\n", "a\nb\n", ""},
		{"a changed line", "a\nb\nc\n", "a\nB\nc\n", "--- v1\n+++ v2\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"an added line", "a\n", "a\nb\n", "--- v1\n+++ v2\n@@ -1 +1,2 @@\n a\n+b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, review.Unified("v1", "v2", tt.from, tt.to)); diff != "" {
				t.Errorf("Unified (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExamples(t *testing.T) {
	def := "formal"
	tests := []struct {
		name string
		tpl  templates.Template
		want map[string]string
	}{
		{"the first test's arguments win", templates.Template{
			Variables: []templates.Variable{{Name: "tone", Default: &def}},
			Tests:     []templates.Test{{Name: "one", Arguments: map[string]string{"tone": "warm"}}, {Name: "two", Arguments: map[string]string{"tone": "cold"}}},
		}, map[string]string{"tone": "warm"}},
		{"defaults, then first examples", templates.Template{
			Variables: []templates.Variable{{Name: "tone", Default: &def, Examples: []string{"x"}}, {Name: "topic", Examples: []string{"Go", "Rust"}}, {Name: "bare"}},
		}, map[string]string{"tone": "formal", "topic": "Go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, review.Examples(&tt.tpl)); diff != "" {
				t.Errorf("Examples (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderedUsesTheExamples(t *testing.T) {
	src := `{"metadata":{"name":"Greet","version":"1.0.0","description":"Greets someone by name."},
"variables":[{"name":"who","type":"string","required":false,"description":"whom to greet","examples":["Ada"]}],
"results":[{"name":"Task","content":"Say hello to {{who}}.","format":"markdown","order":1}]}`
	tpl, _, err := templates.Parse([]byte(src), templates.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := review.Rendered(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "Say hello to Ada.") {
		t.Errorf("rendered %q, want the example value Ada in it", got)
	}
}
