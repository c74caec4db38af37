package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/bench"
	"github.com/flowyprompt/flowyprompt/internal/bench/loadgen"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// root is the flowyprompt repository, where ./cmd/flowyprompt is built.
var root = bench.Root()

// build compiles a main package into out from moduleDir; GOWORK=off keeps
// the product and the harness modules apart, as they are in use.
func build(t *testing.T, moduleDir, pkg, out string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

var argSets = []map[string]string{
	{"topic": "rate limits", "audience": "platform engineers", "tone": "direct"},
	{"topic": "요금 한도 — ünïcode", "audience": "<b>\"quoted\"</b> & co", "tone": "{{topic}}"},
}

// connect starts a server on a transport and returns a go-sdk client
// session to it: the official SDK's client is a real client every server
// must serve.
func connect(t *testing.T, ctx context.Context, bin []string, transport string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "peers-test", Version: "1"}, nil)
	var tr mcp.Transport
	switch transport {
	case "stdio":
		tr = &mcp.CommandTransport{Command: exec.Command(bin[0], bin[1:]...)}
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		args := append(append([]string{}, bin[1:]...), "-transport", transport, "-addr", addr)
		if filepath.Base(bin[0]) == "flowyprompt" {
			args = append(append([]string{}, bin[1:]...), "--transport", "http", "--addr", addr)
		}
		cmd := exec.Command(bin[0], args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		listening, out := watchListening(stderr)
		var said string // all of stderr, once exited has a value
		exited := make(chan error, 1)
		go func() {
			said = <-out // Wait closes the pipe: read it all first
			exited <- cmd.Wait()
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
			}
		})
		select {
		case <-listening:
		case err := <-exited:
			t.Fatalf("%s did not serve %s: exited (%v): %s", bin[0], transport, err, said)
		case <-time.After(15 * time.Second):
			t.Fatalf("%s did not serve %s: not listening after 15 s", bin[0], transport)
		}
		if transport == "sse" {
			tr = &mcp.SSEClientTransport{Endpoint: "http://" + addr + "/sse"}
		} else {
			tr = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true}
		}
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v", transport, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// watchListening reads a server's stderr: listening is closed when the
// server says it listens (the peers' "listening on ADDR", flowyprompt's
// "is serving over HTTP on URL"), and out gets all of stderr once it ends.
func watchListening(stderr io.Reader) (listening <-chan struct{}, out <-chan string) {
	ready, all := make(chan struct{}), make(chan string, 1)
	go func() {
		var b strings.Builder
		said := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.WriteString(line + "\n")
			if !said && (strings.Contains(line, "listening on ") || strings.Contains(line, "is serving over HTTP on ")) {
				said = true
				close(ready)
			}
		}
		all <- b.String()
	}()
	return ready, all
}

func promptText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]string) string {
	t.Helper()
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("prompts/get %s: %v", name, err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("prompts/get %s: want one user message, got %d", name, len(res.Messages))
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("prompts/get %s: content is %T, want text", name, res.Messages[0].Content)
	}
	return tc.Text
}

// toolText calls a render tool: the peers answer with the bare prompt as
// content[0]; flowyprompt puts it in structuredContent.text.
func toolText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool, name string, args map[string]string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"name": name, "arguments": args}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("tools/call %s failed: %+v", tool, res.Content)
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		var sc struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &sc) == nil && sc.Text != "" {
			return sc.Text
		}
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestPeersRenderLikeFlowyprompt is the fairness check: over every
// transport, each peer's prompts/get and render tool return exactly the
// text flowyprompt's prompts/get returns, for every benchmark template.
func TestPeersRenderLikeFlowyprompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := t.TempDir()
	dir := bench.TemplatesDir()
	fp := build(t, root, "./cmd/flowyprompt", filepath.Join(bin, "flowyprompt"))
	servers := map[string][]string{
		"mcp-go":          {build(t, ".", "./mcpgo", filepath.Join(bin, "peer-mcpgo")), "-templates", dir},
		"mcp-go+validate": {filepath.Join(bin, "peer-mcpgo"), "-validate", "-templates", dir},
		"go-sdk":          {build(t, ".", "./gosdk", filepath.Join(bin, "peer-gosdk")), "-templates", dir},
	}

	ref := connect(t, ctx, []string{fp, "serve", "--templates", dir, "--log-level", "error"}, "stdio")
	list, err := ref.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 20 {
		t.Fatalf("flowyprompt lists %d prompts, want the 20 benchmark templates", len(list.Prompts))
	}
	want := map[string]string{}
	for _, p := range list.Prompts {
		for i, args := range argSets {
			want[fmt.Sprintf("%s#%d", p.Name, i)] = promptText(t, ctx, ref, p.Name, args)
		}
	}
	// flowyprompt's own tool gives the same text as its prompts/get.
	if got := toolText(t, ctx, ref, "flowyprompt_render_template", list.Prompts[0].Name, argSets[1]); got != want[list.Prompts[0].Name+"#1"] {
		t.Fatalf("flowyprompt's render tool differs from its prompts/get:\n%s", cmp.Diff(want[list.Prompts[0].Name+"#1"], got))
	}

	for name, cmdline := range servers {
		for _, transport := range []string{"stdio", "sse", "http"} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				cs := connect(t, ctx, cmdline, transport)
				plist, err := cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(promptNames(list), promptNames(plist)); diff != "" {
					t.Fatalf("prompt names (-flowyprompt +%s):\n%s", name, diff)
				}
				for _, p := range plist.Prompts {
					if len(p.Arguments) != 3 || !p.Arguments[0].Required {
						t.Errorf("%s: arguments %+v, want three required", p.Name, p.Arguments)
					}
					for i, args := range argSets {
						key := fmt.Sprintf("%s#%d", p.Name, i)
						if diff := cmp.Diff(want[key], promptText(t, ctx, cs, p.Name, args)); diff != "" {
							t.Errorf("prompts/get %s (-flowyprompt +%s):\n%s", key, name, diff)
						}
					}
				}
				for i, args := range argSets {
					key := fmt.Sprintf("%s#%d", plist.Prompts[0].Name, i)
					if diff := cmp.Diff(want[key], toolText(t, ctx, cs, "render_template", plist.Prompts[0].Name, args)); diff != "" {
						t.Errorf("render_template %s (-flowyprompt +%s):\n%s", key, name, diff)
					}
				}
			})
		}
	}
	// flowyprompt's own HTTP transports serve the same text.
	for _, transport := range []string{"sse", "http"} {
		t.Run("flowyprompt/"+transport, func(t *testing.T) {
			cs := connect(t, ctx, []string{fp, "serve", "--templates", dir, "--log-level", "error"}, transport)
			key := list.Prompts[0].Name + "#1"
			if diff := cmp.Diff(want[key], promptText(t, ctx, cs, list.Prompts[0].Name, argSets[1])); diff != "" {
				t.Errorf("prompts/get over %s (-stdio +%s):\n%s", transport, transport, diff)
			}
		})
	}
}

func promptNames(l *mcp.ListPromptsResult) []string {
	var out []string
	for _, p := range l.Prompts {
		out = append(out, p.Name)
	}
	return out
}

// TestToolArgumentsValidated checks both peers refuse arguments their
// schema forbids, as flowyprompt does: the tool scenario compares servers
// that validate.
func TestToolArgumentsValidated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := t.TempDir()
	dir := bench.TemplatesDir()
	mg := build(t, ".", "./mcpgo", filepath.Join(bin, "peer-mcpgo"))
	gs := build(t, ".", "./gosdk", filepath.Join(bin, "peer-gosdk"))
	tests := []struct {
		name string
		cmd  []string
	}{
		{"mcp-go", []string{mg, "-templates", dir}},
		{"mcp-go+validate", []string{mg, "-validate", "-templates", dir}},
		{"go-sdk", []string{gs, "-templates", dir}},
	}
	bad := []map[string]any{
		{"name": "Bench_API_00", "arguments": map[string]any{"topic": 5, "audience": "a", "tone": "b"}},
		{"arguments": map[string]any{"topic": "a"}},
		{"name": 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, ctx, tt.cmd, "stdio")
			for _, args := range bad {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "render_template", Arguments: args})
				if err != nil {
					// A protocol error is a refusal too (go-sdk answers
					// some schema failures that way).
					continue
				}
				if !res.IsError {
					t.Errorf("arguments %v were accepted", args)
				}
			}
		})
	}
}

// TestPeersServeStateless checks that both peers, in their stateless modes
// (-stateless), and flowyprompt serve prompts/get at protocol 2026-07-28
// as the stateless scenario sends it: no initialize, no session, the
// revision's headers and _meta, a result marked complete with the text
// flowyprompt renders. A stateful go-sdk handler refuses such requests, so
// the check also shows the flag took effect.
func TestPeersServeStateless(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := t.TempDir()
	dir := bench.TemplatesDir()
	fp := build(t, root, "./cmd/flowyprompt", filepath.Join(bin, "flowyprompt"))
	mg := build(t, ".", "./mcpgo", filepath.Join(bin, "peer-mcpgo"))
	gs := build(t, ".", "./gosdk", filepath.Join(bin, "peer-gosdk"))
	params, err := json.Marshal(map[string]any{"name": bench.PromptName, "arguments": bench.Arguments})
	if err != nil {
		t.Fatal(err)
	}
	peer := func(bin string, flags ...string) func(addr string) []string {
		return func(addr string) []string {
			return append([]string{bin, "-transport", "http", "-addr", addr, "-templates", dir}, flags...)
		}
	}
	tests := []struct {
		name      string
		cmd       func(addr string) []string
		wantError string // "" when the run must succeed
	}{
		{"flowyprompt", func(addr string) []string {
			return []string{fp, "serve", "--transport", "http", "--addr", addr, "--templates", dir, "--log-level", "error"}
		}, ""},
		{"mcp-go", peer(mg, "-stateless"), ""},
		{"go-sdk", peer(gs, "-stateless"), ""},
		{"go-sdk stateful refuses", peer(gs), "400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, err := loadgen.FreeAddr()
			if err != nil {
				t.Fatal(err)
			}
			p, err := loadgen.StartProcess(ctx, tt.cmd(addr), addr, 15*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			st, err := loadgen.Stateless(ctx, loadgen.StatelessConfig{
				URL: "http://" + addr + "/mcp", Clients: 4,
				Work: loadgen.Work{Method: "prompts/get", Params: params, Requests: 25, Warmup: 2, Expect: []byte(bench.Arguments["audience"])},
			})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (server output: %s)", err, p.Output())
			}
			if st.Requests != 100 || st.Errors != 0 {
				t.Fatalf("requests=%d errors=%d (first: %s), want 100 and 0", st.Requests, st.Errors, st.FirstError)
			}
		})
	}
}
