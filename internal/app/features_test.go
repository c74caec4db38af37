package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func TestTemplatesAsResources(t *testing.T) {
	e, _, lib := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	m := c.Request(t, 1, "resources/list", nil)
	var list mcp.ListResourcesResult
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != lib.Catalog().Len() || list.Resources[0].URI != "template://API_Design_Review" || list.Resources[0].MimeType != "application/json" {
		t.Fatalf("resources: %s", m.Raw)
	}
	m = c.Request(t, 2, "resources/read", map[string]string{"uri": "template://Code_Review"})
	var read mcp.ReadResourceResult
	if err := json.Unmarshal(m.Result, &read); err != nil {
		t.Fatal(err)
	}
	entry, _ := lib.Catalog().Lookup("Code_Review")
	if len(read.Contents) != 1 || read.Contents[0].Text != string(entry.Raw) || read.Contents[0].URI != "template://Code_Review" {
		t.Fatalf("read: %s", m.Raw)
	}
	m = c.Request(t, 3, "resources/read", map[string]string{"uri": "template://Nope"})
	if m.Error == nil || m.Error.Code != -32002 || m.Error.Data.Code != "RESOURCE_NOT_FOUND" {
		t.Fatalf("unknown resource: %s", m.Raw)
	}
	m = c.Request(t, 4, "resources/templates/list", nil)
	if !strings.Contains(string(m.Result), `"uriTemplate":"template://{name}"`) {
		t.Fatalf("templates/list: %s", m.Raw)
	}
}

func TestCompletion(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	complete := func(id int, ref map[string]string, arg, value string) []string {
		t.Helper()
		m := c.Request(t, id, "completion/complete", map[string]any{"ref": ref, "argument": map[string]string{"name": arg, "value": value}})
		var res mcp.CompleteResult
		if err := json.Unmarshal(m.Result, &res); err != nil || m.Error != nil {
			t.Fatalf("%s", m.Raw)
		}
		return res.Completion.Values
	}
	prompt := map[string]string{"type": "ref/prompt", "name": "Code_Review"}
	if got := complete(1, prompt, "focus", "sec"); !cmp.Equal(got, []string{"security"}) {
		t.Errorf("enum completion: %v", got)
	}
	if got := complete(2, prompt, "focus", ""); len(got) < 3 || got[0] != "overall" {
		t.Errorf("all enum values, default included once: %v", got)
	}
	// Free-form values this session used come back.
	c.Request(t, 3, "prompts/get", map[string]any{"name": "Code_Review", "arguments": map[string]string{"code": "x", "language": "Rust"}})
	if got := complete(4, prompt, "language", "ru"); !cmp.Equal(got, []string{"Rust"}) {
		t.Errorf("remembered values: %v", got)
	}
	if got := complete(5, map[string]string{"type": "ref/resource", "uri": "template://{name}"}, "name", "Commit"); !cmp.Equal(got, []string{"Commit_Message"}) {
		t.Errorf("resource name completion: %v", got)
	}
	if got := complete(6, map[string]string{"type": "ref/prompt", "name": "Nope"}, "x", ""); len(got) != 0 {
		t.Errorf("unknown prompt: %v", got)
	}
}

func writeTemplate(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedResourcesAndSubscriptions(t *testing.T) {
	dir := t.TempDir()
	writeTemplate(t, dir, "Style", `{"metadata":{"name":"Style","description":"Style guide","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Use short sentences."}]}`)
	writeTemplate(t, dir, "Write", `{"metadata":{"name":"Write","description":"Writes","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Write it."}],"resources":["template://Style"]}`)
	src := templates.Directory(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})
	e, _, lib := newEngine(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = lib.Run(ctx) }()
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	m := c.Request(t, 1, "prompts/get", map[string]any{"name": "Write"})
	var res mcp.GetPromptResult
	if err := json.Unmarshal(m.Result, &res); err != nil || m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
	if len(res.Messages) != 2 || res.Messages[1].Content.Type != "resource" || res.Messages[1].Content.Resource.URI != "template://Style" ||
		!strings.Contains(res.Messages[1].Content.Resource.Text, "Use short sentences.") {
		t.Fatalf("embedded resource: %s", m.Raw)
	}

	c.Request(t, 2, "resources/subscribe", map[string]string{"uri": "template://Style"})
	time.Sleep(100 * time.Millisecond) // let the watcher start
	writeTemplate(t, dir, "Style", `{"metadata":{"name":"Style","description":"Style guide","version":"1.1.0"},"variables":[],"results":[{"name":"s","content":"Use active voice."}]}`)
	n := c.Notification(t, mcp.NotificationResourceUpdated)
	if !strings.Contains(string(n.Params), "template://Style") {
		t.Fatalf("updated: %s", n.Raw)
	}
}

func TestRenderElicitsMissingVariables(t *testing.T) {
	e, _, _ := newEngine(t, templates.Embedded())
	call := map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Brand_Positioning_Strategy",
		"arguments": map[string]string{"company_name": "Acme"}}}

	t.Run("accepted", func(t *testing.T) {
		c := mcptest.Connect(t, e)
		c.InitializeWith(t, mcp.LatestVersion, map[string]any{"elicitation": map[string]any{}})
		c.Send(mustString(t, map[string]any{"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": call}))
		req := c.Next(t)
		if req.Method != "elicitation/create" {
			t.Fatalf("expected elicitation, got %s", req.Raw)
		}
		var p struct {
			Message         string `json:"message"`
			RequestedSchema struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			} `json:"requestedSchema"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(p.RequestedSchema.Required, []string{"industry", "target_customer"}) || p.RequestedSchema.Properties["industry"]["description"] == "" {
			t.Fatalf("form: %s", req.Params)
		}
		c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"industry":"Robots","target_customer":"Factories"}}}`)
		m := c.Response(t, json.RawMessage(`"r"`))
		if !strings.Contains(string(m.Result), "Robots") || strings.Contains(string(m.Result), `"isError":true`) {
			t.Fatalf("not rendered with the answers: %s", m.Raw)
		}
	})
	t.Run("declined", func(t *testing.T) {
		c := mcptest.Connect(t, e)
		c.InitializeWith(t, mcp.LatestVersion, map[string]any{"elicitation": map[string]any{}})
		c.Send(mustString(t, map[string]any{"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": call}))
		req := c.Next(t)
		c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"decline"}}`)
		m := c.Response(t, json.RawMessage(`"r"`))
		if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "decline") {
			t.Fatalf("declined: %s", m.Raw)
		}
	})
	t.Run("unsupported", func(t *testing.T) {
		c := mcptest.Connect(t, e)
		c.Initialize(t, mcp.LatestVersion)
		m := c.Request(t, "r", "tools/call", call)
		if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "industry, target_customer") {
			t.Fatalf("without elicitation the error names what is missing: %s", m.Raw)
		}
		for _, msg := range c.All() {
			if msg.Method == "elicitation/create" {
				t.Fatal("elicited from a client that cannot")
			}
		}
	})
}

func mustString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
