package folder

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// TestFolderPartials: a folder's partials/NAME.md is read with its
// templates, and a change to it alone is a change of the templates that
// include it: the catalog's Diff and the watcher's fingerprint both see
// it.
func TestFolderPartials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), tmpl("a", "Intro\n{{> style}}"))
	writeFile(t, filepath.Join(dir, "b.json"), tmpl("b", "plain"))
	writeFile(t, filepath.Join(dir, "partials", "style.md"), []byte("Be brief."))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	first, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names(first.Templates())); diff != "" {
		t.Fatalf("templates (-want +got):\n%s\ninvalid: %v", diff, first.Invalid())
	}
	writeAtomic(t, filepath.Join(dir, "partials", "style.md"), []byte("Be thorough."))
	again, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, templates.Diff(first, again).Changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if fingerprint(first) == fingerprint(again) {
		t.Error("the fingerprint does not see the partial's change")
	}
	e, _ := again.Lookup("a")
	if got, err := e.Template.Sections()[0].Execute(func(string) any { return "" }, 1000); err != nil || got != "Intro\nBe thorough." {
		t.Errorf("a renders %q, %v", got, err)
	}
}

// TestFolderBrokenPartial: a partial that breaks makes the templates that
// include it invalid; they are not reported as kept at their last
// version, which fails the same way.
func TestFolderBrokenPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), tmpl("a", "{{> style}}"))
	writeFile(t, filepath.Join(dir, "partials", "style.md"), []byte("Be brief."))
	src := New(dir, templates.BuildOptions{Logger: quiet})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "partials", "style.md"), []byte("{{#if x}}"))
	c, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []invalidRow{{Path: "a.json", Code: "INVALID_TEMPLATE"}, {Path: "partials/style.md", Code: "INVALID_TEMPLATE"}}
	if diff := cmp.Diff(want, invalidRows(c)); diff != "" {
		t.Errorf("invalid (-want +got):\n%s", diff)
	}
	if _, ok := c.Lookup("a"); ok {
		t.Error("a is served with its partial broken")
	}
}
