package github

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// The app serves a template's listed files through this interface; without
// it every GitHub prompt that lists a path fails.
var _ templates.ResourceReader = (*Source)(nil)

// resourceMaxSize is small enough for the library's big.txt to be refused
// and large enough for Guide.json.
const resourceMaxSize = 2048

var (
	guideMD = []byte("# Guide\n\nWrite short sentences.\n")
	// logoPNG is not UTF-8, so the app must send it as a blob.
	logoPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
)

func guideTemplate(resources ...string) []byte {
	b, err := json.Marshal(map[string]any{
		"metadata":  map[string]any{"name": "Guide", "description": "Follows the team guide", "version": "1.0.0"},
		"variables": []map[string]any{{"name": "subject", "type": "string", "description": "What to write about", "required": true}},
		"results":   []map[string]any{{"name": "Task", "content": "Write about {{subject}}.", "format": "markdown"}},
		"resources": resources,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// resourceLibrary is a template listing two files of the folder, beside
// files that must never be served.
func resourceLibrary() fakegithub.Library {
	return fakegithub.Library{Files: map[string][]byte{
		"templates/Guide.json":     guideTemplate("docs/guide.md", "logo.png"),
		"templates/docs/guide.md":  guideMD,
		"templates/docs/other.md":  []byte("not listed by any template"),
		"templates/logo.png":       logoPNG,
		"templates/big.txt":        bytes.Repeat([]byte("x"), resourceMaxSize+1),
		"templates/.secret":        []byte("s3cret"),
		"templates/.hidden/x.md":   []byte("hidden"),
		"README.md":                []byte("outside the templates folder"),
		"other/docs/guide.md":      []byte("another folder's guide"),
		"templates-old/docs/a.txt": []byte("a sibling folder sharing the prefix"),
	}}
}

func resourceSource(h *harness, edit ...func(*Config)) *Source {
	h.t.Helper()
	return h.source(append([]func(*Config){func(c *Config) { c.MaxFileSize = resourceMaxSize }}, edit...)...)
}

// checkFault fails unless err is a complete fault with code that never
// shows the token, and returns it.
func checkFault(t *testing.T, err error, code string) *fault.Error {
	t.Helper()
	f := fault.As(err)
	if f == nil || f.Code != code {
		t.Fatalf("error = %v (code %s), want %s", err, fault.CodeOf(err), code)
	}
	if f.What == "" || f.Why == "" || f.How == "" {
		t.Errorf("fault lacks what/why/how: %+v", f)
	}
	details, _ := json.Marshal(f.Details)
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v %#v", err, err), f.How, string(details), fmt.Sprint(f.Err)} {
		if strings.Contains(s, testToken[len("ghp_"):]) {
			t.Errorf("the token leaked into the error: %s", s)
		}
	}
	return f
}

func TestReadResource(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	s := resourceSource(h)
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	head := h.fake.Head()
	// Rows run in order: a file read once is cached by the next row.
	tests := []struct {
		name      string
		path      string
		want      []byte
		wantMIME  string // a prefix: .md is text/plain or text/markdown, by the system's MIME table
		wantCode  string
		wantWhy   []string // substrings of the fault's why
		wantBlobs int      // blob requests the read makes
	}{
		{name: "first read", path: "docs/guide.md", want: guideMD, wantMIME: "text/", wantBlobs: 1},
		{name: "second read is cached", path: "docs/guide.md", want: guideMD, wantMIME: "text/"},
		{name: "unclean spelling of a cached file", path: "./docs//guide.md", want: guideMD, wantMIME: "text/"},
		{name: "binary file", path: "logo.png", want: logoPNG, wantMIME: "image/png", wantBlobs: 1},
		{name: "a template file, cached at load", path: "Guide.json", want: guideTemplate("docs/guide.md", "logo.png"), wantMIME: "application/json"},
		{name: "unknown file", path: "missing.md", wantCode: fault.ResourceNotFound,
			wantWhy: []string{"templates/missing.md", "main", short(head)}},
		{name: "a folder", path: "docs", wantCode: fault.ResourceNotFound, wantWhy: []string{"templates/docs"}},
		{name: "leads out", path: "../README.md", wantCode: fault.ResourceNotFound, wantWhy: []string{"template folder"}},
		{name: "leads out and back", path: "docs/../../other/docs/guide.md", wantCode: fault.ResourceNotFound, wantWhy: []string{"template folder"}},
		{name: "absolute", path: "/templates/docs/guide.md", wantCode: fault.ResourceNotFound, wantWhy: []string{"template folder"}},
		{name: "hidden file", path: ".secret", wantCode: fault.ResourceNotFound, wantWhy: []string{"hidden"}},
		{name: "hidden folder", path: ".hidden/x.md", wantCode: fault.ResourceNotFound, wantWhy: []string{"hidden"}},
		{name: "oversized, refused by the tree's size", path: "big.txt", wantCode: fault.TemplateTooLarge,
			wantWhy: []string{"larger files are refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.fake.Reset()
			data, typ, err := s.ReadResource(ctxT(t), tt.path)
			if tt.wantCode != "" {
				f := checkFault(t, err, tt.wantCode)
				for _, w := range tt.wantWhy {
					if !strings.Contains(f.Why, w) {
						t.Errorf("why = %q, want it to contain %q", f.Why, w)
					}
				}
				if !strings.Contains(f.What, tt.path) {
					t.Errorf("what = %q, want it to name %q", f.What, tt.path)
				}
				if data != nil || typ != "" {
					t.Errorf("a refused read returned %d bytes of %q", len(data), typ)
				}
			} else {
				if err != nil {
					t.Fatalf("ReadResource(%q): %v", tt.path, err)
				}
				if !bytes.Equal(data, tt.want) {
					t.Errorf("content = %q, want %q", data, tt.want)
				}
				if !strings.HasPrefix(typ, tt.wantMIME) {
					t.Errorf("MIME type = %q, want %s…", typ, tt.wantMIME)
				}
			}
			if c := h.costs(); c.Total != tt.wantBlobs || c.ByRoute["blob"] != tt.wantBlobs {
				t.Errorf("requests: %v; want %d blob requests and nothing else", c, tt.wantBlobs)
			}
		})
	}

	t.Run("oversized details", func(t *testing.T) {
		_, _, err := s.ReadResource(ctxT(t), "big.txt")
		f := checkFault(t, err, fault.TemplateTooLarge)
		if f.Details["actualSize"] != int64(resourceMaxSize+1) || f.Details["maxSize"] != int64(resourceMaxSize) {
			t.Errorf("details = %v, want the tree's size and the limit", f.Details)
		}
	})
}

func TestReadResourceOffline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		breakIt  func(f *fakegithub.Server)
		wantCode string
	}{
		{name: "unreachable", breakIt: func(f *fakegithub.Server) { f.SetDown(true) }, wantCode: fault.NetworkError},
		{name: "5xx", breakIt: func(f *fakegithub.Server) { f.SetFault(502) }, wantCode: fault.NetworkError},
		{name: "token refused", breakIt: func(f *fakegithub.Server) { f.SetToken("ghp_other0000000000000000000000000000000") },
			wantCode: fault.GitHubAuthFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, resourceLibrary())
			s := resourceSource(h)
			if _, err := s.Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.ReadResource(ctxT(t), "docs/guide.md"); err != nil {
				t.Fatal(err)
			}
			tt.breakIt(h.fake)
			h.fake.Reset()

			data, _, err := s.ReadResource(ctxT(t), "docs/guide.md")
			if err != nil || !bytes.Equal(data, guideMD) {
				t.Errorf("cached file with GitHub failing = %q, %v; want it from the cache", data, err)
			}
			if n := h.fake.Total(); n != 0 {
				t.Errorf("reading a cached file made %d requests", n)
			}

			// A file never read needs GitHub: its error is GitHub's,
			// naming the file.
			_, _, err = s.ReadResource(ctxT(t), "logo.png")
			f := checkFault(t, err, tt.wantCode)
			if !strings.Contains(f.What, `"logo.png"`) {
				t.Errorf("what = %q, want it to name logo.png", f.What)
			}
		})
	}
}

func TestReadResourceAfterRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ref  func(h *harness) string
	}{
		{name: "branch", ref: func(*harness) string { return "main" }},
		{name: "pinned commit", ref: func(h *harness) string { return h.fake.Head() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, resourceLibrary())
			ref := tt.ref(h)
			pin := func(c *Config) { c.Ref = ref }
			first := resourceSource(h, pin)
			if _, err := first.Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := first.ReadResource(ctxT(t), "docs/guide.md"); err != nil {
				t.Fatal(err)
			}

			// The restarted source has the listing, the resource's entry
			// and its blob on disk: it needs nothing from GitHub.
			h.fake.SetDown(true)
			h.fake.Reset()
			s := resourceSource(h, pin)
			data, _, err := s.ReadResource(ctxT(t), "docs/guide.md")
			if err != nil || !bytes.Equal(data, guideMD) {
				t.Errorf("after a restart offline = %q, %v; want the cached file", data, err)
			}
			_, _, err = s.ReadResource(ctxT(t), "missing.md")
			checkFault(t, err, fault.ResourceNotFound)
			_, _, err = s.ReadResource(ctxT(t), "big.txt")
			checkFault(t, err, fault.TemplateTooLarge)
			if n := h.fake.Total(); n != 0 {
				t.Errorf("a restart within the TTL made %d requests", n)
			}
		})
	}
}

func TestReadResourceFollowsTheCatalog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	s := resourceSource(h)
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ReadResource(ctxT(t), "docs/guide.md"); err != nil {
		t.Fatal(err)
	}
	oldKey := s.blobNS + fakegithub.BlobSHA(guideMD)
	updated := []byte("# Guide, second edition\n")
	h.fake.PutFiles(map[string][]byte{"templates/docs/guide.md": updated, "templates/docs/new.md": []byte("new")})

	// Until the catalog moves, its commit's version is served.
	data, _, err := s.ReadResource(ctxT(t), "docs/guide.md")
	if err != nil || !bytes.Equal(data, guideMD) {
		t.Errorf("before the refresh = %q, %v; want the loaded commit's version", data, err)
	}
	_, _, err = s.ReadResource(ctxT(t), "docs/new.md")
	if f := checkFault(t, err, fault.ResourceNotFound); !strings.Contains(f.How, "refresh") {
		t.Errorf("how = %q, want it to mention refreshing", f.How)
	}

	if _, err := s.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]byte{"docs/guide.md": updated, "docs/new.md": []byte("new")} {
		data, _, err := s.ReadResource(ctxT(t), p)
		if err != nil || !bytes.Equal(data, want) {
			t.Errorf("%s after the refresh = %q, %v; want %q", p, data, err, want)
		}
	}
	if _, ok := s.cache.Peek(oldKey); ok {
		t.Error("the replaced version's blob is still cached")
	}
}

// TestReadResourceOlderCache starts on a disk cache written before
// resources were served (its listing has no other files): templates are
// served at once, and the first resource read lists the tree once and
// completes the cache.
func TestReadResourceOlderCache(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	sha := h.fake.Head()
	pin := func(c *Config) { c.Ref = sha } // never revalidated: only a read can complete the listing
	s := resourceSource(h, pin)
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	l, e, ok := s.loadListing()
	if !ok {
		t.Fatal("nothing cached")
	}
	l.Files = nil
	value, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(value, []byte("guide.md")) {
		t.Fatalf("the older listing still names the resource: %s", value)
	}
	e.Value = value
	s.cache.Put(e)
	s.persist()

	h.fake.Reset()
	old := resourceSource(h, pin)
	if cat, err := old.Load(ctxT(t)); err != nil || cat.Len() != 1 || h.fake.Total() != 0 {
		t.Fatalf("restart on the older cache = %v templates, %v, %d requests; want 1, from the cache", cat.Len(), err, h.fake.Total())
	}
	data, _, err := old.ReadResource(ctxT(t), "docs/guide.md")
	if err != nil || !bytes.Equal(data, guideMD) {
		t.Fatalf("ReadResource = %q, %v", data, err)
	}
	if c := h.costs(); c.Total != 2 || c.ByRoute["tree"] != 1 || c.ByRoute["blob"] != 1 {
		t.Errorf("first read on an older cache: %v; want one tree and one blob", c)
	}

	h.fake.Reset()
	h.fake.SetDown(true)
	data, _, err = resourceSource(h, pin).ReadResource(ctxT(t), "docs/guide.md")
	if err != nil || !bytes.Equal(data, guideMD) || h.fake.Total() != 0 {
		t.Errorf("after the listing was completed: %q, %v, %d requests; want the file and no request", data, err, h.fake.Total())
	}
}

// TestResourcesThroughTheApp is the path a client takes: prompts/get embeds
// the listed files, resources/read serves them, and files no template
// lists stay private.
func TestResourcesThroughTheApp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	s := resourceSource(h)
	lib := templates.NewLibrary(s, slog.New(slog.DiscardHandler))
	if err := lib.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	a := app.New(app.Options{Library: lib, Version: "test"})

	res, err := a.GetPrompt(ctxT(t), nil, &mcp.GetPromptParams{Name: "Guide", Arguments: map[string]string{"subject": "tests"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("prompts/get returned %d messages, want the text and two resources", len(res.Messages))
	}
	guide, logo := res.Messages[1].Content.Resource, res.Messages[2].Content.Resource
	if guide == nil || guide.Text != string(guideMD) || !strings.HasSuffix(guide.URI, "docs/guide.md") {
		t.Errorf("embedded guide = %+v, want docs/guide.md as text", guide)
	}
	if logo == nil || logo.MimeType != "image/png" || logo.Blob != base64.StdEncoding.EncodeToString(logoPNG) {
		t.Errorf("embedded logo = %+v, want logo.png as a base64 image/png blob", logo)
	}

	h.fake.Reset()
	rr, err := a.ReadResource(ctxT(t), nil, "docs/guide.md")
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != string(guideMD) {
		t.Errorf("resources/read docs/guide.md = %+v, %v", rr, err)
	}
	if n := h.fake.Total(); n != 0 {
		t.Errorf("reading an embedded file again made %d requests", n)
	}

	_, err = a.ReadResource(ctxT(t), nil, "docs/other.md")
	checkFault(t, err, fault.ResourceNotFound)
	if n := h.fake.Count(fakegithub.RouteBlob); n != 0 {
		t.Errorf("an unlisted file was downloaded (%d blob requests)", n)
	}
}

// TestResourceCache checks what the disk cache holds once resources were
// read: the folder's non-hidden files in the listing, the blobs read, and
// never the token.
func TestResourceCache(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	s := resourceSource(h)
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"docs/guide.md", "logo.png"} {
		if _, _, err := s.ReadResource(ctxT(t), p); err != nil {
			t.Fatal(err)
		}
	}
	texts := cacheFileTexts(t, s.cachePath)
	for _, text := range texts {
		if strings.Contains(text, testToken[len("ghp_"):]) {
			t.Errorf("the disk cache holds the token: %.200s", text)
		}
	}
	// The scan saw the resources decoded, not as base64 only.
	if !slices.ContainsFunc(texts, func(text string) bool { return strings.Contains(text, string(guideMD)) }) {
		t.Error("the guide read is not in the cache file; the scan proves nothing about values")
	}

	restarted := resourceSource(h)
	l, _, ok := restarted.loadListing()
	if !ok {
		t.Fatal("no listing on disk")
	}
	var files []string
	for _, e := range l.Files {
		files = append(files, e.Path)
	}
	want := []string{"templates/big.txt", "templates/docs/guide.md", "templates/docs/other.md", "templates/logo.png"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("listed files (-want +got):\n%s", diff)
	}
	for _, content := range [][]byte{guideMD, logoPNG} {
		if e, ok := restarted.cache.Peek(restarted.blobNS + fakegithub.BlobSHA(content)); !ok || !bytes.Equal(e.Value, content) {
			t.Errorf("blob of %q not on disk", content)
		}
	}
}

// TestCheckResource: CheckResource tells what ReadResource would, from the
// commit's tree, without downloading a blob.
func TestCheckResource(t *testing.T) {
	t.Parallel()
	h := newHarness(t, resourceLibrary())
	s := resourceSource(h)
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path     string
		wantCode string // "" when the file is there
	}{
		{path: "docs/guide.md"},
		{path: "logo.png"},
		{path: "missing.md", wantCode: fault.ResourceNotFound},
		{path: "../README.md", wantCode: fault.ResourceNotFound},
		{path: ".secret", wantCode: fault.ResourceNotFound},
		{path: "big.txt", wantCode: fault.TemplateTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			h.fake.Reset()
			err := s.CheckResource(ctxT(t), tt.path)
			if tt.wantCode == "" && err != nil {
				t.Fatalf("CheckResource(%q): %v", tt.path, err)
			}
			if tt.wantCode != "" {
				checkFault(t, err, tt.wantCode)
			}
			if c := h.costs(); c.Total != 0 {
				t.Errorf("requests: %v; want none", c)
			}
		})
	}
}

// TestCheckReportsMissingResources: check names each listed file the
// commit lacks at its JSON pointer, downloading no file to find out.
func TestCheckReportsMissingResources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		resources []string
		want      []MissingResource
	}{
		{name: "all there", resources: []string{"docs/guide.md", "logo.png"}, want: []MissingResource{}},
		{name: "one missing", resources: []string{"docs/guide.md", "docs/missing.md"},
			want: []MissingResource{{Path: "templates/Guide.json", Pointer: "/resources/1", Code: fault.ResourceNotFound}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := resourceLibrary()
			lib.Files["templates/Guide.json"] = guideTemplate(tt.resources...)
			h := newHarness(t, lib)
			rep, err := resourceSource(h).Check(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			for i := range rep.MissingResources {
				if !strings.Contains(rep.MissingResources[i].Reason, "missing.md") {
					t.Errorf("reason %q does not name the file", rep.MissingResources[i].Reason)
				}
				rep.MissingResources[i].Reason = ""
			}
			if diff := cmp.Diff(tt.want, rep.MissingResources); diff != "" {
				t.Errorf("missing resources (-want +got):\n%s", diff)
			}
			if len(tt.want) > 0 && !strings.Contains(rep.String(), "templates/Guide.json: /resources/1") {
				t.Errorf("report does not name the entry:\n%s", rep.String())
			}
			if c := h.costs(); c.ByRoute["blob"] > 1 {
				t.Errorf("requests: %v; want at most the template's blob", c)
			}
		})
	}
}
