package app

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestToolFilesAreTheTools: the tools folder has the texts of exactly the
// tools the server can offer, so a renamed or misspelled file cannot leave
// a tool with no text or a text with no tool.
func TestToolFilesAreTheTools(t *testing.T) {
	var names []string
	for _, tl := range allTools(t) {
		names = append(names, tl.def.Name)
	}
	var files []string
	for name := range toolTexts() {
		files = append(files, name)
	}
	slices.Sort(names)
	slices.Sort(files)
	if diff := cmp.Diff(names, files); diff != "" {
		t.Errorf("tools (-built +in the tools folder):\n%s", diff)
	}
}

// mapFile is a fstest.MapFS entry with the given text.
func mapFile(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }

// TestLoadToolTextsSplicesIncludes: an include becomes the fragment, in
// place, with the members of both in their files' order, and the schema
// is compacted.
func TestLoadToolTextsSplicesIncludes(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md": mapFile("How to edit these files.\n"),
		"t.md":      mapFile("\nDoes a thing.\n\nUSE WHEN:\n- always\n"),
		"t.input.json": mapFile(`{
  "type": "object",
  "properties": {
    "zeta": {"type": "integer"},
    "name": {"$include": "shared/name.json"},
    "alpha": {"type": "string"}
  }
}
`),
		"t.output.json":    mapFile(`{"type": "object", "properties": {"who": { "$include" : "shared/name.json" }}}`),
		"shared/name.json": mapFile("{\n  \"type\": \"string\",\n  \"pattern\": \"^[a-z]+$\"\n}\n"),
	}
	texts, err := loadToolTexts(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]toolText{"t": {
		description: "\nDoes a thing.\n\nUSE WHEN:\n- always\n",
		input:       `{"type":"object","properties":{"zeta":{"type":"integer"},"name":{"type":"string","pattern":"^[a-z]+$"},"alpha":{"type":"string"}}}`,
		output:      `{"type":"object","properties":{"who":{"type":"string","pattern":"^[a-z]+$"}}}`,
	}}
	if diff := cmp.Diff(want, texts, cmp.AllowUnexported(toolText{})); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}

// TestLoadToolTextsRejects: every way the files can be wrong is an error
// that names the file, never a tool served with a broken or stale text.
func TestLoadToolTextsRejects(t *testing.T) {
	good := func() fstest.MapFS {
		return fstest.MapFS{
			"t.md":             mapFile("Does a thing.\n"),
			"t.input.json":     mapFile(`{"type": "object", "properties": {"name": {"$include": "shared/name.json"}}}`),
			"t.output.json":    mapFile(`{"type": "object"}`),
			"shared/name.json": mapFile(`{"type": "string"}`),
		}
	}
	cases := []struct {
		name   string
		change func(fstest.MapFS)
		want   string
	}{
		{"schema not JSON", func(m fstest.MapFS) { m["t.output.json"] = mapFile("{\n  \"type\": \"object\",\n}") }, "t.output.json:3: not JSON"},
		{"schema not a schema", func(m fstest.MapFS) { m["t.output.json"] = mapFile(`{"type": 5}`) }, "t.output.json: not a JSON schema"},
		{"schema missing", func(m fstest.MapFS) { delete(m, "t.output.json") }, "t.output.json"},
		{"description empty", func(m fstest.MapFS) { m["t.md"] = mapFile("\n \n") }, "t.md: empty description"},
		{"schema without description", func(m fstest.MapFS) { m["u.input.json"] = mapFile(`{"type": "object"}`) }, "u.input.json: no u.md beside it"},
		{"stray file", func(m fstest.MapFS) { m["t.input.json~"] = mapFile(`{}`) }, "t.input.json~: not a tool's"},
		{"fragment missing", func(m fstest.MapFS) { delete(m, "shared/name.json") }, `t.input.json: open shared/name.json`},
		{"fragment not JSON", func(m fstest.MapFS) { m["shared/name.json"] = mapFile(`{"type": "string"`) }, "t.input.json: shared/name.json:1: not JSON"},
		{"fragment outside shared", func(m fstest.MapFS) {
			m["t.output.json"] = mapFile(`{"type": "object", "properties": {"x": {"$include": "t.input.json"}}}`)
		}, `t.output.json: includes "t.input.json", which is not a file in shared/`},
		{"fragment unused", func(m fstest.MapFS) { m["shared/other.json"] = mapFile(`{}`) }, "shared/other.json: no schema includes it"},
		{"include with other members", func(m fstest.MapFS) {
			m["t.input.json"] = mapFile(`{"type": "object", "properties": {"name": {"$include": "shared/name.json", "description": "x"}}}`)
		}, `t.input.json: a "$include" is left after splicing`},
		{"include in a fragment", func(m fstest.MapFS) {
			m["shared/name.json"] = mapFile(`{"type": "object", "properties": {"n": {"$include": "shared/name.json"}}}`)
		}, `t.input.json: a "$include" is left after splicing`},
	}
	if _, err := loadToolTexts(good()); err != nil {
		t.Fatalf("the files the cases start from do not load: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := good()
			c.change(fsys)
			_, err := loadToolTexts(fsys)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
