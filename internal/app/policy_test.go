package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

const teamPolicy = `{"claim": "groups",
	"read":  [ {"match": "sre", "sources": ["ops", "team"]}, {"match": "*", "sources": ["team"]} ],
	"write": [ {"match": "prompt-authors", "sources": ["default"]} ]}`

// variableTemplate is a template with one enum variable, for completion.
func variableTemplate(name, content string) string {
	return `{"metadata":{"name":"` + name + `","description":"about ` + name + `","version":"1.0.0"},` +
		`"variables":[{"name":"focus","type":"string","description":"f","required":false,"enum":["security","style"]}],` +
		`"results":[{"name":"s","content":"` + content + ` {{focus}}"}]}`
}

// policyEngine serves the folders ops and team under teamPolicy; the
// members are sre (sre) and dev (no group), neither of whom may write.
func policyEngine(t *testing.T) (e *mcp.Engine, lib *templates.Library, ops string) {
	t.Helper()
	ops, team := t.TempDir(), t.TempDir()
	writeTemplate(t, ops, "Runbook", variableTemplate("Runbook", "ops runbook"))
	writeTemplate(t, ops, "Code_Review", variableTemplate("Code_Review", "ops review"))
	writeTemplate(t, ops, "outline", string(sourceTemplate("outline", "ops outline")))
	if err := os.Mkdir(filepath.Join(ops, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ops, "flows", "oncall.json"), []byte(`{"name":"oncall","description":"d",`+
		`"arguments":[{"name":"topic","description":"t","required":true}],"steps":[{"name":"s","template":"outline"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTemplate(t, team, "Code_Review", variableTemplate("Code_Review", "team review"))
	writeTemplate(t, team, "Team_Note", string(sourceTemplate("Team_Note", "team note")))
	src, err := templates.NewComposite([]templates.Member{
		{Namespace: "ops", Source: folder.New(ops, templates.BuildOptions{})},
		{Namespace: "team", Source: folder.New(team, templates.BuildOptions{})}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.ParsePolicy("policy.json", []byte(teamPolicy), append(app.SourceNames(src), "default"))
	if err != nil {
		t.Fatal(err)
	}
	lib = templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Version: "test", Policy: func() *auth.Policy { return p }})
	e = mcptest.Engine(t, a.Server(), mcp.EngineOptions{})
	t.Cleanup(a.Attach(e))
	return e, lib, ops
}

func as(m *auth.Member) context.Context { return auth.WithMember(context.Background(), m) }

var (
	sre = &auth.Member{Issuer: "https://idp", Subject: "alice", Groups: []string{"sre"}, Scopes: []string{auth.ScopeRead}}
	dev = &auth.Member{Issuer: "https://idp", Subject: "bob", Scopes: []string{auth.ScopeRead}}
)

// TestPolicyViews: two members see what their read rules give them, in
// every list and lookup.
func TestPolicyViews(t *testing.T) {
	e, _, _ := policyEngine(t)
	clients := map[string]*mcptest.Client{"alice": mcptest.ConnectAs(t, e, as(sre)), "bob": mcptest.ConnectAs(t, e, as(dev))}
	for _, c := range clients {
		c.Initialize(t, mcp.LatestVersion)
	}
	tool := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	complete := map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "ops/Runbook"}, "argument": map[string]string{"name": "focus", "value": "sec"}}
	tests := []struct {
		name   string
		method string
		params any
		// what each member's answer holds, and must not
		sre, dev, bobNot []string
	}{
		{"prompts/list", mcp.MethodPromptsList, map[string]any{},
			[]string{`"ops/Runbook"`, `"team/Code_Review"`, `"flow:ops/oncall"`}, []string{`"team/Code_Review"`, `"team/Team_Note"`}, []string{"ops/"}},
		{"bare name, first source", mcp.MethodPromptsGet, map[string]any{"name": "Code_Review"},
			[]string{"ops review"}, []string{"team review"}, []string{"ops review"}},
		{"resources/list", mcp.MethodResourcesList, map[string]any{},
			[]string{`"template://ops/Runbook"`}, []string{`"template://team/Team_Note"`}, []string{"ops/"}},
		{"list tool", mcp.MethodToolsCall, tool("flowyprompt_list_templates", map[string]any{}),
			[]string{"ops/Runbook", "team/Team_Note"}, []string{"team/Team_Note"}, []string{"ops/", "Runbook"}},
		{"search tool", mcp.MethodToolsCall, tool("flowyprompt_search_templates", map[string]any{"query": "review"}),
			[]string{"ops/Code_Review", "team/Code_Review"}, []string{"team/Code_Review"}, []string{"ops/"}},
		// Completion of a prompt nobody has is empty, as of one hidden.
		{"completion", mcp.MethodCompletionComplete, complete, []string{`"security"`}, []string{`"values":[]`}, []string{"security"}},
		{"get tool", mcp.MethodToolsCall, tool("flowyprompt_get_template", map[string]any{"name": "Runbook"}),
			[]string{"ops/Runbook.json"}, []string{"TEMPLATE_NOT_FOUND"}, []string{"Runbook.json", "ops/"}},
		{"flow", mcp.MethodToolsCall, tool("flowyprompt_start_flow", map[string]any{"name": "oncall", "arguments": map[string]string{"topic": "x"}}),
			[]string{"ops outline"}, []string{"oncall"}, []string{"ops outline", "ops/"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for who, want := range map[string][]string{"alice": tt.sre, "bob": tt.dev} {
				m := clients[who].Request(t, 100+i, tt.method, tt.params)
				for _, w := range want {
					if !strings.Contains(string(m.Raw), w) {
						t.Errorf("%s: %.600s\nlacks %s", who, m.Raw, w)
					}
				}
				if who != "bob" {
					continue
				}
				for _, w := range tt.bobNot {
					if strings.Contains(string(m.Raw), w) {
						t.Errorf("dev is shown %q: %.600s", w, m.Raw)
					}
				}
			}
		})
	}
}

// TestPolicyPrivateCache: under an access policy a modern client's lists
// may be kept by its own cache only.
func TestPolicyPrivateCache(t *testing.T) {
	e, _, _ := policyEngine(t)
	c := mcptest.ConnectAs(t, e, as(dev))
	for i, method := range []string{mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodToolsList} {
		m := c.Request(t, i+1, method, modern(map[string]any{}, nil))
		var r struct {
			Scope string `json:"cacheScope"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil || r.Scope != "private" {
			t.Errorf("%s: cacheScope %q, want private: %.300s", method, r.Scope, m.Raw)
		}
		if strings.Contains(string(m.Result), "ops/") {
			t.Errorf("%s shows dev ops: %.300s", method, m.Raw)
		}
	}
}

// TestPolicyHiddenIsMissing: what a member may not read is answered
// exactly as a name that does not exist, the name aside.
func TestPolicyHiddenIsMissing(t *testing.T) {
	e, _, _ := policyEngine(t)
	c := mcptest.ConnectAs(t, e, as(dev))
	c.Initialize(t, mcp.LatestVersion)
	tool := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	tests := []struct {
		name   string
		method string
		params func(name string) any
		hidden string // a name of ops
	}{
		{"prompts/get", mcp.MethodPromptsGet, func(n string) any { return map[string]any{"name": n} }, "ops/Runbook"},
		{"prompts/get, bare", mcp.MethodPromptsGet, func(n string) any { return map[string]any{"name": n} }, "Runbook"},
		{"prompts/get, a typo of it", mcp.MethodPromptsGet, func(n string) any { return map[string]any{"name": n} }, "Runbok"},
		{"a flow's prompt", mcp.MethodPromptsGet, func(n string) any { return map[string]any{"name": "flow:" + n} }, "ops/oncall"},
		{"resources/read", mcp.MethodResourcesRead, func(n string) any { return map[string]any{"uri": "template://" + n} }, "ops/Runbook"},
		{"resources/subscribe", mcp.MethodResourcesSubscribe, func(n string) any { return map[string]any{"uri": "template://" + n} }, "ops/Runbook"},
		{"render tool", mcp.MethodToolsCall, func(n string) any { return tool("flowyprompt_render_template", map[string]any{"name": n}) }, "ops/Runbook"},
		{"history tool", mcp.MethodToolsCall, func(n string) any { return tool("flowyprompt_template_history", map[string]any{"name": n}) }, "Runbook"},
		{"start a flow", mcp.MethodToolsCall, func(n string) any {
			return tool("flowyprompt_start_flow", map[string]any{"name": n, "arguments": map[string]string{"topic": "x"}})
		}, "oncall"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const missing = "Zzqx"
			hidden := c.Request(t, 200+2*i, tt.method, tt.params(tt.hidden))
			absent := c.Request(t, 201+2*i, tt.method, tt.params(missing))
			norm := func(m mcptest.Message, name string) string {
				var v struct {
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(m.Raw, &v); err != nil {
					t.Fatal(err)
				}
				return strings.ReplaceAll(string(v.Result)+string(v.Error), name, "NAME")
			}
			h, a := norm(hidden, tt.hidden), norm(absent, missing)
			if h != a {
				t.Errorf("hidden %s:\n%s\nmissing:\n%s", tt.hidden, h, a)
			}
			if strings.Contains(h, "ops") || strings.Contains(h, "Runbook") {
				t.Errorf("the answer names what is hidden: %s", h)
			}
		})
	}
}

// TestPolicyListChanged: a change to a source reaches only the members
// who may read it. Bob's absence is proven by the change of team that
// reaches him after it.
func TestPolicyListChanged(t *testing.T) {
	e, lib, ops := policyEngine(t)
	ac, bc := mcptest.ConnectAs(t, e, as(sre)), mcptest.ConnectAs(t, e, as(dev))
	for _, c := range []*mcptest.Client{ac, bc} {
		c.Initialize(t, mcp.LatestVersion)
		c.Request(t, "sub", mcp.MethodResourcesSubscribe, map[string]any{"uri": "template://team/Team_Note"})
	}
	ac.Request(t, "sub2", mcp.MethodResourcesSubscribe, map[string]any{"uri": "template://ops/Runbook"})
	writeTemplate(t, ops, "Runbook", variableTemplate("Runbook", "ops runbook, revised"))
	if _, err := lib.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	ac.Notification(t, mcp.NotificationPromptsListChanged)
	if m := ac.Notification(t, mcp.NotificationResourceUpdated); !strings.Contains(string(m.Params), "ops/Runbook") {
		t.Errorf("sre's update: %s", m.Params)
	}
	// A change of team, which both see.
	teamDir := lib.Catalog().Info().Members[1].Location
	writeTemplate(t, teamDir, "Team_Note", string(sourceTemplate("Team_Note", "team note, revised")))
	if _, err := lib.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	ac.Notification(t, mcp.NotificationPromptsListChanged)
	bc.Notification(t, mcp.NotificationPromptsListChanged)
	if m := bc.Notification(t, mcp.NotificationResourceUpdated); !strings.Contains(string(m.Params), "team/Team_Note") {
		t.Errorf("dev's first update is %s, want team/Team_Note's", m.Params)
	}
	for _, m := range bc.All() {
		if strings.HasPrefix(m.Method, "notifications/") && m.Method != mcp.NotificationToolsListChanged && m.Method != mcp.NotificationResourcesChanged {
			t.Errorf("dev was told %s %s", m.Method, m.Params)
		}
		if strings.Contains(string(m.Raw), "ops") {
			t.Errorf("dev was told of ops: %s", m.Raw)
		}
	}
}

// TestPolicyWrite: the save tool is listed to a token with prompts:write
// only, and saving needs a write rule for the source.
func TestPolicyWrite(t *testing.T) {
	dir := t.TempDir()
	p, err := auth.ParsePolicy("policy.json", []byte(teamPolicy), []string{"default", "ops", "team"})
	if err != nil {
		t.Fatal(err)
	}
	src := folder.New(dir, templates.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := mcp.NewEngine(app.New(app.Options{Library: lib, AllowWrite: true, Writer: src, Policy: func() *auth.Policy { return p }}).Server(), mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	write := []string{auth.ScopeRead, auth.ScopeWrite}
	tests := []struct {
		name     string
		m        *auth.Member
		listed   bool
		wantText string // of the save's answer
	}{
		{"read scope only", &auth.Member{Subject: "a", Groups: []string{"prompt-authors"}, Scopes: []string{auth.ScopeRead}}, false, "PERMISSION_DENIED"},
		{"no write rule", &auth.Member{Subject: "b", Groups: []string{"sre"}, Scopes: write}, true, "no write rule"},
		{"author", &auth.Member{Subject: "c", Groups: []string{"prompt-authors"}, Scopes: write}, true, "Created template team_hello"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e, as(tt.m))
			c.Initialize(t, mcp.LatestVersion)
			m := c.Request(t, 1, mcp.MethodToolsList, nil)
			if got := strings.Contains(string(m.Result), `"name":"flowyprompt_save_template"`); got != tt.listed {
				t.Errorf("save tool listed = %v, want %v", got, tt.listed)
			}
			text, isErr := callText(t, c, 2+i, "flowyprompt_save_template", map[string]string{"template": saveTemplate, "message": "m"})
			if !strings.Contains(text, tt.wantText) || isErr == (tt.wantText == "Created template team_hello") {
				t.Errorf("save: error %v, %s; want %q", isErr, text, tt.wantText)
			}
		})
	}
}

// TestPolicyWarnings: a warning about a source (an invalid file) reaches
// only the members who may read it, in the greeting of a new session and
// when it appears; the answer to a later request proves its absence.
func TestPolicyWarnings(t *testing.T) {
	e, lib, ops := policyEngine(t)
	if err := os.WriteFile(filepath.Join(ops, "Broken.json"), []byte(`{`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	ac, bc := mcptest.ConnectAs(t, e, as(sre)), mcptest.ConnectAs(t, e, as(dev))
	for _, c := range []*mcptest.Client{ac, bc} {
		c.Initialize(t, mcp.LatestVersion)
	}
	if m := ac.Notification(t, "notifications/message"); !strings.Contains(string(m.Params), "ops/Broken.json") {
		t.Errorf("sre's greeting: %s", m.Params)
	}
	// A second invalid file, appearing while the sessions are open.
	if err := os.WriteFile(filepath.Join(ops, "Broken_Too.json"), []byte(`{`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m := ac.Notification(t, "notifications/message"); !strings.Contains(string(m.Params), "ops/Broken_Too.json") {
		t.Errorf("sre's warning: %s", m.Params)
	}
	bc.Request(t, "after", mcp.MethodPing, nil)
	for _, m := range bc.All() {
		if m.Method == "notifications/message" {
			t.Errorf("dev was warned: %s", m.Params)
		}
	}
}

// BenchmarkListPromptsPolicy: prompts/list's cost under an access policy,
// two members of different sources asking in turn, against the same list
// without a policy: the part each sees is built once per catalog.
func BenchmarkListPromptsPolicy(b *testing.B) {
	var members []templates.Member
	for _, ns := range []string{"ops", "team"} {
		dir := b.TempDir()
		for i := range 200 {
			name := ns + "_" + strconv.Itoa(i)
			if err := os.WriteFile(filepath.Join(dir, name+".json"), sourceTemplate(name, "text"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		members = append(members, templates.Member{Namespace: ns, Source: folder.New(dir, templates.BuildOptions{})})
	}
	src, err := templates.NewComposite(members, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	p, err := auth.ParsePolicy("policy.json", []byte(teamPolicy), []string{"default", "ops", "team"})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		policy func() *auth.Policy
	}{{"no policy", nil}, {"two members", func() *auth.Policy { return p }}} {
		b.Run(bc.name, func(b *testing.B) {
			a := app.New(app.Options{Library: lib, Policy: bc.policy})
			ctxs := []context.Context{as(sre), as(dev)}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := a.ListPrompts(ctxs[i%2], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
