package render

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func parse(t testing.TB, data []byte) *templates.Template {
	t.Helper()
	tpl, _, err := templates.Parse(data, templates.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v %v", err, templates.Problems(err))
	}
	return tpl
}

func loadFile(t testing.TB, name string) *templates.Template {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, data)
}

// seedExample is the seed's "Example with Variable Substitution" (seed 000,
// section 4) verbatim, except the heading: the seed shows the Korean title
// "브랜드 포지셔닝 전략", but the heading is metadata.name, and names must
// match ^[a-zA-Z0-9_-]+$ (the seed's own data model), so ours is
// Brand_Positioning_Strategy.
const seedExample = `# Brand_Positioning_Strategy

기업의 브랜드 포지셔닝 전략을 수립합니다.

**Version**: 1.0.0
**Tags**: marketing, strategy, branding

---

## 회사 정보
- 회사명: 테크스타트업
- 산업 분야: AI
- 타겟 고객: B2B SaaS 기업

---

## 분석 요청사항
위 정보를 바탕으로 다음을 분석해주세요:
1. 경쟁 우위 요소
2. 포지셔닝 전략
3. 메시징 프레임워크`

func TestSeedExampleGolden(t *testing.T) {
	tpl := loadFile(t, "brand_positioning_strategy.json")
	got, err := Prompt(tpl, map[string]string{
		"company_name":    "테크스타트업",
		"industry":        "AI",
		"target_audience": "B2B SaaS 기업",
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "brand_positioning_strategy.md")
	golden.Text(t, path, got)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The golden file itself must stay the seed's text: -update cannot
	// quietly change the format.
	if diff := cmp.Diff(seedExample, string(want)); diff != "" {
		t.Errorf("golden file differs from the seed's example (-seed +golden):\n%s", diff)
	}
}

// tpl builds a template from a compact description, through Parse so the
// sections are compiled as in production.
func tpl(t testing.TB, tags []string, vars []map[string]any, contents ...string) *templates.Template {
	t.Helper()
	results := []any{}
	for i, c := range contents {
		results = append(results, map[string]any{"name": fmt.Sprintf("S%d", i), "content": c})
	}
	if vars == nil {
		vars = []map[string]any{}
	}
	md := map[string]any{"name": "T", "description": "Describes T.", "version": "2.0.1"}
	if tags != nil {
		md["tags"] = tags
	}
	data, err := json.Marshal(map[string]any{"metadata": md, "variables": vars, "results": results})
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, data)
}

func v(name string, required bool, def ...string) map[string]any {
	m := map[string]any{"name": name, "type": "string", "description": "the " + name, "required": required}
	if len(def) > 0 {
		m["default"] = def[0]
	}
	return m
}

const header = "# T\n\nDescribes T.\n\n**Version**: 2.0.1\n"

func TestPrompt(t *testing.T) {
	long := strings.Repeat("가", MaxValueLength) // 30,000 bytes, 10,000 characters
	tests := []struct {
		name string
		tpl  *templates.Template
		args map[string]string
		want string
	}{
		{
			name: "no tags line without tags",
			tpl:  tpl(t, nil, nil, "body"),
			want: header + "\n---\n\nbody",
		},
		{
			name: "empty tags give no tags line",
			tpl:  tpl(t, []string{}, nil, "body"),
			want: header + "\n---\n\nbody",
		},
		{
			name: "tags joined",
			tpl:  tpl(t, []string{"a", "b c"}, nil, "body"),
			want: header + "**Tags**: a, b c\n\n---\n\nbody",
		},
		{
			name: "sections separated, none after the last",
			tpl:  tpl(t, nil, nil, "one", "two", "three"),
			want: header + "\n---\n\none\n\n---\n\ntwo\n\n---\n\nthree",
		},
		{
			name: "trailing whitespace of the prompt trimmed",
			tpl:  tpl(t, nil, nil, "  one \n", "two\n\n \t"),
			want: header + "\n---\n\n  one \n\n\n---\n\ntwo",
		},
		{
			name: "values substituted everywhere",
			tpl:  tpl(t, nil, []map[string]any{v("a", true)}, "{{a}} {{ a }} {{{a}}}", "again {{a}}"),
			args: map[string]string{"a": "X"},
			want: header + "\n---\n\nX X X\n\n---\n\nagain X",
		},
		{
			name: "single pass: a value holding a placeholder stays literal",
			tpl:  tpl(t, nil, []map[string]any{v("a", true), v("b", false)}, "{{a}}|{{b}}"),
			args: map[string]string{"a": "{{b}}", "b": "B"},
			want: header + "\n---\n\n{{b}}|B",
		},
		{
			name: "optional missing takes its default",
			tpl:  tpl(t, nil, []map[string]any{v("o", false, "dflt")}, "[{{o}}]"),
			want: header + "\n---\n\n[dflt]",
		},
		{
			name: "optional empty takes its default",
			tpl:  tpl(t, nil, []map[string]any{v("o", false, "dflt")}, "[{{o}}]"),
			args: map[string]string{"o": ""},
			want: header + "\n---\n\n[dflt]",
		},
		{
			name: "optional without default is empty",
			tpl:  tpl(t, nil, []map[string]any{v("o", false)}, "[{{o}}]"),
			want: header + "\n---\n\n[]",
		},
		{
			name: "given value beats the default",
			tpl:  tpl(t, nil, []map[string]any{v("o", false, "dflt")}, "[{{o}}]"),
			args: map[string]string{"o": "mine"},
			want: header + "\n---\n\n[mine]",
		},
		{
			name: "undefined placeholder stays as written",
			tpl:  tpl(t, nil, nil, "x {{ ghost }} y"),
			want: header + "\n---\n\nx {{ ghost }} y",
		},
		{
			name: "undefined placeholder takes a same-named argument",
			tpl:  tpl(t, nil, nil, "x {{ ghost }} y"),
			args: map[string]string{"ghost": "boo"},
			want: header + "\n---\n\nx boo y",
		},
		{
			name: "not placeholders stay literal",
			tpl:  tpl(t, nil, nil, "{{}} {{company-name}} {single}"),
			args: map[string]string{"company-name": "X"},
			want: header + "\n---\n\n{{}} {{company-name}} {single}",
		},
		{
			name: "json section keeps its braces",
			tpl:  tpl(t, nil, []map[string]any{v("x", true)}, `{"k": {{x}}}`),
			args: map[string]string{"x": `"v"`},
			want: header + "\n---\n\n{\"k\": \"v\"}",
		},
		{
			name: "unknown arguments are ignored",
			tpl:  tpl(t, nil, nil, "body"),
			args: map[string]string{"nobody": "x"},
			want: header + "\n---\n\nbody",
		},
		{
			name: "a value of exactly the maximum length in characters",
			tpl:  tpl(t, nil, []map[string]any{v("a", true)}, "{{a}}"),
			args: map[string]string{"a": long},
			want: header + "\n---\n\n" + long,
		},
		{
			name: "a value containing newlines and markdown",
			tpl:  tpl(t, nil, []map[string]any{v("a", true)}, "> {{a}}"),
			args: map[string]string{"a": "line1\n---\n# h"},
			want: header + "\n---\n\n> line1\n---\n# h",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Prompt(tt.tpl, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Prompt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPromptTrimsBackToTheSeparator(t *testing.T) {
	// The only section renders empty, so trimming eats back to the
	// separator.
	tp := tpl(t, nil, []map[string]any{v("o", false)}, "{{o}}")
	got, err := Prompt(tp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := header + "\n---"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPromptErrors(t *testing.T) {
	tooLong := strings.Repeat("a", MaxValueLength+1)
	vars := []map[string]any{v("company", true), v("industry", true), v("note", false)}
	tests := []struct {
		name    string
		tpl     *templates.Template
		args    map[string]string
		code    string
		details map[string]any
		what    string
		how     []string
	}{
		{
			name:    "every missing required variable is named",
			tpl:     tpl(t, nil, vars, "{{company}} {{industry}} {{note}}"),
			args:    map[string]string{"note": "x"},
			code:    fault.MissingRequiredVariable,
			details: map[string]any{"missing": []string{"company", "industry"}, "template": "T"},
			what:    `template "T" needs 2 required variables: company, industry`,
			how:     []string{"company (the company)", "industry (the industry)"},
		},
		{
			name:    "an empty required value counts as missing",
			tpl:     tpl(t, nil, vars, "{{company}} {{industry}}"),
			args:    map[string]string{"company": "", "industry": "AI"},
			code:    fault.MissingRequiredVariable,
			details: map[string]any{"missing": []string{"company"}, "template": "T"},
			what:    `template "T" needs the required variable company`,
			how:     []string{"company (the company)"},
		},
		{
			name:    "too long value",
			tpl:     tpl(t, nil, vars, "{{company}} {{industry}}"),
			args:    map[string]string{"company": "c", "industry": tooLong},
			code:    fault.InvalidArgument,
			details: map[string]any{"variable": "industry", "length": MaxValueLength + 1, "maxLength": MaxValueLength},
			what:    `argument "industry" is 10001 characters long, over the 10000-character limit`,
			how:     []string{`shorten "industry" to at most 10000 characters`},
		},
		{
			name:    "too long optional value",
			tpl:     tpl(t, nil, vars, "{{company}} {{industry}} {{note}}"),
			args:    map[string]string{"company": "c", "industry": "i", "note": tooLong},
			code:    fault.InvalidArgument,
			details: map[string]any{"variable": "note", "length": MaxValueLength + 1, "maxLength": MaxValueLength},
			what:    `argument "note" is 10001 characters long, over the 10000-character limit`,
		},
		{
			name:    "too long value for an undefined placeholder",
			tpl:     tpl(t, nil, nil, "{{ghost}}"),
			args:    map[string]string{"ghost": tooLong},
			code:    fault.InvalidArgument,
			details: map[string]any{"variable": "ghost", "length": MaxValueLength + 1, "maxLength": MaxValueLength},
			what:    `argument "ghost" is 10001 characters long, over the 10000-character limit`,
		},
		{
			// Missing variables are reported first: that error names
			// every one, and the user must come back anyway.
			name:    "missing beats too long",
			tpl:     tpl(t, nil, vars, "{{company}} {{industry}}"),
			args:    map[string]string{"company": tooLong},
			code:    fault.MissingRequiredVariable,
			details: map[string]any{"missing": []string{"industry"}, "template": "T"},
			what:    `template "T" needs the required variable industry`,
		},
		{
			// Required means the caller must give it; a default on a
			// required variable documents an example, nothing more.
			name:    "required with a default is still required",
			tpl:     tpl(t, nil, []map[string]any{v("r", true, "d")}, "{{r}}"),
			code:    fault.MissingRequiredVariable,
			details: map[string]any{"missing": []string{"r"}, "template": "T"},
			what:    `template "T" needs the required variable r`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Prompt(tt.tpl, tt.args)
			if out != "" {
				t.Errorf("a prompt on error: %q", out)
			}
			f := fault.As(err)
			if f == nil {
				t.Fatalf("err = %v, want a fault", err)
			}
			if f.Code != tt.code || f.What != tt.what {
				t.Errorf("code %s what %q, want %s %q", f.Code, f.What, tt.code, tt.what)
			}
			if diff := cmp.Diff(tt.details, f.Details); diff != "" {
				t.Errorf("details mismatch (-want +got):\n%s", diff)
			}
			for _, h := range tt.how {
				if !strings.Contains(f.How, h) {
					t.Errorf("How %q does not contain %q", f.How, h)
				}
			}
			if s, err := Prompt(tt.tpl, tt.args); err == nil || s != "" {
				t.Errorf("Prompt = %q, %v", s, err)
			}
		})
	}
	if _, err := Prompt(nil, nil); err == nil {
		t.Error("Prompt(nil) succeeded")
	}
}

// A template built in code, not parsed, renders the same.
func TestPromptHandBuiltTemplate(t *testing.T) {
	order2, order1 := 2, 1
	hand := &templates.Template{
		Metadata:  templates.Metadata{Name: "T", Description: "Describes T.", Version: "2.0.1"},
		Variables: []templates.Variable{{Name: "a", Type: "string", Description: "the a", Required: true}},
		Results: []templates.Result{
			{Name: "second", Content: "2 {{a}}", Order: &order2},
			{Name: "first", Content: "1 {{a}}", Order: &order1},
		},
	}
	got, err := Prompt(hand, map[string]string{"a": "A"})
	if err != nil {
		t.Fatal(err)
	}
	if want := header + "\n---\n\n1 A\n\n---\n\n2 A"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnknown(t *testing.T) {
	tp := tpl(t, nil, []map[string]any{v("a", true)}, "{{a}} {{ghost}}")
	tests := []struct {
		args map[string]string
		want []string
	}{
		{nil, nil},
		{map[string]string{"a": "1", "ghost": "2"}, nil},
		{map[string]string{"a": "1", "zeta": "", "Alpha": "x", "A": "y"}, []string{"A", "Alpha", "zeta"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Unknown(tp, tt.args)); diff != "" {
			t.Errorf("Unknown(%v) mismatch (-want +got):\n%s", tt.args, diff)
		}
	}
}

// TestUnknownAllocations: Unknown runs on every render; it allocates
// only for what it reports.
func TestUnknownAllocations(t *testing.T) {
	tp := tpl(t, nil, []map[string]any{v("a", true), v("b", false)}, "{{a}} {{b}} {{ghost}}")
	tests := []struct {
		name string
		args map[string]string
		want float64
	}{
		{"variables only", map[string]string{"a": "1", "b": "2"}, 0},
		{"an undefined placeholder", map[string]string{"a": "1", "ghost": "2"}, 0},
		{"an unknown name", map[string]string{"a": "1", "typo": "2"}, 1},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, func() { _ = Unknown(tp, tt.args) }); n != tt.want {
			t.Errorf("%s: %v allocations, want %v", tt.name, n, tt.want)
		}
	}
}

// reference substitutes with a regular expression, independently of the
// compiled parts: each match takes min(opening, closing) braces.
var placeholderRE = regexp.MustCompile(`(\{\{+)[ \t\r\n]*([a-zA-Z0-9_]+)[ \t\r\n]*(\}\}+)`)

func reference(content string, values map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(content, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		open, close := len(sub[1]), len(sub[3])
		n := min(open, close)
		val, ok := values[sub[2]]
		if !ok {
			return m
		}
		return strings.Repeat("{", open-n) + val + strings.Repeat("}", close-n)
	})
}

func FuzzPrompt(f *testing.F) {
	f.Add("회사명: {{company}}", "테크스타트업", "")
	f.Add("{{{company}}} {{ company }}", "{{company}}", "x")
	f.Add(`{"a": {{company}}}`, `"v"`, "")
	f.Add("no placeholders {{}} {{a-b}}", "", "")
	f.Add("{{ghost}} {{note}}", "", "{{ghost}}")
	f.Add("ends with space \n", "v", "n")
	f.Add("value ends the prompt: {{note}}", "v", "trailing \u2028 \t\n")
	f.Add("{{company}}{{note}}", "\xe2", "\x82\xac")
	f.Add("quotes \" and \\ and \x01 {{company}}\r\n", "한국어\n", "")
	f.Fuzz(func(t *testing.T, content, company, note string) {
		if strings.TrimSpace(content) == "" {
			return // the schema refuses blank sections
		}
		data, err := json.Marshal(map[string]any{
			"metadata":  map[string]any{"name": "F", "description": "d", "version": "1.0.0"},
			"variables": []any{v("company", true), v("note", false, "NOTE")},
			"results":   []any{map[string]any{"name": "S", "content": content}},
		})
		if err != nil {
			return
		}
		tp, _, err := templates.Parse(data, templates.ParseOptions{})
		if err != nil {
			return // e.g. invalid UTF-8 replaced by JSON; not what we test here
		}
		content = tp.Results[0].Content
		args := map[string]string{"company": company, "note": note}
		got, err := Prompt(tp, args)
		if company == "" {
			if fault.CodeOf(err) != fault.MissingRequiredVariable {
				t.Fatalf("missing company: err = %v", err)
			}
			return
		}
		if len(company) > MaxValueLength || len(note) > MaxValueLength {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]string{"company": company, "note": note}
		if note == "" {
			values["note"] = "NOTE"
		}
		want := strings.TrimRightFunc("# F\n\nd\n\n**Version**: 1.0.0\n\n---\n\n"+reference(content, values), isSpace)
		if got != want {
			t.Fatalf("content %q company %q note %q:\ngot  %q\nwant %q", content, company, note, got, want)
		}
		// With no placeholders, the section comes out exactly as written.
		if len(templates.ExtractPlaceholders(content)) == 0 {
			if !strings.HasSuffix(got+"\x00", strings.TrimRightFunc(content, isSpace)+"\x00") {
				t.Fatalf("placeholder-free content changed: %q -> %q", content, got)
			}
		}
	})
}

func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }

// benchTemplate builds a template of about size bytes: sections of prose
// with a placeholder every ~200 bytes.
func benchTemplate(b *testing.B, size int) (*templates.Template, map[string]string) {
	b.Helper()
	vars := []any{}
	args := map[string]string{}
	for i := range 8 {
		name := fmt.Sprintf("var_%d", i)
		vars = append(vars, v(name, i%2 == 0))
		args[name] = fmt.Sprintf("값 %d for the benchmark", i)
	}
	para := "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore " +
		"et dolore magna aliqua. 브랜드 포지셔닝 전략을 수립합니다: {{ var_%d }}.\n"
	results := []any{}
	total := 0
	for s := 0; total < size; s++ {
		var sb strings.Builder
		for p := 0; p < 20 && total < size; p++ {
			n, _ := fmt.Fprintf(&sb, para, (s+p)%8)
			total += n
		}
		results = append(results, map[string]any{"name": fmt.Sprintf("S%d", s), "content": sb.String()})
	}
	data, err := json.Marshal(map[string]any{
		"metadata":  map[string]any{"name": "Bench", "description": "benchmark", "version": "1.0.0", "tags": []string{"a", "b"}},
		"variables": vars,
		"results":   results,
	})
	if err != nil {
		b.Fatal(err)
	}
	tp, _, err := templates.Parse(data, templates.ParseOptions{MaxFileSize: 2 * len(data)})
	if err != nil {
		b.Fatal(err, templates.Problems(err))
	}
	return tp, args
}

func benchRender(b *testing.B, size int) {
	tp, args := benchTemplate(b, size)
	out, _ := Prompt(tp, args)
	b.Run("Prompt", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Prompt(tp, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Prompt+escape", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		buf := make([]byte, 0, 2*len(out))
		for b.Loop() {
			text, err := Prompt(tp, args)
			if err != nil {
				b.Fatal(err)
			}
			buf = jsonstr.AppendEscaped(buf[:0], text)
		}
	})
}

func BenchmarkRender2KB(b *testing.B)   { benchRender(b, 2<<10) }
func BenchmarkRender100KB(b *testing.B) { benchRender(b, 100<<10) }

// TestPromptAllocations: Prompt sizes its string exactly and writes it
// once: rendering is on every prompts/get.
func TestPromptAllocations(t *testing.T) {
	tp := loadFile(t, "brand_positioning_strategy.json")
	args := map[string]string{"company_name": "테크스타트업", "industry": "AI", "target_audience": "B2B SaaS 기업"}
	if n := testing.AllocsPerRun(100, func() { _, _ = Prompt(tp, args) }); n != 1 {
		t.Errorf("Prompt: %v allocations, want 1", n)
	}
}

// TestResolveSizes: resolve's size is exactly what walk writes.
func TestResolveSizes(t *testing.T) {
	tests := []struct {
		name string
		tp   *templates.Template
		args map[string]string
	}{
		{name: "seed example", tp: loadFile(t, "brand_positioning_strategy.json"),
			args: map[string]string{"company_name": "테크스타트업", "industry": "AI", "target_audience": "B2B SaaS 기업"}},
		{name: "tags, sections, a default and an undefined placeholder",
			tp:   tpl(t, []string{"x", "yz"}, []map[string]any{v("a", true), v("b", false, "B")}, "{{a}} \"{{b}}\"\n", "{{ghost}}\t{{a}}"),
			args: map[string]string{"a": "A"}},
		{name: "an undefined placeholder given a value",
			tp:   tpl(t, []string{"one"}, nil, "{{ghost}}\n"),
			args: map[string]string{"ghost": "boo"}},
		{name: "no sections", tp: &templates.Template{Metadata: templates.Metadata{Name: "n", Description: "d", Version: "1"}}},
		{name: "values with characters JSON escapes",
			tp:   tpl(t, nil, []map[string]any{v("a", true)}, "say {{a}}"),
			args: map[string]string{"a": "\"quoted\"\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, size, pre, err := resolve(tt.tp, tt.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			var raw []byte
			walk(tt.tp, tt.args, values, pre, func(piece string) { raw = append(raw, piece...) })
			if size != len(raw) {
				t.Errorf("size %d, want %d", size, len(raw))
			}
		})
	}
}
