package preview

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// labelled is the page of two sources: team, a GitHub repository whose
// labels are production (main), staging (the branch staging) and canary
// (the tag canary), each with its own Greeting; and ops, a folder, the
// same at every label. Requests carry their member in the header
// X-Member (a group's name), as the server's authentication would put it
// in their context.
type labelled struct {
	fake       *fakegithub.Server
	ops        string // the folder
	lib        *templates.Library
	set        *labelset.Set
	a          *app.App
	h          *Handler
	srv        *httptest.Server
	log        *records
	prod, stag string // the commits
}

const memberHeader = "X-Member"

func newLabelled(t *testing.T, opts app.Options) *labelled {
	t.Helper()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	stag := fake.CommitFiles("staging", map[string][]byte{"templates/Greeting.json": fakegithub.ValidTemplate("Greeting", "staging text {{subject}}")})
	fake.SetBranch("staging", stag)
	fake.SetTag("canary", stag)
	prod := fake.CommitFiles("production", map[string][]byte{"templates/Greeting.json": fakegithub.ValidTemplate("Greeting", "production text {{subject}}")})
	ops := t.TempDir()
	writeFile(t, filepath.Join(ops, "Runbook.json"), string(fakegithub.ValidTemplate("Runbook", "ops runbook {{subject}}")))

	discard := slog.New(slog.DiscardHandler)
	pool, cacheDir := github.NewBlobPool(0), t.TempDir()
	open := func(ctx context.Context, ref string) (*templates.Library, error) {
		team, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: ref, APIURL: fake.URL(), TTL: time.Hour,
			CacheDir: cacheDir, Logger: discard, Blobs: pool})
		if err != nil {
			return nil, err
		}
		src, err := templates.NewComposite([]templates.Member{{Namespace: "team", Source: team},
			{Namespace: "ops", Source: folder.New(ops, templates.BuildOptions{Logger: discard})}}, discard)
		if err != nil {
			return nil, err
		}
		lib := templates.NewLibrary(src, discard)
		return lib, lib.Load(ctx)
	}
	lib, err := open(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{"production": "main", "staging": "staging", "canary": "canary"}
	set := labelset.NewSet([]string{"production", "staging", "canary"}, lib, func(ctx context.Context, name string) (*templates.Library, error) {
		return open(ctx, refs[name])
	}, nil)
	t.Cleanup(set.Close)
	opts.Library, opts.Labels, opts.Version = lib, set, "test"
	a := app.New(opts)
	rec := &records{}
	h := New(Options{Library: lib, Labels: set, View: a.PageView, Logger: slog.New(rec)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g := r.Header.Get(memberHeader); g != "" {
			r = r.WithContext(auth.WithMember(r.Context(), &auth.Member{Issuer: "https://idp", Subject: g, Groups: []string{g},
				Scopes: []string{auth.ScopeRead}}))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &labelled{fake: fake, ops: ops, lib: lib, set: set, a: a, h: h, srv: srv, log: rec, prod: prod, stag: stag}
}

// moveStaging points staging at a new commit whose Greeting says text,
// leaving main where it was.
func (l *labelled) moveStaging(t *testing.T, text string) {
	t.Helper()
	sha := l.fake.CommitFiles("staging moves", map[string][]byte{"templates/Greeting.json": fakegithub.ValidTemplate("Greeting", text+" {{subject}}")})
	l.fake.SetBranch("staging", sha)
	l.fake.SetBranch("main", l.prod)
}

// refresh revalidates label's library now, as its --cache-ttl would: its
// listeners have run when it returns.
func (l *labelled) refresh(t *testing.T, name string) {
	t.Helper()
	lib, err := l.set.Library(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// get answers GET path as member (a group; "" for none), decoded into
// into, with the status it had.
func (l *labelled) get(t *testing.T, member, path string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, l.srv.URL+path, nil)
	if member != "" {
		req.Header.Set(memberHeader, member)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return resp.StatusCode
}

// render renders Greeting at label with subject "tea", as the page does.
func (l *labelled) render(t *testing.T, lbl string) string {
	t.Helper()
	status, body := post(t, l.srv.URL+"/api/render?label="+lbl, "application/json", `{"name":"team/Greeting","arguments":{"subject":"tea"}}`)
	var out rendered
	if err := json.Unmarshal(body, &out); status != http.StatusOK || err != nil || out.Error != nil {
		t.Fatalf("render at %q: %d %v %s", lbl, status, err, body)
	}
	return out.Text
}

// records keeps the log's messages, with their attributes.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.msgs = append(r.msgs, b.String())
	r.mu.Unlock()
	return nil
}

// since are the messages logged after the first n.
func (r *records) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs[n:])
}

func (r *records) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// event is one event of a stream.
type event struct{ name, data string }

// openStream opens an event stream and reads its events until the test ends
// or the stream does.
func openStream(t *testing.T, url string) <-chan event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("events at %s: status %d: %s", url, resp.StatusCode, b)
	}
	out := make(chan event, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		var ev event
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				out <- ev
				ev = event{}
			}
		}
	}()
	return out
}

// next is the stream's next event, waited for at most 10 s.
func next(t *testing.T, evs <-chan event) event {
	t.Helper()
	select {
	case ev, open := <-evs:
		if !open {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return event{}
}

// TestPageFollowsEveryLabel: each page hears of the changes of the label
// it shows, that label's library opened after the page was; a change of
// another label does not reach it; a change of either source of a label
// does.
func TestPageFollowsEveryLabel(t *testing.T) {
	l := newLabelled(t, app.Options{})
	def := openStream(t, l.srv.URL+"/api/events")
	stag := openStream(t, l.srv.URL+"/api/events?label=staging") // opens staging's library
	for _, s := range []<-chan event{def, stag} {
		if ev := next(t, s); ev.name != "ready" {
			t.Fatalf("first event %v, want ready", ev)
		}
	}
	if got := l.render(t, "staging"); !strings.HasSuffix(got, "\nstaging text tea") {
		t.Fatalf("staging renders %q", got)
	}

	l.moveStaging(t, "staging moved")
	l.refresh(t, "staging")
	if ev := next(t, stag); ev != (event{"change", `{"label":"staging"}`}) {
		t.Fatalf("staging's page: %v, want staging's change", ev)
	}
	if got := l.render(t, "staging"); !strings.HasSuffix(got, "\nstaging moved tea") {
		t.Errorf("staging renders %q after its ref moved", got)
	}

	// A file of the other source, the folder, changes under both labels.
	writeFile(t, filepath.Join(l.ops, "Runbook.json"), string(fakegithub.ValidTemplate("Runbook", "ops runbook, edited {{subject}}")))
	l.refresh(t, "staging")
	if ev := next(t, stag); ev != (event{"change", `{"label":"staging"}`}) {
		t.Fatalf("staging's page after an ops file changed: %v", ev)
	}
	l.refresh(t, "production")
	// The default's page hears of production's change first: staging's
	// two did not reach it.
	if ev := next(t, def); ev != (event{"change", `{"label":"production"}`}) {
		t.Fatalf("the default's page: %v, want production's change alone", ev)
	}
	if got := l.render(t, "production"); !strings.HasSuffix(got, "\nproduction text tea") {
		t.Errorf("production renders %q", got)
	}
}

// TestCloseStopsFollowing: Close removes every listener the page added,
// on the default's library, on each label's and on the labels' opening:
// a change after it, or a label opened after it, reaches the page no
// more. A library's listeners have all run when its Refresh returns, and
// a label's opening has told its watchers when Library returns, so what
// the page's listeners would log is in the log by then.
func TestCloseStopsFollowing(t *testing.T) {
	l := newLabelled(t, app.Options{})
	var lib library
	if status := l.get(t, "", "/api/library?label=staging", &lib); status != http.StatusOK || lib.Label != "staging" {
		t.Fatalf("staging: %d %+v", status, lib)
	}
	l.moveStaging(t, "staging moved")
	l.refresh(t, "staging")
	want := []string{"preview page follows a library label=production", "preview page follows a library label=staging",
		"preview page's library changed label=staging pages=0"}
	if got := l.log.since(0); !cmp.Equal(got, want) {
		t.Fatalf("before Close, the log says %q, want %q", got, want)
	}

	l.h.Close()
	n := l.log.len()
	l.moveStaging(t, "staging moved again")
	l.fake.CommitFiles("production moves", map[string][]byte{"templates/Greeting.json": fakegithub.ValidTemplate("Greeting", "production moved {{subject}}")})
	l.refresh(t, "staging")
	l.refresh(t, "production")
	l.refresh(t, "canary") // opened now: a page still listening to the labels' opening would follow it
	if got := l.log.since(n); len(got) != 0 {
		t.Errorf("after Close, the page still follows: %q", got)
	}
}

// errorAnswer is an error answer of the page's API.
type errorAnswer struct {
	Error  problem  `json:"error"`
	Labels []string `json:"labels"`
}

// TestLabelChoice: the page shows the label a request names, else the
// one a request naming none is served (--label here); it offers the
// labels; it renders what prompts/get gives at that label; an unknown
// label is refused by every endpoint with prompts/get's UNKNOWN_LABEL.
func TestLabelChoice(t *testing.T) {
	l := newLabelled(t, app.Options{Label: "staging"})
	e := mcptest.Engine(t, l.a.Server(), mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	promptsGet := func(id int, lbl string) mcptest.Message {
		return c.RequestFrom(t, context.Background(), id, mcp.MethodPromptsGet, map[string]any{"name": "team/Greeting",
			"arguments": map[string]any{"subject": "tea"}, "_meta": map[string]any{label.MetaKey: lbl}})
	}
	labels := []string{"production", "staging", "canary"}

	for i, tt := range []struct{ query, label, text string }{
		{"", "staging", "staging text"},
		{"?label=production", "production", "production text"},
		{"?label=staging", "staging", "staging text"},
		{"?label=", "staging", "staging text"},
	} {
		t.Run("library"+tt.query, func(t *testing.T) {
			var lib library
			if status := l.get(t, "", "/api/library"+tt.query, &lib); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			if lib.Label != tt.label || !cmp.Equal(lib.Labels, labels) {
				t.Errorf("label %q of %q, want %q of %q", lib.Label, lib.Labels, tt.label, labels)
			}
			var d detail
			if status := l.get(t, "", "/api/template?name=team/Greeting&"+strings.TrimPrefix(tt.query, "?"), &d); status != http.StatusOK || d.Name != "team/Greeting" {
				t.Errorf("template: %d %+v", status, d)
			}
			got := l.render(t, tt.label)
			m := promptsGet(i+1, tt.label)
			var res struct {
				Messages []struct{ Content struct{ Text string } }
			}
			if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Messages) != 1 {
				t.Fatalf("prompts/get: %v %s", err, m.Raw)
			}
			if got != res.Messages[0].Content.Text || !strings.HasSuffix(got, "\n"+tt.text+" tea") {
				t.Errorf("the page renders %q, prompts/get %q, want …%q", got, res.Messages[0].Content.Text, tt.text+" tea")
			}
		})
	}

	m := promptsGet(100, "nope")
	if m.Error == nil {
		t.Fatalf("prompts/get served label nope: %s", m.Raw)
	}
	want := problem{Code: m.Error.Data.Code, Message: m.Error.Data.What, Why: m.Error.Data.Why, How: m.Error.Data.How}
	if want.Code != "UNKNOWN_LABEL" {
		t.Fatalf("prompts/get refuses label nope with %+v", m.Error)
	}
	for _, path := range []string{"/api/library?label=nope", "/api/template?name=team/Greeting&label=nope", "/api/events?label=nope"} {
		var got errorAnswer
		if status := l.get(t, "", path, &got); status != http.StatusBadRequest || got.Error != want || !cmp.Equal(got.Labels, labels) {
			t.Errorf("%s: %d %+v, want 400 %+v with the labels", path, status, got, want)
		}
	}
	status, body := post(t, l.srv.URL+"/api/render?label=nope", "application/json", `{"name":"team/Greeting","arguments":{}}`)
	var got errorAnswer
	if err := json.Unmarshal(body, &got); err != nil || status != http.StatusBadRequest || got.Error != want {
		t.Errorf("render at label nope: %d %s", status, body)
	}
}

// TestNoLabels: without labels the library's answer names none, and a
// label asked for is refused as prompts/get refuses it, never ignored.
func TestNoLabels(t *testing.T) {
	f := newFixture(t, map[string]string{"Greet.json": greet}, Options{})
	resp, err := http.Get(f.srv.URL + "/api/library")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["label"]; ok {
		t.Errorf("the library names a label: %s", raw["label"])
	}
	if _, ok := raw["labels"]; ok {
		t.Errorf("the library offers labels: %s", raw["labels"])
	}
	var got errorAnswer
	getJSON(t, f.srv.URL+"/api/library?label=staging", http.StatusBadRequest, &got)
	if got.Error.Code != "UNKNOWN_LABEL" || !strings.Contains(got.Error.Why, "name no labels") || got.Labels != nil {
		t.Errorf("a label of a library without: %+v", got)
	}
}

// TestLabelsUnderPolicy: under an access policy, a member is shown the
// label their policy serves them by default, and at every label only the
// sources they may read, as every handler shows them.
func TestLabelsUnderPolicy(t *testing.T) {
	p, err := auth.ParsePolicy("policy.json", []byte(`{"claim": "groups", "read": [
		{"match": "staff", "sources": ["team", "ops"], "label": "staging"},
		{"match": "*", "sources": ["ops"]}]}`), []string{"team", "ops"})
	if err != nil {
		t.Fatal(err)
	}
	l := newLabelled(t, app.Options{Policy: func() *auth.Policy { return p }})
	for _, tt := range []struct {
		member, query, label string
		templates            []string
	}{
		{"staff", "", "staging", []string{"ops/Runbook", "team/Greeting"}},
		{"staff", "?label=production", "production", []string{"ops/Runbook", "team/Greeting"}},
		{"guest", "", "production", []string{"ops/Runbook"}},
		{"guest", "?label=staging", "staging", []string{"ops/Runbook"}},
	} {
		t.Run(tt.member+tt.query, func(t *testing.T) {
			var lib library
			if status := l.get(t, tt.member, "/api/library"+tt.query, &lib); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			var names []string
			for _, s := range lib.Templates {
				names = append(names, s.Name)
			}
			slices.Sort(names)
			if lib.Label != tt.label || !cmp.Equal(names, tt.templates) {
				t.Errorf("label %q, templates %q; want %q, %q", lib.Label, names, tt.label, tt.templates)
			}
		})
	}
	var d errorAnswer
	if status := l.get(t, "guest", "/api/template?name=team/Greeting&label=staging", &d); status != http.StatusNotFound || d.Error.Code != "TEMPLATE_NOT_FOUND" {
		t.Errorf("a template of a source the member may not read: %d %+v", status, d)
	}
}
