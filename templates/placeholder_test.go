package templates

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtractPlaceholders(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"plain", "회사명: {{company_name}}", []string{"company_name"}},
		{"whitespace trimmed", "{{ name }} and {{\tother\t}}", []string{"name", "other"}},
		{"newlines trimmed", "{{\n name \r\n}}", []string{"name"}},
		{"triple braces", "{{{name}}}", []string{"name"}},
		{"triple braces with spaces", "{{{ variable }}}", []string{"variable"}},
		{"empty braces", "{{}}", nil},
		{"only spaces", "{{   }}", nil},
		{"hyphen is not a name", "{{company-name}}", nil},
		{"dot is not a name", "{{a.b}}", nil},
		{"inner space is not a name", "{{a b}}", nil},
		{"unicode is not a name", "{{회사}}", nil},
		{"single braces", "{name}", nil},
		{"unclosed", "{{name", nil},
		{"half closed", "{{name}", nil},
		{"escaped braces unsupported", `\{\{name\}\}`, nil},
		{"unique in order of first use", "{{b}} {{a}} {{b}} {{ a }} {{c}}", []string{"b", "a", "c"}},
		{"digits and underscore", "{{_1}} {{A_b_9}}", []string{"_1", "A_b_9"}},
		{"adjacent", "{{a}}{{b}}", []string{"a", "b"}},
		{"failed run then valid", "{{ {{x}}", []string{"x"}},
		{"nested", "{{a{{b}}}}", []string{"b"}},
		{"json object", `{"a": {{x}}}`, []string{"x"}},
		{"no placeholders", "plain text { } }}{{", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExtractPlaceholders(tt.content)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ExtractPlaceholders(%q) mismatch (-want +got):\n%s", tt.content, diff)
			}
		})
	}
}

func TestCompileParts(t *testing.T) {
	vars := func(name string) int {
		switch name {
		case "a":
			return 0
		case "b":
			return 1
		}
		return -1
	}
	tests := []struct {
		name    string
		content string
		want    []Part
	}{
		{
			name:    "literal only",
			content: "hello",
			want:    []Part{{Text: "hello", Var: -1}},
		},
		{
			name:    "placeholder between literals",
			content: "x {{ a }} y",
			want:    []Part{{Text: "x ", Var: -1}, {Text: "{{ a }}", Name: "a", Var: 0}, {Text: " y", Var: -1}},
		},
		{
			name:    "triple braces replaced whole",
			content: "{{{b}}}",
			want:    []Part{{Text: "{{{b}}}", Name: "b", Var: 1}},
		},
		{
			name:    "extra opening braces stay literal",
			content: "{{{{a}}",
			want:    []Part{{Text: "{{", Var: -1}, {Text: "{{a}}", Name: "a", Var: 0}},
		},
		{
			name:    "extra closing brace of a JSON object stays literal",
			content: `{"k": {{a}}}`,
			want:    []Part{{Text: `{"k": `, Var: -1}, {Text: "{{a}}", Name: "a", Var: 0}, {Text: "}", Var: -1}},
		},
		{
			name:    "undefined placeholder",
			content: "{{zzz}}",
			want:    []Part{{Text: "{{zzz}}", Name: "zzz", Var: -1}},
		},
		{
			name:    "not placeholders stay literal",
			content: "{{}} {{company-name}}",
			want:    []Part{{Text: "{{}} {{company-name}}", Var: -1}},
		},
		{
			name:    "empty content",
			content: "",
			want:    nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compileParts(tt.content, vars)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("compileParts(%q) mismatch (-want +got):\n%s", tt.content, diff)
			}
		})
	}
}

// referenceRE is the grammar in regexp form: slow, but obviously right.
// Leftmost-first matching with greedy brace runs finds the same
// placeholders as the scanner.
var referenceRE = regexp.MustCompile(`\{\{+[ \t\r\n]*([a-zA-Z0-9_]+)[ \t\r\n]*\}\}+`)

func referenceExtract(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range referenceRE.FindAllStringSubmatch(s, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

func FuzzExtractPlaceholders(f *testing.F) {
	for _, s := range []string{
		"", "{{name}}", "{{ name }}", "{{{name}}}", "{{}}", "{{company-name}}",
		"{{a}}{{b}}", "{{ {{x}}", "{{a{{b}}}}", `{"a": {{x}}}`, "{{{{x}}", "{{x}}}}}",
		"회사명: {{company_name}}\n산업: {{industry}}", "{\n{{\n", "}}{{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ExtractPlaceholders(s)
		if diff := cmp.Diff(referenceExtract(s), got); diff != "" {
			t.Fatalf("scanner and reference disagree on %q (-ref +scanner):\n%s", s, diff)
		}
		parts := compileParts(s, func(string) int { return -1 })
		var b strings.Builder
		var names []string
		seen := map[string]bool{}
		for _, p := range parts {
			if p.Text == "" {
				t.Fatalf("empty part in %q: %#v", s, parts)
			}
			b.WriteString(p.Text)
			if p.IsPlaceholder() && !seen[p.Name] {
				seen[p.Name] = true
				names = append(names, p.Name)
			}
		}
		// Parts are lossless: together they are the content.
		if b.String() != s {
			t.Fatalf("parts of %q join to %q", s, b.String())
		}
		if diff := cmp.Diff(got, names); diff != "" {
			t.Fatalf("parts and ExtractPlaceholders disagree on %q:\n%s", s, diff)
		}
		// Content without placeholders compiles to itself, unchanged.
		if len(got) == 0 && len(parts) > 1 {
			t.Fatalf("%q has no placeholders but compiled to %d parts", s, len(parts))
		}
	})
}

func BenchmarkExtractPlaceholders(b *testing.B) {
	section := "## 회사 정보\n- 회사명: {{company_name}}\n- 산업 분야: {{ industry }}\n- 타겟 고객: {{{target_audience}}}\n" +
		"Some literal text with {braces} and {{not-a-placeholder}} that the scanner must skip.\n"
	content := strings.Repeat(section, 20) // ~4 KB
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if n := len(ExtractPlaceholders(content)); n != 3 {
			b.Fatalf("got %d names", n)
		}
	}
}

// Past nameSetLinear names the set switches to a map; order and
// uniqueness must not change.
func TestExtractPlaceholdersManyNames(t *testing.T) {
	var b strings.Builder
	var want []string
	for i := range 3 * nameSetLinear {
		name := "v" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)
		want = append(want, name)
		b.WriteString("{{" + name + "}} and again {{ " + want[i/2] + " }}\n")
	}
	got := ExtractPlaceholders(b.String())
	if diff := cmp.Diff(referenceExtract(b.String()), got); diff != "" {
		t.Fatalf("mismatch with reference (-ref +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
