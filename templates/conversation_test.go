package templates

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// conversation returns a valid template with messages and no results, as
// generic JSON, for tests to change.
func conversation() map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "T", "description": "d", "version": "1.0.0"},
		"variables": []any{
			map[string]any{"name": "topic", "type": "string", "description": "d", "required": true},
		},
		"messages": []any{
			map[string]any{"role": "user", "content": "Explain {{topic}}."},
			map[string]any{"role": "assistant", "content": "Which part of {{ topic }}?"},
			map[string]any{"role": "user", "content": "All of it."},
		},
	}
}

// TestParseConversation: messages parse alone or after results, keep file
// order, and compile into sections whose Name is the role.
func TestParseConversation(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(map[string]any)
		sections  int
		turns     []string // role: content of each turn
		variables []string // Placeholders()
	}{
		{
			name:      "messages only",
			mutate:    func(map[string]any) {},
			turns:     []string{"user: Explain {{topic}}.", "assistant: Which part of {{ topic }}?", "user: All of it."},
			variables: []string{"topic"},
		},
		{
			name: "results and messages",
			mutate: func(m map[string]any) {
				m["variables"] = append(m["variables"].([]any), map[string]any{"name": "level", "type": "string", "description": "d"})
				m["results"] = []any{map[string]any{"name": "S", "content": "At {{level}} level."}}
				m["messages"] = []any{map[string]any{"role": "assistant", "content": "Ready for {{topic}}."}}
			},
			sections:  1,
			turns:     []string{"assistant: Ready for {{topic}}."},
			variables: []string{"level", "topic"},
		},
		{
			name: "one message",
			mutate: func(m map[string]any) {
				m["messages"] = []any{map[string]any{"role": "assistant", "content": "{{topic}}"}}
			},
			turns:     []string{"assistant: {{topic}}"},
			variables: []string{"topic"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := conversation()
			tt.mutate(m)
			tpl, warns, err := Parse(mustJSON(t, m), ParseOptions{FileName: "T.json"})
			if err != nil {
				t.Fatalf("Parse: %v %v", err, Problems(err))
			}
			// A required variable used only in messages counts as used.
			if len(warns) != 0 {
				t.Errorf("warnings: %v", warns)
			}
			if got := len(tpl.Sections()); got != tt.sections {
				t.Errorf("%d sections, want %d", got, tt.sections)
			}
			var turns []string
			for _, s := range tpl.Turns() {
				turns = append(turns, s.Name+": "+s.Content)
				if s.Format != "" {
					t.Errorf("turn %q has format %q", s.Name, s.Format)
				}
			}
			if diff := cmp.Diff(tt.turns, turns); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.variables, tpl.Placeholders()); diff != "" {
				t.Errorf("Placeholders (-want +got):\n%s", diff)
			}
			if len(tpl.Messages) != len(tt.turns) {
				t.Errorf("%d messages, want %d", len(tpl.Messages), len(tt.turns))
			}
		})
	}
}

// TestConversationParts: a message's placeholders resolve to variable
// indexes like a section's, with and without the variable map a template
// with many variables gets, and a hand-built template compiles on demand.
func TestConversationParts(t *testing.T) {
	many := conversation()
	vars := []any{}
	for i := range 40 {
		vars = append(vars, map[string]any{"name": "v" + string(rune('a'+i%26)) + string(rune('a'+i/26)), "type": "string", "description": "d"})
	}
	many["variables"] = append(vars, many["variables"].([]any)...)
	tests := []struct {
		name  string
		doc   map[string]any
		index int
	}{
		{"few variables", conversation(), 0},
		{"many variables", many, 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, _, err := Parse(mustJSON(t, tt.doc), ParseOptions{})
			if err != nil {
				t.Fatalf("Parse: %v %v", err, Problems(err))
			}
			want := []Part{{Text: "Explain ", Var: -1}, {Text: "{{topic}}", Name: "topic", Var: tt.index}, {Text: ".", Var: -1}}
			if diff := cmp.Diff(want, slices.Collect(tpl.Turns()[0].All())); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if v, ok := tpl.Variable("topic"); !ok || v.Name != "topic" {
				t.Errorf("Variable(topic) = %v, %v", v, ok)
			}
		})
	}
	hand := &Template{Variables: []Variable{{Name: "x"}}, Messages: []Message{{Role: RoleUser, Content: "{{x}}!"}}}
	if got := hand.Turns(); len(got) != 1 || got[0].Name != RoleUser || got[0].Parts()[0].Var != 0 {
		t.Errorf("hand-built Turns = %+v", got)
	}
}

// TestParseConversationProblems: a message is checked like a result, each
// problem at its message's index.
func TestParseConversationProblems(t *testing.T) {
	message := func(i int, key string, val any) func(map[string]any) {
		return func(m map[string]any) {
			msg := m["messages"].([]any)[i].(map[string]any)
			if val == nil {
				delete(msg, key)
			} else {
				msg[key] = val
			}
		}
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   []Problem
	}{
		{"bad role", message(1, "role", "system"), []Problem{{"/messages/1/role", `must be one of "user", "assistant"`}}},
		{"role missing", message(2, "role", nil), []Problem{{"/messages/2/role", `required field "role" is missing`}}},
		{"empty content", message(0, "content", ""), []Problem{{"/messages/0/content", "must not be empty"}}},
		{"blank content", message(2, "content", " \n"), []Problem{{"/messages/2/content", "must not be empty"}}},
		{"content missing", message(1, "content", nil), []Problem{{"/messages/1/content", `required field "content" is missing`}}},
		{"content not a string", message(0, "content", 3), []Problem{{"/messages/0/content", "must be a string, not integer"}}},
		{"no messages", func(m map[string]any) { m["messages"] = []any{} }, []Problem{{"/messages", "needs at least 1 item(s)"}}},
		{"message not an object", func(m map[string]any) { m["messages"] = []any{"hi"} }, []Problem{{"/messages/0", "must be an object, not string"}}},
		{"neither results nor messages", func(m map[string]any) { delete(m, "messages") }, []Problem{{"/results",
			`required field "results" is missing: give "results" (the sections of the prompt), "messages" (the turns of a conversation) or both`}}},
		{"problems in order", func(m map[string]any) {
			message(2, "role", "tool")(m)
			message(0, "content", "")(m)
		}, []Problem{{"/messages/0/content", "must not be empty"}, {"/messages/2/role", `must be one of "user", "assistant"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := conversation()
			tt.mutate(m)
			_, _, err := Parse(mustJSON(t, m), ParseOptions{FileName: "T.json"})
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			if diff := cmp.Diff(tt.want, Problems(err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseConversationWarnings: placeholders in messages are checked
// against the variables exactly as in results.
func TestParseConversationWarnings(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   []Warning
	}{
		{
			name: "unknown placeholder",
			mutate: func(m map[string]any) {
				m["messages"] = append(m["messages"].([]any), map[string]any{"role": "assistant", "content": "{{topic}} and {{ghost}}"})
			},
			want: []Warning{{Template: "T", Variable: "ghost", Kind: WarnUndefinedVariable, Pointer: "/messages/3/content",
				Message: `placeholder {{ghost}} has no entry in variables: it stays as written unless an argument named "ghost" is given`}},
		},
		{
			name: "unused variable",
			mutate: func(m map[string]any) {
				m["variables"] = append(m["variables"].([]any), map[string]any{"name": "spare", "type": "string", "description": "d"})
			},
			want: []Warning{{Template: "T", Variable: "spare", Kind: WarnUnusedVariable, Pointer: "/variables/1/name",
				Message: `variable "spare" is defined but no section uses {{spare}}`}},
		},
		{
			name: "unknown field in a message",
			mutate: func(m map[string]any) {
				m["messages"].([]any)[1].(map[string]any)["rol"] = "user"
			},
			want: []Warning{{Template: "T", Kind: WarnUnknownField, Pointer: "/messages/1/rol",
				Message: `unknown field "rol" is ignored (did you mean "role"?)`}},
		},
		{
			name: "used in results, defined once",
			mutate: func(m map[string]any) {
				m["results"] = []any{map[string]any{"name": "S", "content": "{{ghost}}"}}
				m["messages"].([]any)[0].(map[string]any)["content"] = "{{ghost}} {{topic}}"
			},
			want: []Warning{{Template: "T", Variable: "ghost", Kind: WarnUndefinedVariable, Pointer: "/results/0/content",
				Message: `placeholder {{ghost}} has no entry in variables: it stays as written unless an argument named "ghost" is given`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := conversation()
			tt.mutate(m)
			_, warns, err := Parse(mustJSON(t, m), ParseOptions{FileName: "T.json"})
			if err != nil {
				t.Fatalf("Parse: %v %v", err, Problems(err))
			}
			if diff := cmp.Diff(tt.want, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
