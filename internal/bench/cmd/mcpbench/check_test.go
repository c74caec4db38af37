package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for an MCP server over stdio
// (MCPBENCH_FAKE_SERVER=1, first argument the mode), so the rendering check
// can be tested without building the real servers.
func TestMain(m *testing.M) {
	if os.Getenv("MCPBENCH_FAKE_SERVER") == "1" {
		fakeStdioServer(os.Args[1])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeStdioServer renders "NAME: k=v,…". Modes: "structured" answers the
// tool like flowyprompt (bare text in structuredContent), "plain" like the
// peers (bare text in content[0]), "typo" renders one template wrongly,
// "tooltypo" renders the tool's text wrongly.
func fakeStdioServer(mode string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Name      string            `json:"name"`
					Arguments map[string]string `json:"arguments"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil || req.ID == nil {
			continue
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}}
		case "prompts/get":
			var p struct {
				Params struct {
					Name      string            `json:"name"`
					Arguments map[string]string `json:"arguments"`
				} `json:"params"`
			}
			_ = json.Unmarshal(in.Bytes(), &p)
			text := fakeRender(p.Params.Name, p.Params.Arguments)
			if mode == "typo" && p.Params.Name == "B" {
				text += "!"
			}
			result = map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}}
		case "tools/call":
			text := fakeRender(req.Params.Arguments.Name, req.Params.Arguments.Arguments)
			if mode == "tooltypo" {
				text = strings.ToUpper(text)
			}
			if mode == "structured" {
				result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "## Result\n" + text}}, "structuredContent": map[string]any{"text": text}}
			} else {
				result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
			}
		default:
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no"}})
			continue
		}
		// A notification before each response, which the client skips.
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{}})
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}

func fakeRender(name string, args map[string]string) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+args[k])
	}
	return name + ": " + strings.Join(parts, ",")
}

func TestCheckRendering(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPBENCH_FAKE_SERVER", "1")
	// Under -race a process sleeps a second on exit by default; the fake
	// servers have nothing to report.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	dir := t.TempDir()
	for _, n := range []string{"A", "B"} {
		if err := os.WriteFile(filepath.Join(dir, n+".json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake := func(name, mode string) *server {
		return &server{name: name, stdio: func() []string { return []string{self, mode} }, tool: "render"}
	}
	tests := []struct {
		name    string
		servers []*server
		wantErr string // "" when the check passes
	}{
		{"all alike", []*server{fake("fp", "structured"), fake("peer", "plain")}, ""},
		{"one prompt differs", []*server{fake("fp", "structured"), fake("peer", "typo")}, "peer prompts/get B#0 differs from fp"},
		{"tool differs from prompt", []*server{fake("fp", "structured"), fake("peer", "tooltypo")}, "peer tools/call render A#0 differs from prompts/get"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := checkRendering(ctx, tt.servers, dir)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckRenderingNoTemplates(t *testing.T) {
	if err := checkRendering(context.Background(), nil, t.TempDir()); err == nil {
		t.Fatal("want an error for an empty template folder")
	}
}

func TestFirstDiff(t *testing.T) {
	got := firstDiff("hello world", "hello there")
	for _, want := range []string{"at byte 6", `"hello world"`, `"hello there"`} {
		if !strings.Contains(got, want) {
			t.Errorf("firstDiff = %q, missing %q", got, want)
		}
	}
	if got := firstDiff(strings.Repeat("a", 100)+"x", strings.Repeat("a", 100)+"y"); !strings.Contains(got, fmt.Sprintf("at byte %d", 100)) {
		t.Errorf("firstDiff = %q", got)
	}
}
