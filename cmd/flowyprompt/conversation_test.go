package main

import (
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

const chatTemplate = `{"metadata":{"name":"Chat","description":"Talk it through.","version":"1.0.0"},` +
	`"variables":[{"name":"topic","type":"string","description":"What to talk about","required":true}],` +
	`"results":[{"name":"s","content":"Be brief about {{topic}}."}],` +
	`"messages":[{"role":"user","content":"Explain {{topic}}."},{"role":"assistant","content":"Which part?"},{"role":"user","content":"All of it."}],` +
	`"resources":["notes.md"]}`

// TestConversationCommands: render prints a conversation as a transcript,
// roles as headings, its resources after it; validate names a bad
// message by its file and index.
func TestConversationCommands(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{"Chat.json": chatTemplate, "notes.md": "Some notes."})
	bad := t.TempDir()
	testfiles.Write(t, bad, map[string]string{"Chat.json": `{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},"variables":[],` +
		`"messages":[{"role":"user","content":"Hi."},{"role":"system","content":"Be brief."},{"role":"assistant","content":""}]}`})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{name: "render", args: []string{"render", "Chat", "--arg", "topic=DNS", "--templates", dir},
			stdout: []string{"## User\n\n# Chat\n", "Be brief about DNS.\n\n## User\n\nExplain DNS.\n\n## Assistant\n\nWhich part?\n\n## User\n\nAll of it.\n",
				"attached resource", "notes.md", "Some notes."}},
		{name: "validate", args: []string{"validate", bad}, code: 1,
			stdout: []string{"Chat.json: INVALID", `error   /messages/1/role: must be one of "user", "assistant"`,
				"error   /messages/2/content: must not be empty", "0 valid, 1 invalid"}},
		{name: "validate valid", args: []string{"validate", dir}, stdout: []string{"Chat.json: ok", "1 valid, 0 invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, nil)
		})
	}
}
