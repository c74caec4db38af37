package templates_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

// The built-in examples are what a fresh install serves: every one must be
// valid and clean, and there must be enough of them to be useful.
func TestEmbeddedExamples(t *testing.T) {
	src := templates.Embedded()
	if diff := cmp.Diff(templates.SourceInfo{Kind: "embedded", Location: "built-in examples"}, src.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
	c, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all, err := filepath.Glob("examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	formats := map[string]bool{}
	for _, p := range all {
		if templates.IsLibraryFile(p) {
			onDisk = append(onDisk, p)
			format, _ := templates.FormatOf(p)
			formats[format] = true
		}
	}
	// One example in each format, so a fresh install shows them all.
	for _, f := range []string{templates.FormatJSON, templates.FormatPromptYML, templates.FormatDotprompt, templates.FormatPrompty} {
		if !formats[f] {
			t.Errorf("no built-in example in the %s format", f)
		}
	}
	if c.Len() < 10 {
		t.Errorf("%d embedded examples, want at least 10", c.Len())
	}
	for _, inv := range c.Invalid() {
		t.Errorf("embedded example %s is invalid: %v (problems: %v)", inv.Path, inv.Err, templates.Problems(inv.Err))
	}
	if c.Len()+len(c.Invalid()) != len(onDisk) {
		t.Errorf("%d templates + %d invalid from %d files", c.Len(), len(c.Invalid()), len(onDisk))
	}
	for _, e := range c.Templates() {
		for _, w := range e.Warnings {
			t.Errorf("embedded example %s has a warning: %s", e.Path, w)
		}
	}
	flowFiles, err := filepath.Glob("examples/flows/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(flowFiles) == 0 || len(c.Flows()) != len(flowFiles) {
		t.Errorf("%d valid flows from %d files in examples/flows, want all of at least one", len(c.Flows()), len(flowFiles))
	}
	again, _ := src.Load(context.Background())
	if again != c {
		t.Error("the embedded catalog is rebuilt on every Load")
	}
}

func TestEmbeddedLoadHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := templates.Embedded().Load(ctx); err == nil {
		t.Error("Load ignored a cancelled context")
	}
}

// TestEmbeddedExamplesRender renders every example with sample values, into
// testdata/golden/examples/<name>.md (go test -run EmbeddedExamplesRender -update).
func TestEmbeddedExamplesRender(t *testing.T) {
	c, err := templates.Embedded().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "golden", "examples")
	if golden.Update() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range c.Templates() {
		name := e.Template.Metadata.Name
		t.Run(name, func(t *testing.T) {
			if e.Template.Format != templates.FormatJSON {
				// The other formats are conversations: their messages.
				msgs, err := render.Conversation(e.Template, sampleArgs(e.Template))
				if err != nil {
					t.Fatal(err)
				}
				golden.Text(t, filepath.Join(dir, name+".md"), render.Transcript(msgs))
				return
			}
			got, err := render.Prompt(e.Template, sampleArgs(e.Template))
			if err != nil {
				t.Fatal(err)
			}
			golden.Text(t, filepath.Join(dir, name+".md"), got)
			if !strings.HasPrefix(got, "# "+name+"\n\n") {
				t.Errorf("render does not start with the name heading")
			}
		})
	}
	if golden.Update() {
		return
	}
	// A golden file without an example is left over from a removed one.
	stale, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, g := range stale {
		if _, ok := c.Lookup(strings.TrimSuffix(filepath.Base(g), ".md")); !ok {
			t.Errorf("golden file %s has no example", g)
		}
	}
}

// sampleArgs fills every variable, deterministically: its first example,
// else its first enum value, else a marker naming it. Optional variables
// with a default are left out so the default shows in the golden file.
func sampleArgs(t *templates.Template) map[string]string {
	args := map[string]string{}
	for _, v := range t.Variables {
		switch {
		case !v.Required && v.Default != nil:
		case len(v.Examples) > 0:
			args[v.Name] = v.Examples[0]
		case len(v.Enum) > 0:
			args[v.Name] = v.Enum[0]
		default:
			args[v.Name] = "<sample " + v.Name + ">"
		}
	}
	return args
}
