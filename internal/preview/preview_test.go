package preview

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

const greet = `{"metadata":{"name":"Greet","description":"Greets <b>people</b>","version":"1.0.0"},
"variables":[{"name":"who","type":"string","description":"who","required":true,"examples":["Ada","Bob"]},
 {"name":"tone","type":"string","description":"how","enum":["warm","dry"],"default":"warm"},
 {"name":"loud","type":"boolean","description":"d","default":false},
 {"name":"items","type":"array","description":"things"}],
"results":[{"name":"s","content":"Hello {{who}} ({{tone}}), loud={{loud}}"}],
"tests":[
 {"name":"plain","arguments":{"who":"Ada"},"expect":{"contains":["Hello Ada"]}},
 {"name":"wrong","arguments":{"who":"Bob"},"expect":{"contains":["Hello Ada"]}}
]}`

const broken = `{"metadata":{"name":"Broken","description":"d","version":"1.0.0"},
"variables":[{"name":"x","type":"strin","description":"d"}],
"results":[{"name":"s","content":"{{x}}"}]}`

// fixture writes files into a folder and serves its library through a
// Handler.
type fixture struct {
	dir string
	lib *templates.Library
	h   *Handler
	srv *httptest.Server
}

func newFixture(t *testing.T, files map[string]string, opts Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		writeFile(t, filepath.Join(dir, name), data)
	}
	log := slog.New(slog.DiscardHandler)
	lib := templates.NewLibrary(folder.New(dir, templates.BuildOptions{Logger: log}), log)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts.Library, opts.Logger = lib, log
	opts.View = app.New(app.Options{Library: lib}).PageView
	h := New(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &fixture{dir: dir, lib: lib, h: h, srv: srv}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, url string, wantStatus int, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != wantStatus {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: status %d, want %d: %s", url, resp.StatusCode, wantStatus, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

func TestLibraryListsTemplatesFlowsAndInvalidFiles(t *testing.T) {
	f := newFixture(t, map[string]string{
		"Greet.json":         greet,
		"Broken.json":        broken,
		"flows/Hello.json":   `{"name":"Hello","description":"says hello","steps":[{"name":"one","template":"Greet","variables":{"who":"Ada"}}]}`,
		"flows/Nowhere.json": `{"name":"Nowhere","description":"d","steps":[{"name":"one","template":"Missing"}]}`,
	}, Options{})
	var got library
	getJSON(t, f.srv.URL+"/api/library", http.StatusOK, &got)
	if len(got.Templates) != 1 || got.Templates[0].Name != "Greet" || got.Templates[0].Tests != 2 || got.Templates[0].Description != "Greets <b>people</b>" {
		t.Errorf("templates: %+v", got.Templates)
	}
	if len(got.Flows) != 1 || got.Flows[0].Name != "Hello" || !cmp.Equal(got.Flows[0].Steps, []string{"Greet"}) {
		t.Errorf("flows: %+v", got.Flows)
	}
	paths := map[string]invalid{}
	for _, inv := range got.Invalid {
		paths[inv.Path] = inv
	}
	b, ok := paths["Broken.json"]
	if !ok || b.Code != "INVALID_TEMPLATE" || len(b.Problems) == 0 || b.Problems[0].Pointer != "/variables/0/type" {
		t.Errorf("Broken.json: %+v", b)
	}
	if n, ok := paths["flows/Nowhere.json"]; !ok || len(n.Problems) == 0 || n.Problems[0].Message == "" {
		t.Errorf("flows/Nowhere.json: %+v", n)
	}
}

func TestLibraryShowsNamespaces(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var members []templates.Member
	for _, ns := range []string{"team", "mine"} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "Greet.json"), greet)
		members = append(members, templates.Member{Namespace: ns, Source: folder.New(dir, templates.BuildOptions{Logger: log})})
	}
	src, err := templates.NewComposite(members, log)
	if err != nil {
		t.Fatal(err)
	}
	lib := templates.NewLibrary(src, log)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := New(Options{Library: lib, View: app.New(app.Options{Library: lib}).PageView, Logger: log})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	var got library
	getJSON(t, srv.URL+"/api/library", http.StatusOK, &got)
	var names []string
	for _, s := range got.Templates {
		names = append(names, s.Namespace+" "+s.Name)
	}
	if want := []string{"mine mine/Greet", "team team/Greet"}; !cmp.Equal(names, want) {
		t.Errorf("templates %q, want %q", names, want)
	}
}

func TestTemplateDetail(t *testing.T) {
	f := newFixture(t, map[string]string{"Greet.json": greet}, Options{})
	var got detail
	getJSON(t, f.srv.URL+"/api/template?name=Greet", http.StatusOK, &got)
	values := map[string]string{}
	for _, v := range got.Variables {
		values[v.Name] = v.Value
	}
	if want := map[string]string{"who": "Ada", "tone": "warm", "loud": "false", "items": ""}; !cmp.Equal(values, want) {
		t.Errorf("starting values %v, want %v (default, else first example)", values, want)
	}
	if len(got.Tests) != 2 || got.Tests[0].Status != "pass" || got.Tests[1].Status != "fail" || !strings.Contains(got.Tests[1].Reason, "Hello Ada") {
		t.Errorf("tests: %+v", got.Tests)
	}
	var nf struct{ Error problem }
	getJSON(t, f.srv.URL+"/api/template?name=Gret", http.StatusNotFound, &nf)
	if nf.Error.Code != "TEMPLATE_NOT_FOUND" || !strings.Contains(nf.Error.How+nf.Error.Message+nf.Error.Why, "Greet") {
		t.Errorf("unknown template: %+v", nf.Error)
	}
	getJSON(t, f.srv.URL+"/api/template", http.StatusBadRequest, &nf)
}

func post(t *testing.T, url, contentType, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestRender(t *testing.T) {
	f := newFixture(t, map[string]string{"Greet.json": greet}, Options{MaxBodyBytes: 512})
	e, _ := f.lib.Catalog().Lookup("Greet")
	want, err := render.Prompt(e.Template, map[string]string{"who": "Grace", "loud": "true"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, contentType, body string
		status                  int
		text, code              string
		unknown                 []string
	}{
		{"renders as prompts/get", "application/json", `{"name":"Greet","arguments":{"who":"Grace","loud":"true"}}`, 200, want, "", []string{}},
		{"names unknown arguments", "application/json", `{"name":"Greet","arguments":{"who":"Grace","loud":"true","wh":"x"}}`, 200, want, "", []string{"wh"}},
		{"says what is missing", "application/json", `{"name":"Greet","arguments":{}}`, 200, "", "MISSING_REQUIRED_VARIABLE", []string{}},
		{"says what is invalid", "application/json", `{"name":"Greet","arguments":{"who":"x","tone":"loud"}}`, 200, "", "INVALID_ARGUMENT", []string{}},
		{"unknown template", "application/json", `{"name":"Gret","arguments":{}}`, 404, "", "TEMPLATE_NOT_FOUND", nil},
		{"no name", "application/json", `{"arguments":{}}`, 400, "", "INVALID_REQUEST", nil},
		{"not JSON", "text/plain", `{"name":"Greet"}`, 415, "", "INVALID_REQUEST", nil},
		{"unknown field", "application/json", `{"name":"Greet","extra":1}`, 400, "", "INVALID_REQUEST", nil},
		{"a value not a string", "application/json", `{"name":"Greet","arguments":{"who":3}}`, 400, "", "INVALID_REQUEST", nil},
		{"over the body cap", "application/json", `{"name":"Greet","arguments":{"who":"` + strings.Repeat("x", 600) + `"}}`, 413, "", "INVALID_REQUEST", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, f.srv.URL+"/api/render", tt.contentType, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			var got struct {
				Text    string   `json:"text"`
				Error   *problem `json:"error"`
				Unknown []string `json:"unknown"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			code := ""
			if got.Error != nil {
				code = got.Error.Code
				if got.Error.Message == "" {
					t.Errorf("error without a message: %s", body)
				}
			}
			if got.Text != tt.text || code != tt.code || !cmp.Equal(got.Unknown, tt.unknown) {
				t.Errorf("got text %q code %q unknown %q, want %q %q %q", got.Text, code, got.Unknown, tt.text, tt.code, tt.unknown)
			}
		})
	}
}

// events reads an event stream's event names.
func events(t *testing.T, url string) (<-chan string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				out <- name
			}
		}
	}()
	return out, cancel
}

func TestEventsSayWhenTheLibraryChanges(t *testing.T) {
	f := newFixture(t, map[string]string{"Greet.json": greet}, Options{MaxStreams: 1})
	evs, stop := events(t, f.srv.URL+"/api/events")
	defer stop()
	if ev := <-evs; ev != "ready" {
		t.Fatalf("first event %q, want ready", ev)
	}
	// One stream is the cap: a second is refused while the first is open.
	resp, err := http.Get(f.srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream over the cap: status %d, want 503", resp.StatusCode)
	}
	writeFile(t, filepath.Join(f.dir, "Greet.json"), strings.Replace(greet, "Hello", "Hi", 1))
	if _, err := f.lib.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := <-evs; ev != "change" {
		t.Fatalf("event %q after a change, want change", ev)
	}
	f.h.Close()
	if ev, open := <-evs; open {
		t.Errorf("event %q after Close, want the stream ended", ev)
	}
}

func TestPageHeadersAndEscaping(t *testing.T) {
	f := newFixture(t, map[string]string{"Greet.json": greet}, Options{Version: `<script>alert(1)</script>`})
	for _, path := range []string{"/", "/app.js", "/style.css", "/api/library", "/nothing"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
		switch path {
		case "/":
			if strings.Contains(string(body), "<script>alert") || !strings.Contains(string(body), "&lt;script&gt;alert(1)") {
				t.Errorf("the page does not escape what it writes:\n%s", body)
			}
		case "/api/library":
			if strings.Contains(string(body), "<b>") || !strings.Contains(string(body), `\u003cb\u003epeople`) {
				t.Errorf("the JSON carries markup unescaped: %s", body)
			}
		case "/nothing":
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: status %d", path, resp.StatusCode)
			}
		default:
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: status %d", path, resp.StatusCode)
			}
		}
	}
}

// The page's script never hands text to the HTML parser: every text it
// shows goes through textContent (the browser test in cmd/flowyprompt
// runs it on a template holding a script).
func TestScriptWritesTextOnly(t *testing.T) {
	js, err := pageFiles.ReadFile("page/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}
