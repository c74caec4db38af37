package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// logicLibrary builds a library of one template, Logic, whose one section
// is content, with the variables name (string, optional), flag (boolean),
// files (array) and count (number), and the partials given (name → body).
func logicLibrary(t testing.TB, content string, partials map[string]string) *templates.Template {
	t.Helper()
	doc := map[string]any{
		"metadata": map[string]any{"name": "Logic", "description": "d", "version": "1.0.0"},
		"variables": []map[string]any{
			{"name": "name", "type": "string", "description": "d"},
			{"name": "flag", "type": "boolean", "description": "d"},
			{"name": "files", "type": "array", "description": "d"},
			{"name": "count", "type": "number", "description": "d"},
		},
		"results": []map[string]any{{"name": "Body", "content": content}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	files := []templates.File{{Path: "Logic.json", Data: data}}
	for name, body := range partials {
		files = append(files, templates.File{Path: "partials/" + name + ".md", Data: []byte(body)})
	}
	c := templates.Build(files, templates.BuildOptions{})
	e, ok := c.Lookup("Logic")
	if !ok {
		t.Fatalf("Logic is invalid: %v", c.Invalid())
	}
	return e.Template
}

// body is Prompt's text without the header, the section alone.
func body(t *testing.T, tp *templates.Template, args map[string]string) (string, error) {
	t.Helper()
	out, err := Prompt(tp, args)
	if err != nil {
		return "", err
	}
	_, section, ok := strings.Cut(out, "\n---\n\n")
	if !ok {
		t.Fatalf("no section in %q", out)
	}
	return section, nil
}

// TestLogicConstructs: each construct's edge cases, rendered through
// Prompt.
func TestLogicConstructs(t *testing.T) {
	const optional = "# Task\n{{#if name}}\n## Context\n{{name}}\n{{/if}}\nDone."
	const list = "{{#each files}}\n- {{@index}}. {{this}}\n{{else}}\n(no files)\n{{/each}}"
	tests := []struct {
		name     string
		content  string
		partials map[string]string
		args     map[string]string
		want     string
	}{
		{"optional section given", optional, nil, map[string]string{"name": "ctx"}, "# Task\n## Context\nctx\nDone."},
		{"optional section left out: no heading left behind", optional, nil, nil, "# Task\nDone."},
		{"false", "{{#if flag}}yes{{else}}no{{/if}}", nil, map[string]string{"flag": "false"}, "no"},
		{"true", "{{#if flag}}yes{{else}}no{{/if}}", nil, map[string]string{"flag": "TRUE"}, "yes"},
		{"unless", "{{#unless flag}}off{{/unless}}", nil, map[string]string{"flag": "false"}, "off"},
		{"the string false is a value", "{{#if name}}set{{/if}}", nil, map[string]string{"name": "false"}, "set"},
		{"the number 0 is a value", "{{#if count}}{{count}}{{/if}}", nil, map[string]string{"count": "0.50"}, "0.50"},
		{"else if", "{{#if flag}}a{{else if name}}b{{else}}c{{/if}}", nil, map[string]string{"name": "n"}, "b"},
		{"a list as JSON", list, nil, map[string]string{"files": `["a.go", "b.go"]`}, "- 0. a.go\n- 1. b.go\n"},
		{"a list by lines", list, nil, map[string]string{"files": "a.go\n\nb.go\n"}, "- 0. a.go\n- 1. b.go\n"},
		{"an empty list", list, nil, map[string]string{"files": "[]"}, "(no files)\n"},
		{"no list", list, nil, nil, "(no files)\n"},
		{"an empty list is false", "{{#if files}}some{{else}}none{{/if}}", nil, map[string]string{"files": "[]"}, "none"},
		{"nested blocks", "{{#if flag}}{{#each files}}{{#if @first}}[{{/if}}{{this}}{{#unless @last}}, {{/unless}}{{#if @last}}]{{/if}}{{/each}}{{/if}}",
			nil, map[string]string{"flag": "true", "files": `["x","y","z"]`}, "[x, y, z]"},
		{"a variable inside a loop", "{{#each files}}{{this}}@{{@root.name}} {{/each}}", nil,
			map[string]string{"files": "a\nb", "name": "n"}, "a@n b@n "},
		{"a value containing {{x}} is not expanded", "{{#if name}}{{name}}|{{#each files}}{{this}}{{/each}}{{/if}}", nil,
			map[string]string{"name": "{{flag}} {{#if flag}}", "files": `["{{name}}", "{{> p}}"]`}, "{{flag}} {{#if flag}}|{{name}}{{> p}}"},
		{"no HTML escaping", "{{#if name}}{{name}} {{{name}}}{{/if}}", nil, map[string]string{"name": `<b>&"'`}, `<b>&"' <b>&"'`},
		{"a placeholder without a variable stays as written", "{{#if flag}}{{ghost}}{{/if}}", nil, map[string]string{"flag": "true"}, "{{ghost}}"},
		{"a placeholder without a variable takes its argument", "{{#if flag}}{{ghost}}{{/if}}", nil,
			map[string]string{"flag": "true", "ghost": "boo"}, "boo"},
		{"a partial", "Intro\n{{> style}}\nEnd", map[string]string{"style": "Be brief, {{name}}.\n"},
			map[string]string{"name": "Ada"}, "Intro\nBe brief, Ada.\nEnd"},
		{"partials in partials", "{{> a}}", map[string]string{"a": "A{{#if flag}}{{> b}}{{/if}}", "b": "B{{name}}"},
			map[string]string{"flag": "true", "name": "!"}, "AB!"},
		{"an indented partial", "list:\n  {{> items}}\nend", map[string]string{"items": "- one\n- two\n"}, nil, "list:\n  - one\n  - two\nend"},
		{"white space control", "a  {{~#if flag~}}  b  {{~/if~}}  c", nil, map[string]string{"flag": "true"}, "abc"},
		{"a comment", "a{{! note }}b{{#if flag}}{{/if}}", nil, nil, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := body(t, logicLibrary(t, tt.content, tt.partials), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimRight(tt.want, " \n"); got != want {
				t.Errorf("got\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestLogicErrors: values that do not parse by their type, and loops that
// would render more than MaxLogicSize, are INVALID_ARGUMENT; nothing is
// rendered.
func TestLogicErrors(t *testing.T) {
	const loops = "{{#each files}}{{#each @root.files}}{{#each @root.files}}{{this}}{{/each}}{{/each}}{{/each}}"
	many := make([]string, 100)
	for i := range many {
		many[i] = "item"
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name, content string
		args          map[string]string
		want          string
	}{
		{"not a boolean", "{{#if flag}}x{{/if}}", map[string]string{"flag": "yes"}, `flag is not a valid boolean: not true or false`},
		{"not a JSON array", "{{#each files}}x{{/each}}", map[string]string{"files": `["a", {"b": 1}]`}, `files is not a valid array: item 1 of the JSON array is an object, not a string`},
		{"an argument without a variable, too long", "{{#if flag}}{{ghost}}{{/if}}",
			map[string]string{"flag": "true", "ghost": strings.Repeat("g", MaxValueLength+1)}, `argument "ghost" is 10001 characters long`},
		{"a loop too long", loops, map[string]string{"files": string(manyJSON)}, "would render more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prompt(logicLibrary(t, tt.content, nil), tt.args)
			if fault.CodeOf(err) != fault.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want INVALID_ARGUMENT with %q", err, tt.want)
			}
		})
	}
}

// TestLogicConversation: a message with logic is rendered as a section is.
func TestLogicConversation(t *testing.T) {
	data := []byte(`{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},
	"variables":[{"name":"files","type":"array","description":"d"},{"name":"q","type":"string","description":"d"}],
	"messages":[{"role":"user","content":"{{q}}\n{{#each files}}\n- {{this}}\n{{/each}}"},{"role":"assistant","content":"ok {{q}}"}]}`)
	tp, _, err := templates.Parse(data, templates.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := Conversation(tp, map[string]string{"files": "a\nb", "q": "Q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "Q\n- a\n- b" || msgs[1].Text != "ok Q" {
		t.Errorf("messages %q", msgs)
	}
}

// TestLogicConcurrent: one compiled template, partials included, renders
// on many goroutines at once; under -race this proves rendering writes
// nothing shared (raymond's NoEscape option would).
func TestLogicConcurrent(t *testing.T) {
	tp := logicLibrary(t, "{{#each files}}{{this}}{{/each}}{{> p}}", map[string]string{"p": "{{#if flag}}<{{name}}>{{/if}}"})
	args := map[string]string{"files": "a\nb", "flag": "true", "name": "n"}
	want, err := body(t, tp, args)
	if err != nil || want != "ab<n>" {
		t.Fatalf("got %q, %v; want ab<n>", want, err)
	}
	whole, _ := Prompt(tp, args)
	done := make(chan string)
	for range 8 {
		go func() {
			out, err := Prompt(tp, args)
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for range 8 {
		if got := <-done; got != whole {
			t.Errorf("got %q, want %q", got, whole)
		}
	}
}

// BenchmarkRenderSections renders the same prompt two ways: a template of
// plain placeholders (today's compiled path) and one whose optional
// section and list are blocks ({{#if}}, {{#each}}), which the engine
// renders. go test -run XXX -bench RenderSections -benchmem ./render
func BenchmarkRenderSections(b *testing.B) {
	const intro = "## Task\n\nReview {{topic}} as a careful senior colleague would, and say what to fix first.\n\n"
	plain := logicLibrary(b, intro+"## Context\n\n{{name}}\n\n## Files\n\n{{count}}", nil)
	sections := logicLibrary(b, intro+"{{#if name}}\n## Context\n\n{{name}}\n{{/if}}\n\n## Files\n\n{{#each files}}\n- {{this}}\n{{/each}}", nil)
	files := []string{"internal/app/app.go", "internal/app/tools.go", "render/render.go", "templates/section.go", "templates/logic.go"}
	filesJSON, _ := json.Marshal(files)
	plainArgs := map[string]string{"topic": "the cache", "name": "It leaks under load.", "count": "- " + strings.Join(files, "\n- ")}
	logicArgs := map[string]string{"topic": "the cache", "name": "It leaks under load.", "files": string(filesJSON)}
	p, _ := Prompt(plain, plainArgs)
	s, _ := Prompt(sections, logicArgs)
	if p != s {
		b.Fatalf("the two templates render differently:\n%q\n%q", p, s)
	}
	for _, bm := range []struct {
		name string
		tp   *templates.Template
		args map[string]string
	}{{"plain", plain, plainArgs}, {"sections", sections, logicArgs}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Prompt(bm.tp, bm.args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
