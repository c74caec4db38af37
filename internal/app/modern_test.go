package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/internal/testclock"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// modern returns params carrying the _meta of a 2026-07-28 request from a
// client with the given capabilities, plus the members in extra.
func modern(caps map[string]any, extra map[string]any) map[string]any {
	p := map[string]any{"_meta": map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientCapabilities: caps,
		mcp.MetaClientInfo:         map[string]string{"name": "test", "version": "1"},
	}}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

var withElicitation = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}

// inputRequired is an input-required result as the tests read it.
type inputRequired struct {
	ResultType    string `json:"resultType"`
	TTL           *int64 `json:"ttlMs"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Mode            string `json:"mode"`
			Message         string `json:"message"`
			RequestedSchema struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			} `json:"requestedSchema"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

func decodeInputRequired(t *testing.T, m mcptest.Message) inputRequired {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("error instead of an input-required result: %+v", m.Error)
	}
	var ir inputRequired
	if err := json.Unmarshal(m.Result, &ir); err != nil {
		t.Fatal(err)
	}
	if ir.ResultType != "input_required" || ir.RequestState == "" || ir.TTL != nil {
		t.Fatalf("not an input-required result (resultType, a requestState, no cache hint): %s", m.Result)
	}
	q, ok := ir.InputRequests["variables"]
	if !ok || q.Method != mcp.MethodElicitationCreate || q.Params.Mode != "form" {
		t.Fatalf("inputRequests = %s, want one form elicitation named variables", m.Result)
	}
	return ir
}

// TestInputRequired walks a 2026 client through a prompt and the render
// tool that lack a required variable: asked for exactly that variable,
// answered on the retry, and refused when the state was tampered with or
// belongs to another request.
func TestInputRequired(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	accept := map[string]any{"variables": map[string]any{"action": "accept", "content": map[string]any{"code": "func f() {}"}}}

	type call struct {
		method string
		params func(args map[string]any, retry map[string]any) map[string]any
		text   func(t *testing.T, m mcptest.Message) string
	}
	calls := map[string]call{
		"prompts/get": {mcp.MethodPromptsGet, func(args, retry map[string]any) map[string]any {
			p := map[string]any{"name": "Code_Review", "arguments": args}
			for k, v := range retry {
				p[k] = v
			}
			return modern(withElicitation, p)
		}, func(t *testing.T, m mcptest.Message) string {
			var r mcp.GetPromptResult
			if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Messages) == 0 {
				t.Fatalf("not a prompt: %s", m.Raw)
			}
			return r.Messages[0].Content.Text
		}},
		"render tool": {mcp.MethodToolsCall, func(args, retry map[string]any) map[string]any {
			p := map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Code_Review", "arguments": args}}
			for k, v := range retry {
				p[k] = v
			}
			return modern(withElicitation, p)
		}, func(t *testing.T, m mcptest.Message) string {
			var r mcp.CallToolResult
			if err := json.Unmarshal(m.Result, &r); err != nil || r.IsError || len(r.Content) == 0 {
				t.Fatalf("not a rendered prompt: %s", m.Raw)
			}
			return r.Content[0].Text
		}},
	}
	id := 0
	next := func() int { id++; return id }
	for name, cl := range calls {
		t.Run(name, func(t *testing.T) {
			args := map[string]any{"language": "Go"}
			ir := decodeInputRequired(t, c.Request(t, next(), cl.method, cl.params(args, nil)))
			q := ir.InputRequests["variables"].Params.RequestedSchema
			if strings.Join(q.Required, ",") != "code" || len(q.Properties) != 1 || q.Properties["code"]["description"] == "" {
				t.Fatalf("the form asks for %v %v, want exactly the missing variable code, described", q.Required, q.Properties)
			}

			// The retry brings the answer and the state: rendered.
			m := c.Request(t, next(), cl.method, cl.params(args, map[string]any{"inputResponses": accept, "requestState": ir.RequestState}))
			if text := cl.text(t, m); !strings.Contains(text, "func f() {}") || !strings.Contains(text, "Go") {
				t.Fatalf("the retry did not render the answer and the arguments: %q", text)
			}
			var done struct {
				ResultType string `json:"resultType"`
			}
			if json.Unmarshal(m.Result, &done); done.ResultType != "complete" {
				t.Fatalf("resultType = %q, want complete", done.ResultType)
			}

			refused := []struct {
				name  string
				args  map[string]any
				retry map[string]any
				code  string
			}{
				{"tampered state", args, map[string]any{"inputResponses": accept, "requestState": ir.RequestState + "-TAMPERED"}, mcp.CodeInvalidParams},
				{"state of other arguments", map[string]any{"language": "Rust"}, map[string]any{"inputResponses": accept, "requestState": ir.RequestState}, mcp.CodeInvalidParams},
				{"declined", args, map[string]any{"inputResponses": map[string]any{"variables": map[string]any{"action": "decline"}}, "requestState": ir.RequestState}, "MISSING_REQUIRED_VARIABLE"},
			}
			for _, tc := range refused {
				m := c.Request(t, next(), cl.method, cl.params(tc.args, tc.retry))
				if tc.code == "MISSING_REQUIRED_VARIABLE" && cl.method == mcp.MethodToolsCall {
					// A tool reports what it could not do in its result.
					if m.Error != nil || !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), tc.code) {
						t.Errorf("%s: got %s, want an isError result saying %s", tc.name, m.Raw, tc.code)
					}
					continue
				}
				if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != tc.code {
					t.Errorf("%s: got %s, want a -32602 %s error", tc.name, m.Raw, tc.code)
				}
			}

			// An answer without the state, or one that leaves the value out,
			// is asked again, with a fresh state.
			for _, retry := range []map[string]any{
				{"inputResponses": accept},
				{"inputResponses": map[string]any{"variables": map[string]any{"action": "accept", "content": map[string]any{}}}, "requestState": ir.RequestState},
				{"inputResponses": map[string]any{"variables": 12345}, "requestState": ir.RequestState},
			} {
				decodeInputRequired(t, c.Request(t, next(), cl.method, cl.params(args, retry)))
			}
		})
	}

	// Without elicitation, today's error stays.
	m := c.Request(t, next(), mcp.MethodPromptsGet, modern(map[string]any{}, map[string]any{"name": "Code_Review"}))
	if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != "MISSING_REQUIRED_VARIABLE" {
		t.Fatalf("prompts/get without elicitation = %s, want -32602 MISSING_REQUIRED_VARIABLE", m.Raw)
	}
	// A legacy request's prompts/get is not asked (it has no way to answer).
	c.Request(t, next(), mcp.MethodInitialize, map[string]any{"protocolVersion": mcp.LatestVersion, "capabilities": withElicitation,
		"clientInfo": map[string]string{"name": "old", "version": "1"}})
	m = c.Request(t, next(), mcp.MethodPromptsGet, map[string]any{"name": "Code_Review"})
	if m.Error == nil || m.Error.Data.Code != "MISSING_REQUIRED_VARIABLE" {
		t.Fatalf("legacy prompts/get = %s, want MISSING_REQUIRED_VARIABLE", m.Raw)
	}
}

// TestStateSharedByReplicas: a requestState sealed by one server opens on
// another that holds the same keys, and not on one that does not.
func TestStateSharedByReplicas(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, seal.MinKeyBytes)
	replica := func(k []byte) *mcptest.Client {
		lib := templates.NewLibrary(templates.Embedded(), slog.New(slog.DiscardHandler))
		if err := lib.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := seal.New(k)
		if err != nil {
			t.Fatal(err)
		}
		e := mcp.NewEngine(app.New(app.Options{Library: lib, State: s}).Server(), mcp.EngineOptions{})
		t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
		return mcptest.Connect(t, e)
	}
	a, b, other := replica(key), replica(key), replica(bytes.Repeat([]byte{8}, seal.MinKeyBytes))
	get := func(retry map[string]any) map[string]any {
		p := map[string]any{"name": "Code_Review"}
		for k, v := range retry {
			p[k] = v
		}
		return modern(withElicitation, p)
	}
	ir := decodeInputRequired(t, a.Request(t, 1, mcp.MethodPromptsGet, get(nil)))
	retry := map[string]any{"requestState": ir.RequestState,
		"inputResponses": map[string]any{"variables": map[string]any{"action": "accept", "content": map[string]any{"code": "x := 1"}}}}
	if m := b.Request(t, 2, mcp.MethodPromptsGet, get(retry)); m.Error != nil || !strings.Contains(string(m.Result), "x := 1") {
		t.Fatalf("a replica with the same key: %s", m.Raw)
	}
	if m := other.Request(t, 3, mcp.MethodPromptsGet, get(retry)); m.Error == nil || m.Error.Data.Code != mcp.CodeInvalidParams {
		t.Fatalf("a server with another key accepted the state: %s", m.Raw)
	}
}

// TestGitHubTTLCountsDown: the cache hint of a GitHub library's lists is
// the time left until the next revalidation, and starts again after it.
func TestGitHubTTLCountsDown(t *testing.T) {
	t.Parallel()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 3})
	fake.PutFiles(lib.Files)
	clk := testclock.New(time.Now().Truncate(time.Second))
	const ttl = 10 * time.Minute
	src, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: "main", APIURL: fake.URL(), TTL: ttl,
		CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e, _, library := newEngine(t, src)
	c := mcptest.Connect(t, e)
	id := 0
	hint := func() (int64, string) {
		t.Helper()
		id++
		m := c.Request(t, id, mcp.MethodPromptsList, modern(map[string]any{}, nil))
		var r struct {
			TTL     *int64       `json:"ttlMs"`
			Scope   string       `json:"cacheScope"`
			Prompts []mcp.Prompt `json:"prompts"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil || r.TTL == nil || len(r.Prompts) != 3 {
			t.Fatalf("prompts/list = %s", m.Raw)
		}
		return *r.TTL, r.Scope
	}
	steps := []struct {
		advance time.Duration
		refresh bool
		want    time.Duration
	}{
		{0, false, ttl},
		{4 * time.Minute, false, 6 * time.Minute},
		{5*time.Minute + 30*time.Second, false, 30 * time.Second},
		{time.Minute, false, 0}, // past due: revalidation is on its way
		{0, true, ttl},          // revalidated: a full TTL again
		{90 * time.Second, false, ttl - 90*time.Second},
	}
	for i, s := range steps {
		clk.Add(s.advance)
		if s.refresh {
			if _, err := library.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		got, scope := hint()
		if got != s.want.Milliseconds() || scope != "public" {
			t.Fatalf("step %d (+%s): ttlMs %d %s, want %d public", i, s.advance, got, scope, s.want.Milliseconds())
		}
	}
}

// TestModernRefreshLogs: a 2026 client has no session for the library's
// warnings to reach, so the refresh tool tells the request that asked,
// when its _meta asks for log messages.
func TestModernRefreshLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Broken.json"), []byte(`{"metadata":`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	call := func(id int, level string) (logs []string) {
		p := modern(map[string]any{}, map[string]any{"name": "flowyprompt_refresh_templates", "arguments": map[string]any{}})
		if level != "" {
			p["_meta"].(map[string]any)[mcp.MetaLogLevel] = level
		}
		c.Send(string(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": mcp.MethodToolsCall, "params": p})))
		for {
			m := c.Next(t)
			if m.ID != nil {
				return logs
			}
			if m.Method == mcp.NotificationMessage {
				logs = append(logs, string(m.Params))
			}
		}
	}
	if logs := call(1, ""); len(logs) != 0 {
		t.Fatalf("log messages without a level asked for: %v", logs)
	}
	logs := call(2, "warning")
	if len(logs) != 1 || !strings.Contains(logs[0], "Broken.json") || !strings.Contains(logs[0], `"level":"warning"`) {
		t.Fatalf("log messages = %v, want the broken file's warning", logs)
	}
}
