package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/google/go-cmp/cmp"
	"github.com/xeipuuv/gojsonschema"
)

func sourceTemplate(name, content string) []byte { return testTemplate(name, "1.0.0", content) }

// testTemplate is a template with no variables and one section.
func testTemplate(name, version, content string) []byte {
	return []byte(`{"metadata":{"name":"` + name + `","description":"about ` + name + `","version":"` + version + `"},"variables":[],` +
		`"results":[{"name":"s","content":"` + content + `"}]}`)
}

// repoSource serves a fake GitHub repository through go-github, caching
// on disk in cacheDir.
func repoSource(t *testing.T, owner, cacheDir string, files map[string][]byte) (*fakegithub.Server, *github.Source) {
	t.Helper()
	fake := fakegithub.New(owner, "prompts")
	t.Cleanup(fake.Close)
	fake.PutFiles(files)
	return fake, fakeRepoSource(t, fake, cacheDir)
}

// fakeRepoSource serves fake's main branch through go-github, caching on
// disk in cacheDir.
func fakeRepoSource(t *testing.T, fake *fakegithub.Server, cacheDir string) *github.Source {
	t.Helper()
	src, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: "main", APIURL: fake.URL(), TTL: time.Hour,
		CacheDir: cacheDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestSeveralSources serves two GitHub repositories and a folder together:
// every template under its namespace, bare names by the sources' order,
// the shared name reported, and a change in any of them heard by clients.
func TestSeveralSources(t *testing.T) {
	t.Parallel()
	// One cache folder for both: the sources' files are keyed by
	// repository, ref and folder, so they never mix.
	cacheDir := t.TempDir()
	_, team := repoSource(t, "acme", cacheDir, map[string][]byte{
		"templates/Code_Review.json": sourceTemplate("Code_Review", "team review"),
		"templates/Team_Only.json":   sourceTemplate("Team_Only", "team only"),
		// A dotprompt file in the repository, served like the JSON ones.
		"templates/greet.prompt": []byte("---\nname: Greeter\n---\nHello {{who}}, from the team.")})
	platformRepo, platform := repoSource(t, "ops", cacheDir, map[string][]byte{
		"templates/Code_Review.json":     sourceTemplate("Code_Review", "platform review"),
		"templates/Incident_Update.json": sourceTemplate("Incident_Update", "incident update")})
	dir := t.TempDir()
	writeTemplate(t, dir, "Local_Note", string(sourceTemplate("Local_Note", "local note")))
	if err := os.WriteFile(filepath.Join(dir, "summarize.prompt.yml"),
		[]byte("name: Text Summarizer\nmessages:\n  - role: user\n    content: Summarize {{input}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})

	src, err := templates.NewComposite([]templates.Member{{Namespace: "team", Source: team},
		{Namespace: "platform", Source: platform}, {Namespace: "local", Source: local}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e, _, lib := newEngine(t, src)
	if diff := cmp.Diff([]templates.Conflict{{Name: "Code_Review", Namespaces: []string{"team", "platform"}}}, lib.Catalog().Conflicts()); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = lib.Run(ctx) }()
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	id := 1
	tool := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	tests := []struct {
		name    string
		method  string
		params  any
		want    []string
		notWant []string
		fails   bool
	}{
		{"prompts/list", mcp.MethodPromptsList, map[string]any{},
			[]string{`"local/Local_Note"`, `"platform/Code_Review"`, `"platform/Incident_Update"`, `"team/Code_Review"`, `"team/Team_Only"`,
				`"title":"Code Review (platform)"`, `"local/summarize"`, `"title":"Text Summarizer (local)"`, `"team/greet"`, `"title":"Greeter (team)"`}, nil, false},
		{"a format's prompt from GitHub", mcp.MethodPromptsGet, map[string]any{"name": "greet", "arguments": map[string]string{"who": "Zed"}},
			[]string{`"text":"Hello Zed, from the team."`}, nil, false},
		{"a format's prompt from the folder", mcp.MethodPromptsGet, map[string]any{"name": "local/summarize", "arguments": map[string]string{"input": "this"}},
			[]string{`"text":"Summarize this"`}, nil, false},
		{"namespaced prompt", mcp.MethodPromptsGet, map[string]any{"name": "platform/Code_Review"}, []string{"platform review"}, []string{"team review"}, false},
		{"bare prompt, first source", mcp.MethodPromptsGet, map[string]any{"name": "Code_Review"}, []string{"team review"}, []string{"platform review"}, false},
		{"bare prompt, only source", mcp.MethodPromptsGet, map[string]any{"name": "Incident_Update"}, []string{"incident update"}, nil, false},
		{"bare prompt from the folder", mcp.MethodPromptsGet, map[string]any{"name": "Local_Note"}, []string{"local note"}, nil, false},
		{"wrong namespace", mcp.MethodPromptsGet, map[string]any{"name": "team/Incident_Update"}, []string{"TEMPLATE_NOT_FOUND"}, nil, true},
		{"render tool, namespaced", mcp.MethodToolsCall, tool("flowyprompt_render_template", map[string]any{"name": "platform/Code_Review"}),
			[]string{"platform review"}, []string{"team review"}, false},
		{"render tool, bare", mcp.MethodToolsCall, tool("flowyprompt_render_template", map[string]any{"name": "Code_Review"}),
			[]string{"team review"}, []string{"platform review"}, false},
		{"get tool", mcp.MethodToolsCall, tool("flowyprompt_get_template", map[string]any{"name": "team/Team_Only"}), []string{"team/Team_Only"}, nil, false},
		{"list tool", mcp.MethodToolsCall, tool("flowyprompt_list_templates", map[string]any{}),
			[]string{"platform/Incident_Update", "local/Local_Note", "team/Code_Review"}, nil, false},
		{"search tool", mcp.MethodToolsCall, tool("flowyprompt_search_templates", map[string]any{"query": "incident"}),
			[]string{"platform/Incident_Update"}, []string{"team/Code_Review"}, false},
		{"resource, namespaced", mcp.MethodResourcesRead, map[string]any{"uri": "template://platform/Code_Review"},
			[]string{"platform review"}, []string{"team review"}, false},
		{"resource, escaped by a URI template", mcp.MethodResourcesRead, map[string]any{"uri": "template://platform%2FCode_Review"},
			[]string{"platform review"}, nil, false},
		{"resource, bare", mcp.MethodResourcesRead, map[string]any{"uri": "template://Code_Review"}, []string{"team review"}, nil, false},
		{"resources/list", mcp.MethodResourcesList, map[string]any{}, []string{`"template://platform/Incident_Update"`}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id++
			m := c.Request(t, id, tt.method, tt.params)
			body := string(m.Raw)
			if failed := m.Error != nil || strings.Contains(body, `"isError":true`); failed != tt.fails {
				t.Fatalf("failed = %v, want %v: %s", failed, tt.fails, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("answer lacks %q: %s", w, body)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("answer has %q: %s", w, body)
				}
			}
		})
	}

	// A change in a repository, found by a refresh, reaches clients.
	platformRepo.PutFile("templates/Postmortem.json", sourceTemplate("Postmortem", "postmortem"))
	ch, err := lib.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(templates.Changes{Added: []string{"platform/Postmortem"}, Changed: []string{}, Removed: []string{}}, ch); diff != "" {
		t.Errorf("refresh changes (-want +got):\n%s", diff)
	}
	c.Notification(t, mcp.NotificationPromptsListChanged)
	id++
	if m := c.Request(t, id, mcp.MethodPromptsGet, map[string]any{"name": "Postmortem"}); m.Error != nil || !strings.Contains(string(m.Raw), "postmortem") {
		t.Fatalf("new template not served by its bare name: %s", m.Raw)
	}

	// A change in the folder, found by its watcher, reaches clients too.
	if err := os.WriteFile(filepath.Join(dir, "Second_Note.json"), sourceTemplate("Second_Note", "second note"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Notification(t, mcp.NotificationPromptsListChanged)
	id++
	if m := c.Request(t, id, mcp.MethodPromptsGet, map[string]any{"name": "local/Second_Note"}); m.Error != nil || !strings.Contains(string(m.Raw), "second note") {
		t.Fatalf("new folder template not served: %s", m.Raw)
	}
}

// TestSeveralSourcesFlows: each source's flow is served as NS/NAME and
// runs its own source's templates, even where another source serves the
// bare template name; a bare flow name goes to the first source.
func TestSeveralSourcesFlows(t *testing.T) {
	t.Parallel()
	team, platform := flowDir(t), flowDir(t)
	// The platform's outline differs from the team's, which serves the
	// bare name "outline": its flows must still run its own.
	writeTemplate(t, platform, "outline", `{"metadata":{"name":"outline","version":"1.0.0","description":"d"},
		"variables":[{"name":"input","type":"string","description":"d","required":true}],
		"results":[{"name":"r","content":"PLATFORM OUTLINE <{{input}}>"}]}`)
	if err := os.WriteFile(filepath.Join(platform, "flows", "ops.json"), []byte(`{"name":"ops","description":"Ops","arguments":[{"name":"topic","description":"t"}],
		"steps":[{"name":"only","template":"outline","variables":{"input":"ops"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	member := func(dir string) templates.Source {
		return folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})
	}
	src, err := templates.NewComposite([]templates.Member{{Namespace: "team", Source: member(team)},
		{Namespace: "platform", Source: member(platform)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e, _, lib := newEngine(t, src)
	want := []templates.Conflict{
		{Name: "draft", Namespaces: []string{"team", "platform"}},
		{Name: "outline", Namespaces: []string{"team", "platform"}},
		{Name: "polish", Namespaces: []string{"team", "platform"}},
		{Name: "post", Namespaces: []string{"team", "platform"}, Flow: true},
	}
	if diff := cmp.Diff(want, lib.Catalog().Conflicts()); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	walks := []struct {
		name      string
		wantFlow  string
		wantFirst string // in the first step's prompt
		notFirst  string
		steps     int
	}{
		{"platform/post", "platform/post", "PLATFORM OUTLINE <caching>", "", 3},
		{"team/post", "team/post", "OUTLINE <caching>", "PLATFORM", 3},
		{"post", "team/post", "OUTLINE <caching>", "PLATFORM", 3},
		{"ops", "platform/ops", "PLATFORM OUTLINE <ops>", "", 1},
	}
	id := 0
	for _, w := range walks {
		t.Run(w.name, func(t *testing.T) {
			id++
			res := call(t, c, id, "flowyprompt_start_flow", map[string]any{"name": w.name, "arguments": map[string]string{"topic": "caching"}})
			if res.IsError {
				t.Fatalf("start: %s", res.Content[0].Text)
			}
			sc := res.StructuredContent
			prompt, _ := sc["prompt"].(string)
			if sc["flow"] != w.wantFlow || !strings.Contains(prompt, w.wantFirst) || (w.notFirst != "" && strings.Contains(prompt, w.notFirst)) {
				t.Fatalf("start: flow %v, prompt %q; want flow %s, prompt with %q", sc["flow"], prompt, w.wantFlow, w.wantFirst)
			}
			ns, _, _ := strings.Cut(w.wantFlow, "/")
			for step := 1; ; step++ {
				if tmpl, _ := sc["template"].(string); !strings.HasPrefix(tmpl, ns+"/") {
					t.Errorf("step %d renders %q, want a template of %s", step, tmpl, ns)
				}
				handle, _ := sc["handle"].(string)
				id++
				res = call(t, c, id, "flowyprompt_next_flow_step", map[string]any{"handle": handle, "output": fmt.Sprintf("output %d", step)})
				if res.IsError {
					t.Fatalf("step %d: %s", step+1, res.Content[0].Text)
				}
				sc = res.StructuredContent
				if sc["done"] == true {
					if step != w.steps || sc["flow"] != w.wantFlow {
						t.Errorf("done after %d steps as %v, want %d as %s", step, sc["flow"], w.steps, w.wantFlow)
					}
					return
				}
				if step > w.steps {
					t.Fatalf("not done after %d steps", step)
				}
			}
		})
	}

	id++
	list := c.Request(t, id, mcp.MethodPromptsList, map[string]any{})
	for _, name := range []string{`"flow:platform/ops"`, `"flow:platform/post"`, `"flow:team/post"`} {
		if !strings.Contains(string(list.Raw), name) {
			t.Errorf("prompts/list lacks %s: %s", name, list.Raw)
		}
	}
	prompts := []struct {
		name string
		want []string
	}{
		{"flow:platform/post", []string{"1. outline (template platform/outline)", `"name":"platform/post"`}},
		{"flow:post", []string{"1. outline (template team/outline)", `"name":"team/post"`}},
	}
	for _, p := range prompts {
		id++
		m := c.Request(t, id, mcp.MethodPromptsGet, map[string]any{"name": p.name, "arguments": map[string]string{"topic": "caching"}})
		body := strings.ReplaceAll(string(m.Raw), `\"`, `"`)
		if m.Error != nil {
			t.Fatalf("%s: %s", p.name, m.Raw)
		}
		for _, w := range p.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q: %s", p.name, w, m.Raw)
			}
		}
	}
}

// TestFlowChangeAnnounced: a change to a flow file alone (added, changed,
// removed) is heard by clients as a prompt list change, and never as an
// update of a template:// resource.
func TestFlowChangeAnnounced(t *testing.T) {
	t.Parallel()
	dir := flowDir(t)
	// Templates named as the flows, subscribed to: a flow's change must
	// not be sent as an update of the template of the same name.
	for _, name := range []string{"post", "second"} {
		writeTemplate(t, dir, name, fmt.Sprintf(`{"metadata":{"name":%q,"description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"r","content":"x"}]}`, name))
	}
	c := watchedDirClient(t, dir)
	for i, uri := range []string{"template://post", "template://second"} {
		if m := c.Request(t, i+1, "resources/subscribe", map[string]string{"uri": uri}); m.Error != nil {
			t.Fatalf("subscribe %s: %s", uri, m.Raw)
		}
	}

	second := filepath.Join(dir, "flows", "second.json")
	write := func(p, body string) func() error { return func() error { return os.WriteFile(p, []byte(body), 0o644) } }
	steps := []struct {
		name    string
		change  func() error
		want    string // in prompts/list after it
		notWant string
	}{
		{"added", write(second, `{"name":"second","description":"Second flow","steps":[{"name":"a","template":"outline","variables":{"input":"x"}}]}`),
			`"flow:second"`, ""},
		{"changed", write(second, `{"name":"second","description":"Changed flow","steps":[{"name":"a","template":"outline","variables":{"input":"y"}}]}`),
			`"Changed flow"`, `"Second flow"`},
		{"removed", func() error { return os.Remove(second) }, `"flow:post"`, `"flow:second"`},
	}
	id := 2
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := s.change(); err != nil {
				t.Fatal(err)
			}
			c.Notification(t, mcp.NotificationPromptsListChanged)
			c.Notification(t, mcp.NotificationToolsListChanged)
			id++
			body := string(c.Request(t, id, mcp.MethodPromptsList, map[string]any{}).Raw)
			if !strings.Contains(body, s.want) || (s.notWant != "" && strings.Contains(body, s.notWant)) {
				t.Errorf("prompts/list after the flow was %s: want %s, not %q: %s", s.name, s.want, s.notWant, body)
			}
		})
	}
	for _, m := range c.All() {
		if m.Method == mcp.NotificationResourceUpdated || m.Method == mcp.NotificationResourcesChanged {
			t.Errorf("a flow change sent %s", m.Raw)
		}
	}
}

// TestRefreshReportsFlows: the refresh tool lists flow changes apart from
// the template ones, and only when a flow changed.
func TestRefreshReportsFlows(t *testing.T) {
	t.Parallel()
	dir := flowDir(t)
	e, a, _ := newEngine(t, folder.New(dir, templates.BuildOptions{}))
	schema := outputSchemas(t, a)["flowyprompt_refresh_templates"]
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name      string
		change    func() error
		wantFlows any // structuredContent's flows
		wantText  string
	}{
		{"no change", func() error { return nil }, nil, "no changes"},
		{"flow added", func() error {
			return os.WriteFile(filepath.Join(dir, "flows", "second.json"),
				[]byte(`{"name":"second","description":"d","steps":[{"name":"a","template":"outline","variables":{"input":"x"}}]}`), 0o644)
		}, map[string]any{"added": []any{"second"}, "changed": []any{}, "removed": []any{}},
			"Refreshed: 0 added, 0 changed, 0 removed. 3 templates. Flows: 1 added, 0 changed, 0 removed.\n- Flows added: second"},
		{"flow removed", func() error { return os.Remove(filepath.Join(dir, "flows", "post.json")) },
			map[string]any{"added": []any{}, "changed": []any{}, "removed": []any{"post"}}, "- Flows removed: post"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.change(); err != nil {
				t.Fatal(err)
			}
			res := call(t, c, i+1, "flowyprompt_refresh_templates", map[string]any{})
			sc := res.StructuredContent
			if res.IsError {
				t.Fatal(res.Content[0].Text)
			}
			if diff := cmp.Diff(tt.wantFlows, sc["flows"]); diff != "" {
				t.Errorf("flows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]any{}, sc["added"]); diff != "" {
				t.Errorf("template names added (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Content[0].Text, tt.wantText) {
				t.Errorf("text lacks %q:\n%s", tt.wantText, res.Content[0].Text)
			}
			if r, err := schema.Validate(gojsonschema.NewGoLoader(sc)); err != nil || !r.Valid() {
				t.Errorf("structuredContent violates outputSchema: %v %v", err, r.Errors())
			}
		})
	}
}
