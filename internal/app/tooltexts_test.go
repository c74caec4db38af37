package app

import (
	"encoding/json"
	"fmt"
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
	t.Parallel()
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

// TestLoadToolTextsCompacts: a schema is served compact, with its members
// in the file's order, the order a model reads them in.
func TestLoadToolTextsCompacts(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"README.md": mapFile("How to edit these files.\n"),
		"t.md":      mapFile("\nDoes a thing.\n\nUSE WHEN:\n- always\n"),
		"t.input.json": mapFile(`{
  "type": "object",
  "properties": {
    "zeta": {"type": "integer"},
    "alpha": {"type": "string"}
  }
}
`),
		"t.output.json": mapFile(`{"type": "object", "properties": {"who": { "type" : "string" }}}`),
	}
	texts, err := loadToolTexts(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]toolText{"t": {
		description: "\nDoes a thing.\n\nUSE WHEN:\n- always\n",
		input:       `{"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"string"}}}`,
		output:      `{"type":"object","properties":{"who":{"type":"string"}}}`,
	}}
	if diff := cmp.Diff(want, texts, cmp.AllowUnexported(toolText{})); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}

// TestLoadToolTextsRejects: every way the files can be wrong is an error
// that names the file, never a tool served with a broken or stale text.
func TestLoadToolTextsRejects(t *testing.T) {
	t.Parallel()
	good := func() fstest.MapFS {
		return fstest.MapFS{
			"t.md":          mapFile("Does a thing.\n"),
			"t.input.json":  mapFile(`{"type": "object", "properties": {"name": {"type": "string"}}}`),
			"t.output.json": mapFile(`{"type": "object"}`),
		}
	}
	cases := []struct {
		name   string
		change func(fstest.MapFS)
		want   string
	}{
		{"schema not JSON", func(m fstest.MapFS) { m["t.output.json"] = mapFile("{\n  \"type\": \"object\",\n}") }, "t.output.json:3: not JSON"},
		{"schema missing", func(m fstest.MapFS) { delete(m, "t.output.json") }, "t.output.json"},
		{"description empty", func(m fstest.MapFS) { m["t.md"] = mapFile("\n \n") }, "t.md: empty description"},
		{"schema without description", func(m fstest.MapFS) { m["u.input.json"] = mapFile(`{"type": "object"}`) }, "u.input.json: no u.md beside it"},
		{"stray file", func(m fstest.MapFS) { m["t.input.json~"] = mapFile(`{}`) }, "t.input.json~: not a tool's"},
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

// TestNameParameterIsOne: the tools that take a template's name describe
// it alike. The files write it out each, so that each reads whole; this
// keeps them from drifting apart.
func TestNameParameterIsOne(t *testing.T) {
	t.Parallel()
	var first string
	for _, tool := range []string{"flowyprompt_get_template", "flowyprompt_render_template"} {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal([]byte(toolTexts()[tool].input), &schema); err != nil {
			t.Fatal(err)
		}
		name := string(schema.Properties["name"])
		if name == "" {
			t.Fatalf("%s takes no name", tool)
		}
		if first == "" {
			first = name
		} else if name != first {
			t.Errorf("%s describes name as %s, want %s", tool, name, first)
		}
	}
}

// TestWithErrorShape: an output schema gains an anyOf whose branches are
// the tool's required members and the error's, its properties untouched;
// a schema that closes its properties is refused, since an error result
// would not validate against it.
func TestWithErrorShape(t *testing.T) {
	t.Parallel()
	got := withErrorShape(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`)
	var schema map[string]any
	if err := json.Unmarshal([]byte(got), &schema); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}},
		"anyOf": []any{map[string]any{"required": []any{"a"}}, map[string]any{"required": []any{"code", "what", "how", "retryable"}}}}
	if diff := cmp.Diff(want, schema); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "additionalProperties") {
			t.Errorf("a closed schema: recovered %v, want a panic naming additionalProperties", r)
		}
	}()
	withErrorShape(`{"type":"object","additionalProperties":false,"properties":{}}`)
}
