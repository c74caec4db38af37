package app

import (
	"context"
	"log/slog"
	"testing"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/xeipuuv/gojsonschema"
)

func allTools(t testing.TB) []*tool {
	lib := templates.NewLibrary(templates.Embedded(), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := New(Options{Library: lib, AllowWrite: true, Writer: nopWriter{}})
	return a.tools
}

type nopWriter struct{}

func (nopWriter) SaveTemplate(context.Context, string, []byte, string) (templates.Saved, error) {
	return templates.Saved{}, nil
}

// TestQuickCheckCoversOurTools: every tool schema compiles to a quick
// check, so no tool call pays for gojsonschema when its arguments are fine.
func TestQuickCheckCoversOurTools(t *testing.T) {
	t.Parallel()
	for _, tl := range allTools(t) {
		if tl.quick == nil {
			t.Errorf("%s: schema not covered by the quick check", tl.def.Name)
		}
	}
}

func TestQuickCheck(t *testing.T) {
	t.Parallel()
	tools := map[string]*tool{}
	for _, tl := range allTools(t) {
		tools[tl.def.Name] = tl
	}
	tests := []struct {
		tool, args string
		valid      bool
	}{
		{"flowyprompt_render_template", `{"name":"Code_Review","arguments":{"code":"x"}}`, true},
		{"flowyprompt_render_template", `{"name":"Code_Review"}`, true},
		{"flowyprompt_render_template", `{"name":"bad name"}`, false},
		{"flowyprompt_render_template", `{"arguments":{}}`, false},
		{"flowyprompt_render_template", `{"name":"X","arguments":{"a":1.5,"b":true,"c":"x"}}`, true},
		{"flowyprompt_render_template", `{"name":"X","arguments":{"a":{"b":"c"}}}`, false},
		{"flowyprompt_render_template", `{"name":"X","arguments":{"a":null}}`, false},
		// A list is valid, but beyond the quick check: gojsonschema says so.
		{"flowyprompt_render_template", `{"name":"X","arguments":{"a":["x"]}}`, false},
		{"flowyprompt_render_template", `{"name":"X","extra":true}`, false},
		{"flowyprompt_list_templates", `{}`, true},
		{"flowyprompt_list_templates", `{"limit":100}`, true},
		{"flowyprompt_list_templates", `{"limit":101}`, false},
		{"flowyprompt_list_templates", `{"limit":0}`, false},
		{"flowyprompt_list_templates", `{"limit":2.5}`, false},
		{"flowyprompt_list_templates", `{"counts":true}`, true},
		{"flowyprompt_list_templates", `{"counts":"yes"}`, false},
		{"flowyprompt_search_templates", `{"query":"브랜드"}`, true},
		{"flowyprompt_search_templates", `{"query":""}`, false},
		{"flowyprompt_refresh_templates", `{}`, true},
		{"flowyprompt_refresh_templates", `{"x":1}`, false},
		{"flowyprompt_list_templates", `[]`, false},
		{"flowyprompt_list_templates", `{} {}`, false},
	}
	for _, tt := range tests {
		tl := tools[tt.tool]
		if _, got := tl.quick.valid([]byte(tt.args)); got != tt.valid {
			t.Errorf("%s %s: quick %v, want %v", tt.tool, tt.args, got, tt.valid)
		}
		// Agreement with the authority, where the quick check says yes.
		if tt.valid {
			res, err := tl.schema.Validate(gojsonschema.NewStringLoader(tt.args))
			if err != nil || !res.Valid() {
				t.Errorf("%s %s: gojsonschema disagrees: %v %v", tt.tool, tt.args, err, res.Errors())
			}
		}
	}
}

// FuzzQuickCheckAgreesWithGojsonschema: whatever the arguments, the quick
// check never accepts what gojsonschema rejects.
func FuzzQuickCheckAgreesWithGojsonschema(f *testing.F) {
	for _, s := range []string{
		`{"name":"Code_Review","arguments":{"code":"x","language":"Go"}}`, `{"limit":20,"cursor":"dDox","tag":"git"}`,
		`{"query":"commit message","limit":5}`, `{"template":"{}","file_name":"a.json"}`, `{"template":"x","message":"m"}`,
		`{"name":"X","arguments":{"a":1.5,"b":true,"c":["x"],"d":1e999}}`, `{"name":"a-b_c"}`, `{"limit":1e2}`, `{"limit":-0}`, `{"name":"\u00e9"}`, `{}`, `null`, `{"a":null}`,
	} {
		f.Add(s)
	}
	tools := allTools(f)
	f.Fuzz(func(t *testing.T, args string) {
		for _, tl := range tools {
			if tl.quick == nil {
				continue
			}
			if _, ok := tl.quick.valid([]byte(args)); !ok {
				continue
			}
			res, err := tl.schema.Validate(gojsonschema.NewStringLoader(args))
			if err != nil || !res.Valid() {
				t.Fatalf("%s: quick check accepted %q, gojsonschema: %v %v", tl.def.Name, args, err, res.Errors())
			}
		}
	})
}

// FuzzRuneCount holds runeCount to utf8.RuneCountInString, invalid UTF-8
// included.
func FuzzRuneCount(f *testing.F) {
	for _, s := range []string{"", "ascii only, longer than eight bytes", "mixed 한국어 text after sixteen b", "\xff\xfe tail", "1234567\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
	})
}
