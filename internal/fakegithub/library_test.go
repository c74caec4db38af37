package fakegithub

import (
	"testing"

	"github.com/flowyprompt/flowyprompt/templates"
)

// TestGenerateDenseLibrary: with TemplateBytes, every valid template is
// about that size, loads without warnings and uses a placeholder every few
// words, as memory and load tests assume.
func TestGenerateDenseLibrary(t *testing.T) {
	const size = 4096
	lib := GenerateLibrary(LibraryOptions{Valid: 12, TemplateBytes: size})
	for _, name := range lib.Valid {
		data := lib.Files["templates/"+name+".json"]
		if len(data) < size*9/10 || len(data) > size*11/10 {
			t.Errorf("%s is %d bytes, want about %d", name, len(data), size)
		}
		tpl, warnings, err := templates.Parse(data, templates.ParseOptions{FileName: name + ".json"})
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s: %v, warnings %v", name, err, warnings)
		}
		holes, text := 0, 0
		for _, s := range tpl.Sections() {
			text += len(s.Content)
			for p := range s.All() {
				if p.IsPlaceholder() {
					holes++
				}
			}
		}
		if len(tpl.Variables) != len(denseVariables) || holes == 0 || text/holes > 40 {
			t.Errorf("%s: %d variables, %d placeholders in %d bytes of sections; want %d variables and one placeholder per 40 bytes at most",
				name, len(tpl.Variables), holes, text, len(denseVariables))
		}
	}
	again := GenerateLibrary(LibraryOptions{Valid: 12, TemplateBytes: size})
	for p, b := range lib.Files {
		if string(again.Files[p]) != string(b) {
			t.Errorf("%s differs between two generations", p)
		}
	}
}
