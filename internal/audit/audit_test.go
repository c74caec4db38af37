package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestLine: one line per prompts/get and tools/call with what the hook and
// the application told it; none for other methods or below info. Both
// constructors write the same line. A session is named by its digest,
// never its id.
func TestLine(t *testing.T) {
	const sessionID = "87cb88f3c0ffee0087cb88f3c0ffee00"
	tests := []struct {
		name   string
		level  slog.Level
		info   mcp.RequestInfo
		note   *audit.Usage
		member *auth.Member
		out    mcp.Outcome
		want   map[string]any // "" : the key must be absent
		noLine bool
	}{
		{name: "prompt ok, 2025", info: mcp.RequestInfo{Method: "prompts/get", Target: "Commit_Message", ID: "2",
			ProtocolVersion: "2025-06-18", Client: mcp.Implementation{Name: "c", Version: "1"}, SessionID: sessionID},
			note: &audit.Usage{Template: "Commit_Message", Version: "1.0.0", Source: "github", Revision: "abc"},
			want: map[string]any{"msg": "prompt used", "prompt": "Commit_Message", "template": "Commit_Message",
				"template_version": "1.0.0", "source": "github", "source_revision": "abc", "client_name": "c",
				"client_version": "1", "era": "2025", "protocol_version": "2025-06-18", "session": logid.Digest(sessionID),
				"request_id": "2", "outcome": "ok", "error_code": "", "member": "", "member_email": ""}},
		{name: "prompt failed, 2026", info: mcp.RequestInfo{Method: "prompts/get", Target: "Nope", ID: "x",
			ProtocolVersion: "2026-07-28", Modern: true},
			out:  mcp.Outcome{Code: -32602},
			want: map[string]any{"msg": "prompt used", "era": "2026", "session": "", "template": "", "outcome": "error", "error_code": "-32602"}},
		{name: "a member's", info: mcp.RequestInfo{Method: "prompts/get", Target: "Commit_Message", ID: "6", Modern: true},
			member: &auth.Member{Issuer: "https://id.example.com", Subject: "alice", Email: "alice@example.com"},
			want:   map[string]any{"member": "alice", "member_email": "alice@example.com", "outcome": "ok"}},
		{name: "a member's in a 2025 session", info: mcp.RequestInfo{Method: "tools/call", Target: "flowyprompt_render_template", ID: "8",
			ProtocolVersion: "2025-11-25", SessionID: sessionID},
			member: &auth.Member{Issuer: "https://id.example.com", Subject: "carol", Email: "carol@example.com"},
			want: map[string]any{"member": "carol", "member_email": "carol@example.com", "era": "2025",
				"session": logid.Digest(sessionID)}},
		{name: "a member's without email", info: mcp.RequestInfo{Method: "prompts/get", Target: "Commit_Message", ID: "7", Modern: true},
			member: &auth.Member{Issuer: "https://id.example.com", Subject: "bob"},
			want:   map[string]any{"member": "bob", "member_email": ""}},
		{name: "tool error", info: mcp.RequestInfo{Method: "tools/call", Target: "flowyprompt_render_template", ID: "3"},
			out:  mcp.Outcome{ToolError: true},
			want: map[string]any{"msg": "tool used", "tool": "flowyprompt_render_template", "outcome": "tool_error"}},
		{name: "other methods", info: mcp.RequestInfo{Method: "tools/list", ID: "4"}, noLine: true},
		{name: "warn level", level: slog.LevelWarn, info: mcp.RequestInfo{Method: "prompts/get", ID: "5"}, noLine: true},
	}
	for _, tt := range tests {
		for _, mk := range constructors {
			t.Run(tt.name+"/"+mk.name, func(t *testing.T) {
				var buf bytes.Buffer
				l := mk.new(&buf, &slog.HandlerOptions{Level: tt.level})
				info := tt.info
				ctx := context.Background()
				if tt.member != nil {
					ctx = auth.WithMember(ctx, tt.member)
				}
				ctx, end := l.StartRequest(ctx, &info)
				if tt.note != nil {
					audit.Note(ctx, *tt.note)
				}
				end(tt.out)
				closeLog(t, l)
				if tt.noLine {
					if buf.Len() != 0 {
						t.Fatalf("wrote %s", buf.String())
					}
					return
				}
				if strings.Contains(buf.String(), sessionID) {
					t.Errorf("the line holds the session id: %s", buf.String())
				}
				lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
				if len(lines) != 1 {
					t.Fatalf("%d lines: %s", len(lines), buf.String())
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
					t.Fatal(err)
				}
				if got["level"] != "INFO" || got["duration"] == nil {
					t.Errorf("level %v, duration %v", got["level"], got["duration"])
				}
				for k, v := range tt.want {
					if v == "" {
						if _, ok := got[k]; ok {
							t.Errorf("%s present: %v", k, got[k])
						}
						continue
					}
					if got[k] != v {
						t.Errorf("%s = %v, want %v", k, got[k], v)
					}
				}
			})
		}
	}
}

// TestNoteWithoutLog: Note on a context the audit log did not make does
// nothing.
func TestNoteWithoutLog(t *testing.T) {
	audit.Note(context.Background(), audit.Usage{Template: "x"})
}
