package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func TestTemplatesAsResources(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	dir := t.TempDir()
	writeTemplate(t, dir, "Style", `{"metadata":{"name":"Style","description":"Style guide","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Use short sentences."}]}`)
	writeTemplate(t, dir, "Write", `{"metadata":{"name":"Write","description":"Writes","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Write it."}],"resources":["template://Style"]}`)
	c := watchedDirClient(t, dir)

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
	writeTemplate(t, dir, "Style", `{"metadata":{"name":"Style","description":"Style guide","version":"1.1.0"},"variables":[],"results":[{"name":"s","content":"Use active voice."}]}`)
	n := c.Notification(t, mcp.NotificationResourceUpdated)
	if !strings.Contains(string(n.Params), "template://Style") {
		t.Fatalf("updated: %s", n.Raw)
	}
}

func TestRenderElicitsMissingVariables(t *testing.T) {
	t.Parallel()
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

// TestPathResources: a template may list files of its folder; those, and
// only those, are served, as text or as a base64 blob, never from outside
// the folder.
func TestPathResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	files := map[string]string{
		"docs/guide.md": "# Guide\nBe brief.",
		"logo.png":      "\x89PNG\r\n\x1a\n\x00\x00binary",
		"empty.txt":     "",
		"notes.txt":     "not listed by any template",
		outside:         "outside the folder",
	}
	for name, body := range files {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "docs", "link.md")); err != nil {
		t.Fatal(err)
	}
	writeTemplate(t, dir, "Write", `{"metadata":{"name":"Write","description":"Writes","version":"1.0.0"},"variables":[],`+
		`"results":[{"name":"s","content":"Write it."}],"resources":["docs/guide.md","logo.png","empty.txt","docs/link.md"]}`)
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	read := func(id int, uri string) (mcp.ReadResourceResult, mcptest.Message) {
		t.Helper()
		m := c.Request(t, id, "resources/read", map[string]string{"uri": uri})
		var res mcp.ReadResourceResult
		if m.Error == nil {
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatal(err)
			}
		}
		return res, m
	}
	tests := []struct {
		uri      string
		wantText *string // nil: a blob, or an error when wantBlob is also empty
		wantBlob string
		wantMIME string
	}{
		{uri: "template-file:///docs/guide.md", wantText: ptr("# Guide\nBe brief."), wantMIME: "text/markdown; charset=utf-8"},
		{uri: "docs/guide.md", wantText: ptr("# Guide\nBe brief.")},
		{uri: "./docs/guide.md", wantText: ptr("# Guide\nBe brief.")},
		{uri: "template-file:///notes.txt"},
		{uri: "empty.txt", wantText: ptr(""), wantMIME: "text/plain; charset=utf-8"},
		{uri: "logo.png", wantBlob: base64.StdEncoding.EncodeToString([]byte(files["logo.png"])), wantMIME: "image/png"},
		{uri: "notes.txt"},    // in the folder, listed by no template
		{uri: ".env"},         // hidden
		{uri: "docs/link.md"}, // listed, but a link leading out
		{uri: "../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt"},
	}
	for i, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			res, m := read(10+i, tt.uri)
			if tt.wantText == nil && tt.wantBlob == "" {
				if m.Error == nil || m.Error.Data.Code != "RESOURCE_NOT_FOUND" || strings.Contains(string(m.Raw), "outside the folder\"") {
					t.Fatalf("want RESOURCE_NOT_FOUND without the content, got %s", m.Raw)
				}
				return
			}
			if m.Error != nil || len(res.Contents) != 1 {
				t.Fatalf("read %s: %s", tt.uri, m.Raw)
			}
			got := res.Contents[0]
			if want := "template-file:///" + path.Clean(strings.TrimPrefix(tt.uri, "template-file:///")); got.URI != want {
				t.Errorf("uri = %q, want the absolute %q", got.URI, want)
			}
			if tt.wantText != nil && (got.Text != *tt.wantText || got.Blob != "" || !strings.Contains(string(m.Result), `"text":`)) {
				t.Errorf("text = %q, blob %q, want text %q (always present): %s", got.Text, got.Blob, *tt.wantText, m.Result)
			}
			if tt.wantBlob != "" && (got.Blob != tt.wantBlob || got.Text != "") {
				t.Errorf("blob = %q, text %q, want blob %q", got.Blob, got.Text, tt.wantBlob)
			}
			if tt.wantMIME != "" && got.MimeType != tt.wantMIME {
				t.Errorf("mimeType = %q, want %q", got.MimeType, tt.wantMIME)
			}
		})
	}

	// resources/list names the listed files by their absolute URIs, but
	// not the link leading out: it cannot be read.
	var list mcp.ListResourcesResult
	if err := json.Unmarshal(c.Request(t, 98, "resources/list", nil).Result, &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{"template://Write", "template-file:///docs/guide.md",
		"template-file:///empty.txt", "template-file:///logo.png"}
	if diff := cmp.Diff(want, uris); diff != "" {
		t.Errorf("resources/list (-want +got):\n%s", diff)
	}

	// prompts/get names the link as not attached rather than send what it
	// points to, and serves the rest.
	m := c.Request(t, 99, "prompts/get", map[string]any{"name": "Write"})
	if m.Error != nil || strings.Contains(string(m.Raw), "outside the folder\"") || !strings.Contains(string(m.Raw), "not attached") ||
		!strings.Contains(string(m.Raw), "docs/link.md") {
		t.Fatalf("prompts/get with a link leading out: %s", m.Raw)
	}
}

func ptr[T any](v T) *T { return &v }

// TestWarningsGreetNewSessions: warnings from before a client connected
// (the first load happens before any) reach each session once it has
// initialized, and not before.
func TestWarningsGreetNewSessions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTemplate(t, dir, "Good", `{"metadata":{"name":"Good","description":"Fine","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Hi."}]}`)
	writeTemplate(t, dir, "Broken", `{"metadata":{"name":"Broken","description":"No version"},"variables":[],"results":[{"name":"s","content":"Hi."}]}`)
	e, _ := newDirEngine(t, dir)

	for i := range 2 {
		c := mcptest.Connect(t, e)
		c.Request(t, "init", "initialize", map[string]any{"protocolVersion": mcp.LatestVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "mcptest", "version": "1"}})
		c.Request(t, "p", "ping", nil)
		for _, m := range c.All() {
			if m.Method == mcp.NotificationMessage {
				t.Fatalf("session %d: warning before notifications/initialized: %s", i, m.Raw)
			}
		}
		c.Notify(t, "notifications/initialized", nil)
		p := logMessage(t, c)
		if p.Level != "warning" || p.Data["path"] != "Broken.json" || !strings.Contains(fmt.Sprint(p.Data["message"]), "template left out") {
			t.Errorf("session %d: warning = %+v", i, p)
		}
		// A second initialized notification does not repeat it.
		c.Notify(t, "notifications/initialized", nil)
		c.Request(t, "p2", "ping", nil)
		for _, m := range c.All() {
			if m.Method == mcp.NotificationMessage {
				t.Errorf("session %d: warning repeated: %s", i, m.Raw)
			}
		}
	}
}

// TestTemplateLinkLeadingOut: a template file that is a symbolic link out
// of the folder is not served, and each session is warned about it like
// about any invalid file.
func TestTemplateLinkLeadingOut(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "templates")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTemplate(t, dir, "Good", `{"metadata":{"name":"Good","description":"Fine","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Hi."}]}`)
	writeTemplate(t, base, "secret", `{"metadata":{"name":"Secret","description":"Outside","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Not for clients."}]}`)
	if err := os.Symlink(filepath.Join(base, "secret.json"), filepath.Join(dir, "evil.json")); err != nil {
		t.Fatal(err)
	}
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	p := logMessage(t, c)
	if msg := fmt.Sprint(p.Data["message"]); p.Level != "warning" || p.Data["path"] != "evil.json" ||
		!strings.Contains(msg, "template left out") || !strings.Contains(msg, "symbolic link leading out of the template folder") {
		t.Errorf("warning = %+v, want evil.json left out as a link leading out", p)
	}
	m := c.Request(t, 1, "prompts/list", nil)
	var list mcp.ListPromptsResult
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pr := range list.Prompts {
		names = append(names, pr.Name)
	}
	if diff := cmp.Diff([]string{"Good"}, names); diff != "" {
		t.Errorf("prompts mismatch (-want +got):\n%s", diff)
	}
	if strings.Contains(string(m.Raw), "Not for clients") {
		t.Errorf("prompts/list shows the template outside the folder: %s", m.Raw)
	}
}

// TestElicitationForm: the form asks for each missing required variable
// with its description, enum and default; a cancelled form is a tool
// error; a client that takes only URL elicitation is not sent a form.
func TestElicitationForm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTemplate(t, dir, "Ask", `{"metadata":{"name":"Ask","description":"Asks","version":"1.0.0"},`+
		`"variables":[{"name":"tone","type":"string","description":"How it sounds","required":true,"enum":["formal","casual"],"default":"formal"},`+
		`{"name":"topic","type":"string","description":"What it is about","required":true}],`+
		`"results":[{"name":"s","content":"Write about {{topic}}, {{tone}}."}]}`)
	e, _ := newDirEngine(t, dir)
	call := mustString(t, map[string]any{"jsonrpc": "2.0", "id": "r", "method": "tools/call",
		"params": map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Ask"}}})

	t.Run("form", func(t *testing.T) {
		c := mcptest.Connect(t, e)
		c.InitializeWith(t, mcp.LatestVersion, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})
		c.Send(call)
		req := c.Next(t)
		var p struct {
			RequestedSchema struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			} `json:"requestedSchema"`
		}
		if req.Method != "elicitation/create" || json.Unmarshal(req.Params, &p) != nil {
			t.Fatalf("expected elicitation, got %s", req.Raw)
		}
		want := map[string]map[string]any{
			"tone":  {"type": "string", "title": "tone", "description": "How it sounds", "enum": []any{"formal", "casual"}, "default": "formal"},
			"topic": {"type": "string", "title": "topic", "description": "What it is about", "minLength": float64(1)},
		}
		if diff := cmp.Diff(want, p.RequestedSchema.Properties); diff != "" {
			t.Errorf("form fields (-want +got):\n%s", diff)
		}
		if !cmp.Equal(p.RequestedSchema.Required, []string{"tone", "topic"}) {
			t.Errorf("required = %v", p.RequestedSchema.Required)
		}
		c.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"cancel"}}`)
		m := c.Response(t, json.RawMessage(`"r"`))
		if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "cancel") {
			t.Fatalf("cancelled form: %s", m.Raw)
		}
	})
	t.Run("URL elicitation only", func(t *testing.T) {
		c := mcptest.Connect(t, e)
		c.InitializeWith(t, mcp.LatestVersion, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
		m := c.Request(t, "r", "tools/call", map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Ask"}})
		if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "tone, topic") {
			t.Fatalf("want the missing variables named: %s", m.Raw)
		}
		for _, msg := range c.All() {
			if msg.Method == "elicitation/create" {
				t.Fatal("sent a form to a client that takes only URL elicitation")
			}
		}
	})
}

// TestRenderToolBudget: a rendered prompt longer than a tool result may
// carry is cut at a line, says so, and says how to get it whole; the
// structured copy agrees with the text.
func TestRenderToolBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	writeTemplate(t, dir, "Big", `{"metadata":{"name":"Big","description":"Big","version":"1.0.0"},`+
		`"variables":[{"name":"a","type":"string","description":"filler"},{"name":"b","type":"string","description":"filler"}],`+
		`"results":[{"name":"s","content":`+mustString(t, strings.Repeat(line, 900)+"{{a}}{{b}}")+`}]}`)
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	value := strings.Repeat("é", 10_000) // 10,000 characters, 20,000 bytes
	m := c.Request(t, 1, "tools/call", map[string]any{"name": "flowyprompt_render_template",
		"arguments": map[string]any{"name": "Big", "arguments": map[string]string{"a": value, "b": value}}})
	var res struct {
		Content           []mcp.Content  `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("render: %.500s", m.Raw)
	}
	text := res.Content[0].Text
	if n := len([]rune(text)); n > 100_000 {
		t.Errorf("result text has %d characters, over the 100,000 budget", n)
	}
	whole := c.Request(t, 2, "prompts/get", map[string]any{"name": "Big", "arguments": map[string]string{"a": value, "b": value}})
	var got mcp.GetPromptResult
	if err := json.Unmarshal(whole.Result, &got); err != nil || len(got.Messages) != 1 {
		t.Fatalf("prompts/get: %.300s", whole.Raw)
	}
	full := got.Messages[0].Content.Text
	total := len([]rune(full))
	prompt := res.StructuredContent["text"].(string)
	if res.StructuredContent["truncated"] != true || res.StructuredContent["total_characters"] != float64(total) {
		t.Errorf("structured = truncated %v, total %v; want true, %d", res.StructuredContent["truncated"], res.StructuredContent["total_characters"], total)
	}
	// The prompt is in the text and in structuredContent, which share the
	// budget: each carries a little under half of it.
	if !strings.HasPrefix(full, prompt) || !strings.HasPrefix(full[len(prompt):], "\n") || len([]rune(prompt)) < 40_000 {
		t.Errorf("the cut prompt (%d bytes) is not the whole prompt's beginning up to a line break", len(prompt))
	}
	if !strings.Contains(text, "<<<PROMPT\n"+prompt+"\nPROMPT>>>") {
		t.Error("the text and structuredContent disagree on the prompt")
	}
	if !strings.Contains(text, fmt.Sprintf("Truncated: the prompt has %d characters", total)) || !strings.Contains(text, "prompts/get Big") {
		t.Errorf("no truncation notice naming the way to the whole prompt:\n%s", text[len(text)-600:])
	}
}

// TestListCursorNoticesChanges: the list tool's cursor resumes where it
// left off, and says so when templates were added before that place
// rather than skip one.
func TestListCursorNoticesChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"B", "C", "D"} {
		writeTemplate(t, dir, name, `{"metadata":{"name":"`+name+`","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`)
	}
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	list := func(id int, args map[string]any) (map[string]any, bool) {
		t.Helper()
		m := c.Request(t, id, "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": args})
		var res struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
			Content           []mcp.Content  `json:"content"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			return map[string]any{"error": res.Content[0].Text}, true
		}
		return res.StructuredContent, false
	}
	first, _ := list(1, map[string]any{"limit": 1})
	cursor := first["next_cursor"].(string)
	if second, isErr := list(2, map[string]any{"limit": 1, "cursor": cursor}); isErr || second["templates"].([]any)[0].(map[string]any)["name"] != "C" {
		t.Fatalf("second page = %v", second)
	}
	writeTemplate(t, dir, "A", `{"metadata":{"name":"A","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`)
	c.Request(t, 3, "tools/call", map[string]any{"name": "flowyprompt_refresh_templates", "arguments": map[string]any{}})
	got, isErr := list(4, map[string]any{"limit": 1, "cursor": cursor})
	if !isErr || !strings.Contains(got["error"].(string), "the library changed since the previous page") {
		t.Fatalf("cursor after a template was added before it: %v", got)
	}
}

// staleSource serves the built-in examples as a catalog gone stale, as
// the GitHub source does when it starts offline from its disk cache.
type staleSource struct{ templates.Source }

func (s staleSource) Load(ctx context.Context) (*templates.Catalog, error) {
	cat, err := s.Source.Load(ctx)
	if err != nil {
		return nil, err
	}
	return cat.WithStale(&templates.Staleness{Since: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Reason: "GitHub is unreachable", Code: "NETWORK_ERROR"}), nil
}

// TestStaleStartGreetsSessions: a library that started stale (offline
// from the disk cache) says so to each session once it has initialized.
func TestStaleStartGreetsSessions(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, staleSource{templates.Embedded()})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	p := logMessage(t, c)
	if p.Level != "warning" || p.Data["code"] != "NETWORK_ERROR" || p.Data["since"] != "2026-11-22T00:00:00Z" ||
		!strings.Contains(fmt.Sprint(p.Data["message"]), "stale: GitHub is unreachable") {
		t.Errorf("warning = %+v", p)
	}
}

// TestLibraryChangesReachClients: a template that starts listing a file
// changes resources/list although no template was added or removed, and a
// file turned invalid while its last version is still served is reported
// as such, not as left out.
func TestLibraryChangesReachClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const write = `{"metadata":{"name":"Write","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]%s}`
	writeTemplate(t, dir, "Write", fmt.Sprintf(write, ""))
	if err := os.WriteFile(filepath.Join(dir, "guide.md"), []byte("be brief"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	refresh := func(id int) {
		t.Helper()
		if m := c.Request(t, id, "tools/call", map[string]any{"name": "flowyprompt_refresh_templates", "arguments": map[string]any{}}); m.Error != nil {
			t.Fatalf("refresh: %s", m.Raw)
		}
	}

	writeTemplate(t, dir, "Write", fmt.Sprintf(write, `,"resources":["guide.md"]`))
	refresh(1)
	c.Notification(t, mcp.NotificationResourcesChanged)

	writeTemplate(t, dir, "Write", `{"metadata":`)
	refresh(2)
	n := c.Notification(t, mcp.NotificationMessage)
	if !strings.Contains(string(n.Params), "last valid version still served") || strings.Contains(string(n.Params), "left out") {
		t.Errorf("warning for a kept file = %s", n.Params)
	}
}

// TestListLongDescription: a description as long as a template file may be
// is cut in the list, so the page stays within budget and still lists
// every template.
func TestListLongDescription(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTemplate(t, dir, "A_Long", `{"metadata":{"name":"A_Long","description":"`+strings.Repeat("d", 99_000)+`","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`)
	writeTemplate(t, dir, "B_Short", `{"metadata":{"name":"B_Short","description":"short","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"x"}]}`)
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "tools/call", map[string]any{"name": "flowyprompt_list_templates", "arguments": map[string]any{}})
	var res struct {
		Content           []mcp.Content  `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("list: %.300s", m.Raw)
	}
	text := res.Content[0].Text
	if n := len([]rune(text)); n > 100_000 || !strings.Contains(text, strings.Repeat("d", 1000)+"…") || strings.Contains(text, strings.Repeat("d", 1001)) {
		t.Errorf("the long description is not cut at 1,000 characters (text of %d characters)", n)
	}
	if res.StructuredContent["returned"] != float64(2) || res.StructuredContent["truncated"] != false {
		t.Errorf("returned %v, truncated %v; want both templates on one page", res.StructuredContent["returned"], res.StructuredContent["truncated"])
	}
}

// logMessage waits for the next notifications/message and decodes it.
func logMessage(t *testing.T, c *mcptest.Client) (p struct {
	Level string         `json:"level"`
	Data  map[string]any `json:"data"`
}) {
	t.Helper()
	n := c.Notification(t, mcp.NotificationMessage)
	if err := json.Unmarshal(n.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestListTextShowsEnums: the list tool's text names each variable's
// allowed values, as its description promises.
func TestListTextShowsEnums(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	res := call(t, c, 1, "flowyprompt_list_templates", map[string]any{"limit": 100})
	text := res.Content[0].Text
	tests := []struct{ template, want string }{
		{"Code_Review", `focus (default "overall"; one of overall, correctness, security, performance, readability, tests)`},
		{"Commit_Message", `style (default "conventional"; one of conventional, plain)`},
		{"Code_Review", `code (required)`},
	}
	for _, tt := range tests {
		entry := text[strings.Index(text, "**"+tt.template+"**"):]
		entry, _, _ = strings.Cut(entry, "\n\n")
		if !strings.Contains(entry, tt.want) {
			t.Errorf("%s's entry lacks %q:\n%s", tt.template, tt.want, entry)
		}
	}
}

// TestResourceDescriptionsAreSentences: resources/list describes each
// resource in a sentence.
func TestResourceDescriptionsAreSentences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"Guided.json": `{"metadata":{"name":"Guided","description":"Writes in house style","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Write it."}],"resources":["guides/style.md","shared.md"]}`,
		"Other.json": `{"metadata":{"name":"Other","description":"Other things.","version":"1.0.0"},"variables":[],` +
			`"results":[{"name":"s","content":"Read it."}],"resources":["shared.md"]}`,
		"guides/style.md": "# Style",
		"shared.md":       "shared",
	})
	e, _ := newDirEngine(t, dir)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	m := c.Request(t, 1, "resources/list", nil)
	var list mcp.ListResourcesResult
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"template://Guided":                "Writes in house style.",
		"template://Other":                 "Other things.",
		"template-file:///guides/style.md": "A context file that the template Guided lists as a resource.",
		"template-file:///shared.md":       "A context file that the templates Guided and Other list as a resource.",
	}
	got := map[string]string{}
	for _, r := range list.Resources {
		got[r.URI] = r.Description
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources/list descriptions (-want +got):\n%s", diff)
	}
}
