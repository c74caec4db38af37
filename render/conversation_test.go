package render

import (
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// chat parses a conversation template with a required variable topic, an
// optional variable tone (default "plain"), the given results and the
// given messages, each "role: content".
func chat(t testing.TB, results []string, messages ...string) *templates.Template {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"metadata":{"name":"Chat","description":"Talk it through.","version":"1.0.0"},` +
		`"variables":[{"name":"topic","type":"string","description":"d","required":true},` +
		`{"name":"tone","type":"string","description":"d","default":"plain"}]`)
	if len(results) > 0 {
		b.WriteString(`,"results":[`)
		for i, r := range results {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":"S","content":` + quote(r) + `}`)
		}
		b.WriteByte(']')
	}
	if len(messages) > 0 {
		b.WriteString(`,"messages":[`)
		for i, m := range messages {
			role, content, _ := strings.Cut(m, ": ")
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"role":` + quote(role) + `,"content":` + quote(content) + `}`)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return parse(t, []byte(b.String()))
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func TestConversation(t *testing.T) {
	header := "# Chat\n\nTalk it through.\n\n**Version**: 1.0.0\n"
	tests := []struct {
		name string
		tp   *templates.Template
		args map[string]string
		want []Message
	}{
		{
			name: "messages only",
			tp:   chat(t, nil, "user: Explain {{topic}}, {{tone}}.", "assistant: Which part of {{ topic }}?\n\n", "user: {{ghost}} all of it."),
			args: map[string]string{"topic": "DNS"},
			want: []Message{{"user", "Explain DNS, plain."}, {"assistant", "Which part of DNS?"}, {"user", "{{ghost}} all of it."}},
		},
		{
			name: "results first, as a user message",
			tp:   chat(t, []string{"About {{topic}}."}, "assistant: Ready, {{tone}}.", "user: Go."),
			args: map[string]string{"topic": "DNS", "tone": "dry", "ghost": "unused"},
			want: []Message{{"user", header + "\n---\n\nAbout DNS."}, {"assistant", "Ready, dry."}, {"user", "Go."}},
		},
		{
			name: "no messages: the prompt as one user message",
			tp:   chat(t, []string{"About {{topic}}.\n"}),
			args: map[string]string{"topic": "DNS"},
			want: []Message{{"user", header + "\n---\n\nAbout DNS."}},
		},
		{
			name: "an undefined placeholder takes a same-named argument",
			tp:   chat(t, nil, "user: {{topic}} by {{ghost}}"),
			args: map[string]string{"topic": "DNS", "ghost": "Paul"},
			want: []Message{{"user", "DNS by Paul"}},
		},
		{
			name: "a value is copied, never expanded",
			tp:   chat(t, nil, "user: {{topic}}"),
			args: map[string]string{"topic": "{{tone}}"},
			want: []Message{{"user", "{{tone}}"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Conversation(tt.tp, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Conversation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConversationMatchesPrompt: without messages, Conversation's one
// message is exactly Prompt's text, so prompts/get can use either.
func TestConversationMatchesPrompt(t *testing.T) {
	tp := loadFile(t, "brand_positioning_strategy.json")
	args := map[string]string{"company_name": "테크스타트업", "industry": "AI", "target_audience": "B2B SaaS 기업"}
	text, err := Prompt(tp, args)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Conversation(tp, args)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Message{{templates.RoleUser, text}}, got); diff != "" {
		t.Errorf("(-prompt +conversation):\n%s", diff)
	}
}

func TestConversationErrors(t *testing.T) {
	long := strings.Repeat("x", MaxValueLength+1)
	tests := []struct {
		name string
		tp   *templates.Template
		args map[string]string
		code string
		what string
	}{
		{"required variable used only in a message", chat(t, []string{"No placeholders."}, "user: {{topic}}"), nil,
			fault.MissingRequiredVariable, `template "Chat" needs the required variable topic`},
		{"value too long", chat(t, nil, "user: {{topic}}"), map[string]string{"topic": long},
			fault.InvalidArgument, `argument "topic" is 10001 characters long`},
		{"undefined placeholder's value too long", chat(t, nil, "user: {{topic}}", "assistant: {{ghost}}"), map[string]string{"topic": "a", "ghost": long},
			fault.InvalidArgument, `argument "ghost" is 10001 characters long`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Conversation(tt.tp, tt.args)
			if err == nil {
				t.Fatalf("no error; got %v", got)
			}
			f := fault.As(err)
			if f == nil || f.Code != tt.code || !strings.HasPrefix(f.What, tt.what) || f.How == "" {
				t.Errorf("error %v, want %s starting %q with a fix", err, tt.code, tt.what)
			}
		})
	}
}

func TestTranscript(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
		want string
	}{
		{"none", nil, ""},
		{"one", []Message{{"user", "Hi."}}, "## User\n\nHi."},
		{"turns", []Message{{"user", "# T\n\nHi."}, {"assistant", "Hello.\n\nHow?"}, {"user", "So."}},
			"## User\n\n# T\n\nHi.\n\n## Assistant\n\nHello.\n\nHow?\n\n## User\n\nSo."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Transcript(tt.msgs); got != tt.want {
				t.Errorf("Transcript = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnknownInMessages(t *testing.T) {
	tp := chat(t, []string{"{{topic}}"}, "user: {{ghost}}")
	got := Unknown(tp, map[string]string{"topic": "a", "ghost": "b", "typo": "c"})
	if diff := cmp.Diff([]string{"typo"}, got); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
}
