package templates

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compileParts splits content into literal and placeholder parts, as a
// section compiled from it gives them: the scanner's tests read parts.
func compileParts(content string, varIndex func(string) int) []Part {
	return Section{Content: content, holes: compileHoles(content, varIndex)}.Parts()
}

// TestSectionAll: All yields what Parts returns, stops when told, and
// Parts hands each caller a slice of its own.
func TestSectionAll(t *testing.T) {
	data := []byte(`{"metadata":{"name":"A","description":"d","version":"1.0.0"},
		"variables":[{"name":"who","type":"string","description":"w"}],
		"results":[{"name":"s","content":"Hi {{ who }}, {{{ghost}}} and {{who}}!"},{"name":"t","content":"{{who}}"},{"name":"u","content":"plain"}]}`)
	tpl, _, err := Parse(data, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Part{
		{{Text: "Hi ", Var: -1}, {Text: "{{ who }}", Name: "who", Var: 0}, {Text: ", ", Var: -1},
			{Text: "{{{ghost}}}", Name: "ghost", Var: -1}, {Text: " and ", Var: -1}, {Text: "{{who}}", Name: "who", Var: 0}, {Text: "!", Var: -1}},
		{{Text: "{{who}}", Name: "who", Var: 0}},
		{{Text: "plain", Var: -1}},
	}
	for i, s := range tpl.Sections() {
		if diff := cmp.Diff(want[i], slices.Collect(s.All())); diff != "" {
			t.Errorf("section %d: All (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(want[i], s.Parts()); diff != "" {
			t.Errorf("section %d: Parts (-want +got):\n%s", i, diff)
		}
	}
	s := tpl.Sections()[0]
	var first []Part
	for p := range s.All() {
		first = append(first, p)
		if len(first) == 2 {
			break
		}
	}
	if diff := cmp.Diff(want[0][:2], first); diff != "" {
		t.Errorf("All after a break (-want +got):\n%s", diff)
	}
	mine := s.Parts()
	mine[0].Text = "changed"
	if s.Parts()[0].Text != "Hi " {
		t.Error("a change to one caller's Parts reached the next caller")
	}
}

// TestPlaceholderName: the name is what the braces and the white space
// around it enclose, however many of each.
func TestPlaceholderName(t *testing.T) {
	for text, want := range map[string]string{
		"{{a}}": "a", "{{ name }}": "name", "{{{x_1}}}": "x_1", "{{\n\t name \r\n}}": "name", "{{{{y}}}}": "y",
	} {
		if got := placeholderName(text); got != want {
			t.Errorf("placeholderName(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestPackKeepsValues: packing a parsed template's strings into one
// allocation changes none of them.
func TestPackKeepsValues(t *testing.T) {
	data := []byte(`{"metadata":{"name":"A","description":"d\n\u00e9","version":"1.0.0","author":"me","tags":["x","y"],"category":"c","lastUpdated":"2025-01-06"},
		"variables":[{"name":"who","type":"string","description":"w","default":"you","enum":["you","me"],"examples":["them"]},
		             {"name":"n","type":"string","description":"x"}],
		"results":[{"name":"s","content":"Hi {{who}}","format":"markdown"}],
		"messages":[{"role":"assistant","content":"Hello, {{who}}."},{"role":"user","content":"{{n}}"}],
		"resources":["template://B","notes/a.md"]}`)
	tpl, _, err := Parse(data, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := decodeDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	unpacked := fromDocument(doc.(map[string]any))
	if diff := cmp.Diff(unpacked, tpl, cmp.AllowUnexported(Template{}), cmp.FilterPath(func(p cmp.Path) bool {
		return strings.HasSuffix(p.String(), "sections") || strings.HasSuffix(p.String(), "turns")
	}, cmp.Ignore())); diff != "" {
		t.Errorf("packed template differs (-unpacked +packed):\n%s", diff)
	}
}
