package app

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/flowyprompt/flowyprompt/render"
)

// FuzzRenderedJSON: the render tool's structuredContent, encoded by hand,
// is byte for byte what encoding/json writes for the same map (keys
// sorted, HTML escaping off), whatever the strings hold, with a
// conversation's messages and without.
func FuzzRenderedJSON(f *testing.F) {
	f.Add("Code_Review", "line\nbreak \"quoted\" <b>&</b>", "code", "한국어 \u2028", "tone", "x", false)
	f.Add("", "", "", "", "", "", false)
	f.Add("n", "\xff\x01", "b", "\x00", "a", "\xe2\x82", false)
	f.Add("Chat", "## User\n\nHi <there>", "topic", "DNS", "user", "assistant", true)
	f.Add("", "", "", "\xff", "", "", true)
	f.Fuzz(func(t *testing.T, name, text, k1, v1, unknown, def string, conversation bool) {
		r := &rendered{Name: name, Text: text, ArgumentsUsed: map[string]string{k1: v1, "z" + k1: v1 + text},
			DefaultsApplied: []string{def}, UnknownArguments: []string{unknown, def}}
		m := map[string]any{"name": r.Name, "text": r.Text, "arguments_used": r.ArgumentsUsed,
			"defaults_applied": r.DefaultsApplied, "unknown_arguments": r.UnknownArguments}
		if conversation {
			r.Messages = []render.Message{{Role: unknown, Text: text}, {Role: def, Text: v1}}
			m["messages"] = r.Messages
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		if got := r.json(); !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("got  %s\nwant %s", got, want.Bytes())
		}
	})
}
