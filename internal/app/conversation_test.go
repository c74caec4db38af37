package app_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// TestConversationGolden serves the conversation templates of
// testdata/conversations (one of messages only, one of results and
// messages) through prompts/get and the render tool, and compares every
// answer with the golden file (as JSON).
func TestConversationGolden(t *testing.T) {
	t.Parallel()
	e, _ := newDirEngine(t, filepath.Join("testdata", "conversations"))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.Version20250618)
	tutor := map[string]string{"topic": "DNS"}
	triage := map[string]string{"report": "The app crashes on start.", "component": "launcher"}
	cases := []exchange{
		{"prompts/list", "prompts/list", nil},
		{"prompts/get Socratic_Tutor", "prompts/get", map[string]any{"name": "Socratic_Tutor", "arguments": tutor}},
		{"prompts/get Bug_Triage", "prompts/get", map[string]any{"name": "Bug_Triage", "arguments": triage}},
		{"prompts/get missing required", "prompts/get", map[string]any{"name": "Socratic_Tutor"}},
		{"render Socratic_Tutor", "tools/call", map[string]any{"name": "flowyprompt_render_template",
			"arguments": map[string]any{"name": "Socratic_Tutor", "arguments": map[string]string{"topic": "DNS", "level": "expert"}}}},
		{"render Bug_Triage", "tools/call", map[string]any{"name": "flowyprompt_render_template",
			"arguments": map[string]any{"name": "Bug_Triage", "arguments": triage}}},
		{"get_template Socratic_Tutor", "tools/call", map[string]any{"name": "flowyprompt_get_template",
			"arguments": map[string]any{"name": "Socratic_Tutor"}}},
		{"search in messages", "tools/call", map[string]any{"name": "flowyprompt_search_templates",
			"arguments": map[string]any{"query": "lecturing"}}},
		{"validate bad messages", "tools/call", map[string]any{"name": "flowyprompt_validate_template",
			"arguments": map[string]any{"template": `{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},` +
				`"variables":[{"name":"q","type":"string","description":"d","required":true}],` +
				`"messages":[{"role":"user","content":"{{q}} {{ghost}}"},{"role":"system","content":"Be brief."},{"role":"assistant","content":""}]}`}}},
	}
	golden.JSON(t, filepath.Join("testdata", "conversation.golden.json"), answers(t, c, cases))
}

// TestConversationMessages: prompts/get sends a conversation's messages in
// order with their roles, the results' text first; the render tool's
// structuredContent has the same messages, and its text is their
// transcript.
func TestConversationMessages(t *testing.T) {
	t.Parallel()
	e, _ := newDirEngine(t, filepath.Join("testdata", "conversations"))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name  string
		args  map[string]string
		roles []string
		first string // the start of the first message
	}{
		{"Socratic_Tutor", map[string]string{"topic": "DNS"}, []string{"user", "assistant", "user"}, "Teach me DNS. My level: beginner."},
		{"Bug_Triage", map[string]string{"report": "R", "component": "C"}, []string{"user", "user", "assistant", "user"}, "# Bug_Triage\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.Request(t, 10*i+1, "prompts/get", map[string]any{"name": tt.name, "arguments": tt.args})
			if m.Error != nil {
				t.Fatalf("prompts/get: %s", m.Raw)
			}
			var res mcp.GetPromptResult
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatal(err)
			}
			var roles, texts []string
			for _, msg := range res.Messages {
				if msg.Content.Type != "text" {
					t.Errorf("content type %q, want text", msg.Content.Type)
				}
				roles = append(roles, msg.Role)
				texts = append(texts, msg.Content.Text)
			}
			if diff := cmp.Diff(tt.roles, roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			if len(texts) == 0 || !strings.HasPrefix(texts[0], tt.first) {
				t.Errorf("first message %q, want it to start %q", texts, tt.first)
			}

			r := call(t, c, 10*i+2, "flowyprompt_render_template", map[string]any{"name": tt.name, "arguments": tt.args})
			if r.IsError {
				t.Fatalf("render: %s", r.Content[0].Text)
			}
			var structured struct {
				Text     string `json:"text"`
				Messages []struct {
					Role string `json:"role"`
					Text string `json:"text"`
				} `json:"messages"`
			}
			raw, _ := json.Marshal(r.StructuredContent)
			if err := json.Unmarshal(raw, &structured); err != nil {
				t.Fatal(err)
			}
			var sRoles, sTexts []string
			var transcript strings.Builder
			for j, msg := range structured.Messages {
				sRoles = append(sRoles, msg.Role)
				sTexts = append(sTexts, msg.Text)
				if j > 0 {
					transcript.WriteString("\n\n")
				}
				heading := map[string]string{"user": "User", "assistant": "Assistant"}[msg.Role]
				fmt.Fprintf(&transcript, "## %s\n\n%s", heading, msg.Text)
			}
			if diff := cmp.Diff(roles, sRoles); diff != "" {
				t.Errorf("render tool roles differ from prompts/get's (-prompts/get +tool):\n%s", diff)
			}
			if diff := cmp.Diff(texts, sTexts); diff != "" {
				t.Errorf("render tool texts differ from prompts/get's (-prompts/get +tool):\n%s", diff)
			}
			if structured.Text != transcript.String() {
				t.Errorf("structuredContent.text %q is not the messages' transcript %q", structured.Text, transcript.String())
			}
			if !strings.Contains(r.Content[0].Text, "<<<PROMPT\n"+transcript.String()+"\nPROMPT>>>") {
				t.Errorf("the report does not carry the transcript:\n%s", r.Content[0].Text)
			}
		})
	}
}

// TestConversationWithinTheBudget: a conversation too long for one tool
// result is cut, messages and transcript alike, and says so; prompts/get
// sends it whole.
func TestConversationWithinTheBudget(t *testing.T) {
	t.Parallel()
	const budget = 100_000
	dir := t.TempDir()
	var msgs []map[string]any
	for i := range 12 {
		role := []string{"user", "assistant"}[i%2]
		msgs = append(msgs, map[string]any{"role": role, "content": fmt.Sprintf("Turn %d: {{a}}\n{{b}}", i)})
	}
	writeTemplate(t, dir, "Long_Chat", string(mustJSON(t, map[string]any{
		"metadata": map[string]any{"name": "Long_Chat", "description": "d", "version": "1.0.0"},
		"variables": []map[string]any{{"name": "a", "type": "string", "description": "d", "required": true},
			{"name": "b", "type": "string", "description": "d", "required": true}},
		"messages": msgs,
	})))
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	long := strings.Repeat("é", 5_000)
	args := map[string]string{"a": long, "b": long}
	tests := []struct {
		name      string
		args      map[string]string
		truncated bool
		messages  int
	}{
		{"short", map[string]string{"a": "x", "b": "y"}, false, 12},
		{"long", args, true, 3}, // 30,000 characters: three 10,000-character turns, the third cut
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, c, i+1, "flowyprompt_render_template", map[string]any{"name": "Long_Chat", "arguments": tt.args})
			if r.IsError {
				t.Fatalf("render: %s", r.Content[0].Text)
			}
			sc, _ := json.Marshal(r.StructuredContent)
			size := utf8.RuneCountInString(r.Content[0].Text) + utf8.RuneCount(sc)
			if size > budget {
				t.Errorf("%d characters, over the %d budget", size, budget)
			}
			got, _ := r.StructuredContent["truncated"].(bool)
			if got != tt.truncated || strings.Contains(r.Content[0].Text, "Truncated") != tt.truncated {
				t.Errorf("truncated = %v, want %v:\n%.300s", got, tt.truncated, r.Content[0].Text)
			}
			msgs, _ := r.StructuredContent["messages"].([]any)
			if len(msgs) != tt.messages {
				t.Errorf("%d messages, want %d", len(msgs), tt.messages)
			}
		})
	}
	m := c.Request(t, 9, "prompts/get", map[string]any{"name": "Long_Chat", "arguments": args})
	var res mcp.GetPromptResult
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Messages) != 12 {
		t.Errorf("prompts/get: %d messages (%v), want all 12", len(res.Messages), err)
	}
}
