package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// labelled is a server whose repository serves production from main and
// staging from the branch staging, each with its own Greeting text.
type labelled struct {
	fake       *fakegithub.Server
	a          *app.App
	e          *mcp.Engine
	set        *labelset.Set
	lib        *templates.Library
	prod, stag string // the commits
	opened     *atomic.Int32
}

func newLabelled(t *testing.T, defaultLabel string) *labelled {
	t.Helper()
	return newLabelledWith(t, app.Options{Label: defaultLabel})
}

// newLabelledWith is newLabelled with the app's options opts (its
// Library, Version and Labels filled in).
func newLabelledWith(t *testing.T, opts app.Options) *labelled {
	t.Helper()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	shared := sourceTemplate("Shared", "the same on every ref")
	stag := fake.CommitFiles("staging text", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "staging text"),
		"templates/Shared.json": shared})
	fake.SetBranch("staging", stag)
	prod := fake.CommitFiles("production text", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "production text")})
	pool := github.NewBlobPool(0)
	cacheDir := t.TempDir()
	source := func(ref string) *github.Source {
		src, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: ref, APIURL: fake.URL(), TTL: time.Hour,
			CacheDir: cacheDir, Logger: slog.New(slog.DiscardHandler), Blobs: pool})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	lib := templates.NewLibrary(source("main"), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := &labelled{fake: fake, lib: lib, prod: prod, stag: stag, opened: new(atomic.Int32)}
	l.set = labelset.NewSet([]string{"production", "staging"}, lib, func(ctx context.Context, name string) (*templates.Library, error) {
		l.opened.Add(1)
		lib := templates.NewLibrary(source(name), slog.New(slog.DiscardHandler))
		return lib, lib.Load(ctx)
	}, nil)
	t.Cleanup(l.set.Close)
	opts.Library, opts.Version, opts.Labels = lib, "test", l.set
	if opts.AllowWrite && opts.Writer == nil {
		opts.Writer = lib.Source().(app.TemplateWriter)
	}
	a := app.New(opts)
	l.a, l.e = a, mcptest.Engine(t, a.Server(), mcp.EngineOptions{})
	t.Cleanup(a.Attach(l.e))
	return l
}

// served reads a result's _meta["io.flowyprompt/served"].
func served(t *testing.T, m mcptest.Message) map[string]string {
	t.Helper()
	var r struct {
		Meta map[string]map[string]string `json:"_meta"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Meta[label.ServedKey]
}

// TestLabelChoice: a request is served the label it names in _meta, else
// its HTTP header's, else the server's --label, else the default; the
// answer says which label and commit served it; a label no source names
// is refused with the labels; a label's library is opened on first use,
// once, reading from GitHub only the files the default's lacks.
func TestLabelChoice(t *testing.T) {
	l := newLabelled(t, "")
	staging := label.WithHeader(context.Background(), "staging")
	production := label.WithHeader(context.Background(), "production")
	blobsBefore := l.fake.Count(fakegithub.RouteBlob)
	if n := l.opened.Load(); n != 0 {
		t.Fatalf("%d label libraries opened before any request asked", n)
	}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	get := func(meta map[string]any) map[string]any {
		p := map[string]any{"name": "Greeting"}
		if meta != nil {
			p["_meta"] = meta
		}
		return p
	}
	tests := []struct {
		name   string
		from   context.Context
		params map[string]any
		text   string
		label  string
		commit string
	}{
		{"none: the default", context.Background(), get(nil), "production text", "production", l.prod},
		{"_meta", context.Background(), get(map[string]any{label.MetaKey: "staging"}), "staging text", "staging", l.stag},
		{"_meta names the default", context.Background(), get(map[string]any{label.MetaKey: "production"}), "production text", "production", l.prod},
		{"the header", staging, get(nil), "staging text", "staging", l.stag},
		{"_meta before the header", staging, get(map[string]any{label.MetaKey: "production"}), "production text", "production", l.prod},
		{"the header naming the default", production, get(nil), "production text", "production", l.prod},
		{"an empty _meta label is none", staging, get(map[string]any{label.MetaKey: ""}), "staging text", "staging", l.stag},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.RequestFrom(t, tt.from, i+1, mcp.MethodPromptsGet, tt.params)
			if m.Error != nil {
				t.Fatalf("error: %+v", m.Error)
			}
			if !strings.Contains(string(m.Result), tt.text) {
				t.Errorf("result lacks %q: %s", tt.text, m.Result)
			}
			if got := served(t, m); got["label"] != tt.label || got["commit"] != tt.commit {
				t.Errorf("served %v, want label %s commit %s", got, tt.label, tt.commit)
			}
		})
	}
	if n := l.opened.Load(); n != 1 {
		t.Errorf("the staging library was opened %d times, want once", n)
	}
	// Shared.json is the same blob on both refs: only staging's Greeting
	// was read from GitHub for the staging library.
	if n := l.fake.Count(fakegithub.RouteBlob) - blobsBefore; n != 1 {
		t.Errorf("opening staging read %d blobs from GitHub, want 1 (the file main does not have)", n)
	}

	// A tool call says it too, and reads the label's library.
	m := c.RequestFrom(t, staging, 100, mcp.MethodToolsCall, map[string]any{"name": "flowyprompt_render_template", "arguments": map[string]any{"name": "Greeting"}})
	if !strings.Contains(string(m.Result), "staging text") {
		t.Errorf("render tool under the staging header: %s", m.Result)
	}
	if got := served(t, m); got["label"] != "staging" || got["commit"] != l.stag {
		t.Errorf("render tool served %v", got)
	}
	// So does every list, each of its label's library.
	for i, method := range []string{mcp.MethodPromptsList, mcp.MethodToolsList, mcp.MethodResourcesList, mcp.MethodResourceTemplatesList} {
		m := c.RequestFrom(t, staging, 200+i, method, map[string]any{})
		if got := served(t, m); got["label"] != "staging" || got["commit"] != l.stag {
			t.Errorf("%s under the staging header served %v: %.300s", method, got, m.Raw)
		}
	}
	if m := c.RequestFrom(t, context.Background(), 300, mcp.MethodPromptsList, map[string]any{}); served(t, m)["label"] != "production" {
		t.Errorf("prompts/list with no label: %.300s", m.Raw)
	}

	for _, tt := range []struct {
		name   string
		from   context.Context
		params map[string]any
	}{
		{"in _meta", context.Background(), get(map[string]any{label.MetaKey: "canary"})},
		{"in the header", label.WithHeader(context.Background(), "canary"), get(nil)},
		{"not a string", context.Background(), get(map[string]any{label.MetaKey: 7})},
		{"a long one, not echoed whole", context.Background(), get(map[string]any{label.MetaKey: strings.Repeat("x", 100_000)})},
	} {
		t.Run("unknown label "+tt.name, func(t *testing.T) {
			m := c.RequestFrom(t, tt.from, "bad "+tt.name, mcp.MethodPromptsGet, tt.params)
			if m.Error == nil {
				t.Fatalf("served an unknown label: %s", m.Result)
			}
			if m.Error.Code != -32602 || !strings.Contains(string(m.Raw), "UNKNOWN_LABEL") || !strings.Contains(string(m.Raw), "production, staging") {
				t.Errorf("refusal: %.2000s", m.Raw)
			}
			if len(m.Raw) > 4096 {
				t.Errorf("refusal of %d bytes echoes the label", len(m.Raw))
			}
		})
	}
}

// TestLabelOfServer: --label is the label of a request that names none,
// below the header and _meta. What a list holds then depends on a
// header: its cache hint is private.
func TestLabelOfServer(t *testing.T) {
	l := newLabelled(t, "staging")
	if h := l.a.Server().Cache(mcp.MethodPromptsList); h.Scope != mcp.CachePrivate {
		t.Errorf("prompts/list cache scope %q with labels, want %q", h.Scope, mcp.CachePrivate)
	}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	for i, tt := range []struct {
		from   context.Context
		params map[string]any
		want   string
	}{
		{context.Background(), map[string]any{"name": "Greeting"}, "staging text"},
		{label.WithHeader(context.Background(), "production"), map[string]any{"name": "Greeting"}, "production text"},
		{context.Background(), map[string]any{"name": "Greeting", "_meta": map[string]any{label.MetaKey: "production"}}, "production text"},
	} {
		m := c.RequestFrom(t, tt.from, i+1, mcp.MethodPromptsGet, tt.params)
		if !strings.Contains(string(m.Result), tt.want) {
			t.Errorf("#%d: result lacks %q: %s", i, tt.want, m.Raw)
		}
	}
}

// TestLabelMoved: moving a label's ref reaches, at the label's next
// revalidation, the clients following it alone; the default's change
// reaches the others alone. Each absence is proven by a ping answered
// after the change was announced.
func TestLabelMoved(t *testing.T) {
	l := newLabelled(t, "")
	prodClient := mcptest.Connect(t, l.e)
	prodClient.Initialize(t, mcp.LatestVersion)
	// Opened by a request with the header, as the HTTP transports open
	// a session: its notifications follow staging.
	stagClient := mcptest.ConnectAs(t, l.e, label.WithHeader(context.Background(), "staging"))
	stagClient.Initialize(t, mcp.LatestVersion)
	stagLib, err := l.set.Library(context.Background(), "staging")
	if err != nil {
		t.Fatal(err)
	}

	moved := l.fake.CommitFiles("staging moves", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "staging two")})
	l.fake.SetBranch("staging", moved)
	l.fake.SetBranch("main", l.prod)
	if _, err := stagLib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	stagClient.Notification(t, mcp.NotificationPromptsListChanged)
	noListChanged(t, prodClient, "staging's move")
	m := stagClient.RequestFrom(t, label.WithHeader(context.Background(), "staging"), "after", mcp.MethodPromptsGet, map[string]any{"name": "Greeting"})
	if !strings.Contains(string(m.Result), "staging two") || served(t, m)["commit"] != moved {
		t.Errorf("after the move, staging serves %s", m.Raw)
	}

	l.fake.CommitFiles("production changes", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "production two")})
	if _, err := l.lib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	prodClient.Notification(t, mcp.NotificationPromptsListChanged)
	noListChanged(t, stagClient, "production's change")
}

// noListChanged fails when c heard of a prompt list change before the
// answer to a ping sent now, which comes after anything announced so far.
func noListChanged(t *testing.T, c *mcptest.Client, what string) {
	t.Helper()
	c.Request(t, "ping "+what, "ping", nil)
	for _, m := range c.All() {
		if m.Method == mcp.NotificationPromptsListChanged {
			t.Errorf("a client of another label heard of %s", what)
		}
	}
}

// TestLabelListen: a subscriptions/listen stream (2026-07-28) follows the
// label its request names: a label's move is heard on the streams
// following it alone.
func TestLabelListen(t *testing.T) {
	l := newLabelled(t, "")
	c := mcptest.Connect(t, l.e)
	listen := func(id int, label string) {
		meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
		if label != "" {
			meta += `,"io.flowyprompt/label":"` + label + `"`
		}
		c.Send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"subscriptions/listen","params":{"_meta":{` + meta +
			`},"notifications":{"promptsListChanged":true}}}`)
		if m := c.Notification(t, mcp.NotificationSubscriptionsAcknowledged); m.Method == "" {
			t.Fatal("listen not acknowledged")
		}
	}
	listen(1, "staging")
	listen(2, "")
	stagLib, err := l.set.Library(context.Background(), "staging")
	if err != nil {
		t.Fatal(err)
	}
	// heard is the subscription the next prompts list_changed is tagged
	// with; nothing else of the kind may come before a ping answered
	// after it.
	heard := func(want string) {
		t.Helper()
		m := c.Notification(t, mcp.NotificationPromptsListChanged)
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || string(p.Meta[mcp.MetaSubscriptionID]) != want {
			t.Errorf("list_changed for subscription %s, want %s", p.Meta[mcp.MetaSubscriptionID], want)
		}
		noListChanged(t, c, "a change to another label's stream")
	}
	moved := l.fake.CommitFiles("staging moves", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "staging two")})
	l.fake.SetBranch("staging", moved)
	l.fake.SetBranch("main", l.prod)
	if _, err := stagLib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	heard("1")
	l.fake.CommitFiles("production changes", map[string][]byte{"templates/Greeting.json": sourceTemplate("Greeting", "production two")})
	if _, err := l.lib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	heard("2")
}

// TestLabelByPolicy: a member whose policy's read rule names a label is
// served that label when the request names none; a label the request
// names (its header) still wins, and a member no labelled rule matches
// gets the server's default.
func TestLabelByPolicy(t *testing.T) {
	p, err := auth.ParsePolicy("p.json", []byte(`{"claim": "groups",
		"read": [{"match": "beta", "sources": ["default"], "label": "staging"}, {"match": "*", "sources": ["default"]}]}`), []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	l := newLabelledWith(t, app.Options{Policy: func() *auth.Policy { return p }})
	beta := &auth.Member{Issuer: "https://idp", Subject: "b", Groups: []string{"beta"}, Scopes: []string{auth.ScopeRead}}
	other := &auth.Member{Issuer: "https://idp", Subject: "o", Scopes: []string{auth.ScopeRead}}
	tests := []struct {
		name string
		from context.Context
		text string
	}{
		{"the beta tester: staging, by the policy", auth.WithMember(context.Background(), beta), "staging text"},
		{"the beta tester naming production", label.WithHeader(auth.WithMember(context.Background(), beta), "production"), "production text"},
		{"another member: the default", auth.WithMember(context.Background(), other), "production text"},
	}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := c.RequestFrom(t, tt.from, i+1, mcp.MethodPromptsGet, map[string]any{"name": "Greeting"})
			if m.Error != nil {
				t.Fatalf("error: %+v", m.Error)
			}
			if !strings.Contains(string(m.Result), tt.text) {
				t.Errorf("result lacks %q: %s", tt.text, m.Result)
			}
		})
	}
}

// TestLabelOfSession: a 2025-era session opened with the staging header
// is served staging by a request that names no label of its own (a
// client that sent its headers only when it connected), and production
// by one that names it.
func TestLabelOfSession(t *testing.T) {
	l := newLabelled(t, "")
	c := mcptest.ConnectAs(t, l.e, label.WithHeader(context.Background(), "staging"))
	c.Initialize(t, mcp.LatestVersion)
	for i, tt := range []struct {
		name string
		from context.Context
		text string
	}{
		{"no label of its own: the session's", context.Background(), "staging text"},
		{"its own header", label.WithHeader(context.Background(), "production"), "production text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := c.RequestFrom(t, tt.from, i+1, mcp.MethodPromptsGet, map[string]any{"name": "Greeting"})
			if m.Error != nil || !strings.Contains(string(m.Result), tt.text) {
				t.Errorf("want %q: %s %+v", tt.text, m.Result, m.Error)
			}
		})
	}
}

// TestLabelSave: a save by a client following staging proposes its
// change against staging, the ref it read (and whose version it names),
// and one by a client with no label against the default's.
func TestLabelSave(t *testing.T) {
	l := newLabelledWith(t, app.Options{AllowWrite: true})
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	for i, tt := range []struct {
		name, base string
		from       context.Context
	}{
		{"staging", "staging", label.WithHeader(context.Background(), "staging")},
		{"no label", "main", context.Background()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tpl := strings.Replace(string(sourceTemplate("Greeting", tt.name+" proposal")), `"1.0.0"`, `"1.1.0"`, 1)
			m := c.RequestFrom(t, tt.from, i+1, mcp.MethodToolsCall, map[string]any{"name": "flowyprompt_save_template",
				"arguments": map[string]any{"template": tpl, "message": "a proposal", "expected_version": "1.0.0"}})
			if m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
				t.Fatalf("save: %.1000s %+v", m.Result, m.Error)
			}
			pulls := l.fake.PullRequests()
			if len(pulls) != i+1 || pulls[i].Base != tt.base {
				t.Fatalf("pull requests %+v, want #%d against %s", pulls, i+1, tt.base)
			}
		})
	}
}
