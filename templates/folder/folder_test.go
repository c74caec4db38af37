package folder

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic replaces path in one rename, as careful editors do, so a
// watcher never sees the file half-written unless a test means it to.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), tmpl("a", "top"))
	writeFile(t, filepath.Join(dir, "team", "b.json"), tmpl("b", "one level down"))
	writeFile(t, filepath.Join(dir, "team", "deep", "c.json"), tmpl("c", "two levels: not read"))
	writeFile(t, filepath.Join(dir, ".hidden.json"), tmpl("hidden", "dot-file"))
	writeFile(t, filepath.Join(dir, ".git", "d.json"), tmpl("d", "dot-folder"))
	writeFile(t, filepath.Join(dir, "notes.txt"), []byte("not a template"))
	writeFile(t, filepath.Join(dir, "broken.json"), []byte(`{"metadata":`))
	if err := os.Mkdir(filepath.Join(dir, "folder.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A 1 GB sparse file: read whole, the test would crawl or run out of
	// memory; the size check must refuse it from its Stat.
	f, err := os.Create(filepath.Join(dir, "huge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	outside := filepath.Join(t.TempDir(), "linked.json")
	writeFile(t, outside, tmpl("linked", "via symlink"))
	if err := os.Symlink(outside, filepath.Join(dir, "linked.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing-target"), filepath.Join(dir, "dangling.json")); err != nil {
		t.Fatal(err)
	}

	src := New(dir, templates.BuildOptions{Logger: quiet, MaxFileSize: 4096})
	if diff := cmp.Diff(templates.SourceInfo{Kind: "directory", Location: dir}, src.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
	c, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names(c.Templates())); diff != "" {
		t.Errorf("templates mismatch (-want +got):\n%s", diff)
	}
	if e, _ := c.Lookup("b"); e.Path != "team/b.json" {
		t.Errorf("b path = %s", e.Path)
	}
	wantInvalid := []invalidRow{
		{"broken.json", fault.InvalidTemplate, false},
		{"huge.json", fault.TemplateTooLarge, false},
		{"linked.json", fault.InvalidTemplate, false},
	}
	if diff := cmp.Diff(wantInvalid, invalidRows(c)); diff != "" {
		t.Errorf("invalid mismatch (-want +got):\n%s", diff)
	}
	huge := fault.As(c.Invalid()[1].Err)
	if diff := cmp.Diff(map[string]any{"actualSize": int64(1 << 30), "maxSize": int64(4096), "file": "huge.json"}, huge.Details); diff != "" {
		t.Errorf("too-large details mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadLinks: a template file that is a symbolic link leading out of the
// folder is not served but reported, as a resource would be refused; a link
// that stays inside the folder is followed, as for resources.
func TestLoadLinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "templates")
	secret := filepath.Join(base, "outside", "secret.json")
	writeFile(t, secret, tmpl("secret", "a valid template outside the folder"))
	// Two levels down, so that only the links load these.
	writeFile(t, filepath.Join(dir, "shared", "deep", "inner.json"), tmpl("inner", "through a relative link"))
	writeFile(t, filepath.Join(dir, "shared", "deep", "absolute.json"), tmpl("absolute", "through an absolute link"))
	links := map[string]string{
		"evil.json":           secret,
		"relative-evil.json":  filepath.Join("..", "outside", "secret.json"),
		"team/evil.json":      filepath.Join("..", "..", "outside", "secret.json"),
		"through-folder.json": filepath.Join("shared", "out", "secret.json"), // shared/out leads out
		"inner.json":          filepath.Join("shared", "deep", "inner.json"),
		"absolute.json":       filepath.Join(dir, "shared", "deep", "absolute.json"),
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "shared", "out")); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		link := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}

	c, err := New(dir, templates.BuildOptions{Logger: quiet}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"absolute", "inner"}, names(c.Templates())); diff != "" {
		t.Errorf("templates mismatch (-want +got):\n%s", diff)
	}
	wantInvalid := []invalidRow{
		{"evil.json", fault.InvalidTemplate, false},
		{"relative-evil.json", fault.InvalidTemplate, false},
		{"team/evil.json", fault.InvalidTemplate, false},
		{"through-folder.json", fault.InvalidTemplate, false},
	}
	if diff := cmp.Diff(wantInvalid, invalidRows(c)); diff != "" {
		t.Fatalf("invalid mismatch (-want +got):\n%s", diff)
	}
	for _, inv := range c.Invalid() {
		f := fault.As(inv.Err)
		if !strings.Contains(f.What, inv.Path) || !strings.Contains(f.Why, "link") || !strings.Contains(f.Why, "out of the template folder") ||
			f.How == "" || f.Details["file"] != inv.Path {
			t.Errorf("%s: reported as %+v, want what / why / how naming the file and the link leading out", inv.Path, f)
		}
		if strings.Contains(inv.Err.Error(), "a valid template outside") {
			t.Errorf("%s: the error quotes the file outside: %v", inv.Path, inv.Err)
		}
	}
}

func TestRelativeLocationIsAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := New("testdata", templates.BuildOptions{}).Info().Location; got != filepath.Join(wd, "testdata") {
		t.Errorf("Location = %s", got)
	}
}

func TestMissingFolder(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	writeFile(t, file, []byte("x"))
	tests := []struct {
		name string
		dir  string
		what string
	}{
		{"missing", filepath.Join(base, "nope"), "template folder " + filepath.Join(base, "nope") + " does not exist"},
		{"a file", file, "template folder " + file + " cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.dir, templates.BuildOptions{Logger: quiet}).Load(context.Background())
			f := fault.As(err)
			if f == nil {
				t.Fatalf("err = %v, want a fault", err)
			}
			if f.What != tt.what || !strings.Contains(f.How, "TEMPLATES_DIR") || f.Details["folder"] != tt.dir {
				t.Errorf("fault = %+v", f)
			}
		})
	}
}

func TestKeepsLastValidVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	v1 := tmpl("a", "version one")
	writeFile(t, path, v1)
	writeFile(t, filepath.Join(dir, "b.json"), tmpl("b", "b"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	ctx := context.Background()
	c1, err := src.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := c1.Lookup("a")

	// Half-way through a save.
	writeFile(t, path, v1[:len(v1)/2])
	writeFile(t, filepath.Join(dir, "new.json"), []byte("{")) // never valid
	c2, err := src.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept, ok := c2.Lookup("a")
	if !ok || kept.Digest != first.Digest {
		t.Fatalf("the half-written file emptied its template: %+v", kept)
	}
	wantInvalid := []invalidRow{
		{"a.json", fault.InvalidTemplate, true},
		{"new.json", fault.InvalidTemplate, false},
	}
	if diff := cmp.Diff(wantInvalid, invalidRows(c2)); diff != "" {
		t.Errorf("invalid mismatch (-want +got):\n%s", diff)
	}
	if !templates.Diff(c1, c2).Empty() {
		t.Errorf("Diff = %+v, want no change", templates.Diff(c1, c2))
	}

	// Still broken on the next load: still kept.
	c3, _ := src.Load(ctx)
	if e, ok := c3.Lookup("a"); !ok || e.Digest != first.Digest {
		t.Fatal("the kept version was lost on the second load")
	}

	// The save completes.
	v2 := tmpl("a", "version two")
	writeFile(t, path, v2)
	c4, _ := src.Load(ctx)
	if e, _ := c4.Lookup("a"); e == nil || string(e.Raw) != string(v2) {
		t.Fatalf("new version not loaded: %+v", e)
	}
	if diff := cmp.Diff([]invalidRow{{"new.json", fault.InvalidTemplate, false}}, invalidRows(c4)); diff != "" {
		t.Errorf("invalid mismatch (-want +got):\n%s", diff)
	}

	// A deleted file is removed, not kept.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c5, _ := src.Load(ctx)
	if _, ok := c5.Lookup("a"); ok {
		t.Error("a deleted template is still served")
	}
}

// When another file takes the name meanwhile, the old version is not kept
// (it would only be a duplicate).
func TestKeepYieldsToNewOwner(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.json"), tmpl("x", "from b"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.json"), tmpl("x", "from a"))
	writeFile(t, filepath.Join(dir, "b.json"), []byte("{"))
	c, _ := src.Load(context.Background())
	if e, _ := c.Lookup("x"); e == nil || e.Path != "a.json" {
		t.Fatalf("x = %+v, want a.json", e)
	}
	if diff := cmp.Diff([]invalidRow{{"b.json", fault.InvalidTemplate, false}}, invalidRows(c)); diff != "" {
		t.Errorf("invalid mismatch (-want +got):\n%s", diff)
	}
}

type rebuildEvent struct {
	c         *templates.Catalog
	delivered bool
	err       error
}

type watchHarness struct {
	t       *testing.T
	changes chan *templates.Catalog
	rebuilt chan rebuildEvent
	done    chan error
}

// startWatch runs Watch with short timings. The timings only make the test
// quick; nothing below asserts how long anything took.
func startWatch(t *testing.T, src *Source) *watchHarness {
	t.Helper()
	src.debounce = 20 * time.Millisecond
	src.poll = 20 * time.Millisecond
	h := &watchHarness{t: t, changes: make(chan *templates.Catalog, 100), rebuilt: make(chan rebuildEvent, 1000), done: make(chan error, 1)}
	src.afterRebuild = func(c *templates.Catalog, delivered bool, err error) { h.rebuilt <- rebuildEvent{c, delivered, err} }
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- src.Watch(ctx, func(c *templates.Catalog) { h.changes <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	})
	return h
}

// guard bounds every wait so a broken watcher fails instead of hanging.
const guard = 20 * time.Second

func (h *watchHarness) nextChange(what string) *templates.Catalog {
	h.t.Helper()
	select {
	case c := <-h.changes:
		return c
	case <-time.After(guard):
		h.t.Fatalf("no catalog delivered: %s", what)
		return nil
	}
}

// changeWhere waits for a delivered catalog satisfying ok, skipping
// intermediate ones (an editor's save may take several events).
func (h *watchHarness) changeWhere(what string, ok func(*templates.Catalog) bool) *templates.Catalog {
	h.t.Helper()
	deadline := time.After(guard)
	for {
		select {
		case c := <-h.changes:
			if ok(c) {
				return c
			}
		case <-deadline:
			h.t.Fatalf("timed out waiting for: %s", what)
			return nil
		}
	}
}

func (h *watchHarness) rebuildWhere(what string, ok func(rebuildEvent) bool) rebuildEvent {
	h.t.Helper()
	deadline := time.After(guard)
	for {
		select {
		case ev := <-h.rebuilt:
			if ok(ev) {
				return ev
			}
		case <-deadline:
			h.t.Fatalf("timed out waiting for a rebuild: %s", what)
			return rebuildEvent{}
		}
	}
}

func hasDigest(name string, data []byte) func(*templates.Catalog) bool {
	want := templates.Build([]templates.File{{Path: name + ".json", Data: data}}, templates.BuildOptions{Logger: quiet}).Templates()[0].Digest
	return func(c *templates.Catalog) bool {
		e, ok := c.Lookup(name)
		return ok && e.Digest == want
	}
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	a1 := tmpl("a", "first")
	writeAtomic(t, filepath.Join(dir, "a.json"), a1)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	h := startWatch(t, src)

	// Watch without a prior Load delivers the current catalog.
	c := h.nextChange("initial catalog")
	if diff := cmp.Diff([]string{"a"}, names(c.Templates())); diff != "" {
		t.Fatalf("initial mismatch (-want +got):\n%s", diff)
	}

	// A new file.
	writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "b"))
	h.changeWhere("b added", func(c *templates.Catalog) bool { _, ok := c.Lookup("b"); return ok })

	// Saving identical content delivers nothing: the next delivery after
	// it must already be the following real change (c added).
	writeAtomic(t, filepath.Join(dir, "a.json"), a1)
	h.rebuildWhere("no-op save rebuilt", func(ev rebuildEvent) bool { return ev.err == nil && !ev.delivered })
	writeAtomic(t, filepath.Join(dir, "c.json"), tmpl("c", "c"))
	next := h.nextChange("c added")
	if _, ok := next.Lookup("c"); !ok {
		t.Fatalf("a no-op save delivered a catalog: %v", names(next.Templates()))
	}

	// A half-written file keeps the previous version and reports it.
	writeAtomic(t, filepath.Join(dir, "a.json"), a1[:10])
	broken := h.changeWhere("a reported broken", func(c *templates.Catalog) bool { return len(c.Invalid()) == 1 })
	if !hasDigest("a", a1)(broken) || !broken.Invalid()[0].Kept {
		t.Fatalf("half-written a not kept: %v %v", names(broken.Templates()), broken.Invalid())
	}
	a2 := tmpl("a", "second")
	writeAtomic(t, filepath.Join(dir, "a.json"), a2)
	fixed := h.changeWhere("a fixed", hasDigest("a", a2))
	if len(fixed.Invalid()) != 0 {
		t.Errorf("still invalid: %v", fixed.Invalid())
	}

	// A new subfolder is watched too.
	if err := os.Mkdir(filepath.Join(dir, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.rebuildWhere("subfolder noticed", func(ev rebuildEvent) bool { return ev.err == nil })
	writeAtomic(t, filepath.Join(dir, "team", "d.json"), tmpl("d", "d"))
	h.changeWhere("team/d added", func(c *templates.Catalog) bool { e, ok := c.Lookup("d"); return ok && e.Path == "team/d.json" })

	// A removed file is removed.
	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	h.changeWhere("b removed", func(c *templates.Catalog) bool { _, ok := c.Lookup("b"); return !ok })
}

// TestWatchFlowOnly: a change to a flow file alone delivers a catalog;
// flows are served (as prompts), so they are part of what the watcher
// compares.
func TestWatchFlowOnly(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "a.json"), tmpl("a", "first"))
	if err := os.Mkdir(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	flow := func(description string) []byte {
		return []byte(`{"name":"f","description":"` + description + `","steps":[{"name":"s","template":"a"}]}`)
	}
	writeAtomic(t, filepath.Join(dir, "flows", "f.json"), flow("one"))
	h := startWatch(t, New(dir, templates.BuildOptions{Logger: quiet}))
	h.nextChange("initial catalog")
	description := func(want string) func(*templates.Catalog) bool {
		return func(c *templates.Catalog) bool {
			f, ok := c.LookupFlow("f")
			return ok && f.Flow.Description == want
		}
	}
	tests := []struct {
		name   string
		change func()
		ok     func(*templates.Catalog) bool
	}{
		{"changed", func() { writeAtomic(t, filepath.Join(dir, "flows", "f.json"), flow("two")) }, description("two")},
		{"removed", func() {
			if err := os.Remove(filepath.Join(dir, "flows", "f.json")); err != nil {
				t.Fatal(err)
			}
		}, func(c *templates.Catalog) bool { return len(c.Flows()) == 0 }},
		{"added", func() { writeAtomic(t, filepath.Join(dir, "flows", "f.json"), flow("three")) }, description("three")},
	}
	for _, tt := range tests {
		tt.change()
		h.changeWhere("flow "+tt.name, tt.ok)
	}
}

func TestWatchFolderDeleted(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "templates")
	writeAtomic(t, filepath.Join(dir, "a.json"), tmpl("a", "a"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := startWatch(t, src)
	h.rebuildWhere("initial rebuild", func(ev rebuildEvent) bool { return ev.err == nil })

	// The folder goes away (moved, so its files vanish at once).
	away := filepath.Join(parent, "away")
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	ev := h.rebuildWhere("failed rebuild", func(ev rebuildEvent) bool { return ev.err != nil })
	if fault.As(ev.err) == nil || ev.delivered {
		t.Errorf("rebuild = %+v, want a fault and nothing delivered", ev)
	}
	select {
	case c := <-h.changes:
		t.Fatalf("a catalog was delivered while the folder was gone: %v", names(c.Templates()))
	default:
	}

	// It comes back, changed: the watcher notices without an event.
	a2 := tmpl("a", "a again")
	writeAtomic(t, filepath.Join(away, "a.json"), a2)
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	h.changeWhere("folder back", hasDigest("a", a2))
	writeAtomic(t, filepath.Join(dir, "b.json"), tmpl("b", "b"))
	h.changeWhere("watching again", func(c *templates.Catalog) bool { _, ok := c.Lookup("b"); return ok })
}

// TestLibraryRun: a library running the folder's watcher swaps in each
// change and tells its listeners.
func TestLibraryRun(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir+"/a.json", tmpl("a", "1"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	src.debounce = 0
	l := templates.NewLibrary(src, quiet)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	changes := make(chan templates.Changes, 10)
	l.OnChange(func(_, _ *templates.Catalog, ch templates.Changes) { changes <- ch })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	writeAtomic(t, dir+"/b.json", tmpl("b", "1"))
	deadline := time.After(guard)
	for added := false; !added; {
		select {
		case ch := <-changes:
			added = cmp.Equal(ch.Added, []string{"b"})
		case <-deadline:
			t.Fatal("b never reported added")
		}
	}
	if _, ok := l.Catalog().Lookup("b"); !ok {
		t.Error("b not in the library's catalog")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestWatchSeesChangesBeforeItStarts: a change made after the last load but
// before Watch has its watches in place is delivered, so a caller need not
// wait for Watch to start (the contract on Watch).
func TestWatchSeesChangesBeforeItStarts(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "a.json"), tmpl("a", "first"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Changed before Watch is even called: no event will ever tell of it.
	b := tmpl("b", "b")
	writeAtomic(t, filepath.Join(dir, "b.json"), b)
	h := startWatch(t, src)
	h.changeWhere("b, written before the watch started", hasDigest("b", b))
}

// TestWatchOtherFormats: files of the formats teams already keep are
// watched like JSON ones: added, changed (a half-written one kept), removed.
func TestWatchOtherFormats(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "a.json"), tmpl("a", "first"))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	h := startWatch(t, src)
	h.nextChange("initial catalog")

	yml := func(text string) []byte {
		return []byte("name: Summary\nmessages:\n  - role: user\n    content: " + text + " {{input}}\n")
	}
	writeAtomic(t, filepath.Join(dir, "summarize.prompt.yml"), yml("Summarize"))
	h.changeWhere("summarize added", func(c *templates.Catalog) bool { _, ok := c.Lookup("summarize"); return ok })
	writeAtomic(t, filepath.Join(dir, "summarize.prompt.yml"), yml("Shorten"))
	holds := func(name string, data []byte) func(*templates.Catalog) bool {
		return func(c *templates.Catalog) bool { e, ok := c.Lookup(name); return ok && bytes.Equal(e.Raw, data) }
	}
	h.changeWhere("summarize changed", holds("summarize", yml("Shorten")))
	writeAtomic(t, filepath.Join(dir, "summarize.prompt.yml"), []byte("messages: [\n"))
	broken := h.changeWhere("summarize reported broken", func(c *templates.Catalog) bool { return len(c.Invalid()) == 1 })
	if !holds("summarize", yml("Shorten"))(broken) || !broken.Invalid()[0].Kept {
		t.Fatalf("half-written summarize not kept: %v %v", names(broken.Templates()), broken.Invalid())
	}
	writeAtomic(t, filepath.Join(dir, "greet.prompty"), []byte("---\nname: Greet\n---\nuser:\nHello {{who}}\n"))
	h.changeWhere("greet added", func(c *templates.Catalog) bool { _, ok := c.Lookup("greet"); return ok })
	if err := os.Remove(filepath.Join(dir, "greet.prompty")); err != nil {
		t.Fatal(err)
	}
	h.changeWhere("greet removed", func(c *templates.Catalog) bool { _, ok := c.Lookup("greet"); return !ok })
}
