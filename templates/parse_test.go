package templates

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// minimal returns the smallest valid template as generic JSON, for tests to
// break one field at a time.
func minimal() map[string]any {
	return map[string]any{
		"metadata":  map[string]any{"name": "T", "description": "d", "version": "1.0.0"},
		"variables": []any{},
		"results":   []any{map[string]any{"name": "S", "content": "c"}},
	}
}

func withVar(v map[string]any) func(map[string]any) {
	return func(m map[string]any) {
		m["variables"] = []any{v}
		m["results"] = []any{map[string]any{"name": "S", "content": "{{" + v["name"].(string) + "}}"}}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/Fixture_Template.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFixture(t *testing.T) {
	tpl, warnings, err := Parse(readFixture(t), ParseOptions{FileName: "testdata/Fixture_Template.json"})
	if err != nil {
		t.Fatalf("Parse: %v (problems %v)", err, Problems(err))
	}
	if len(warnings) != 0 {
		t.Errorf("unexpected warnings: %v", warnings)
	}
	neutral := "neutral"
	want := Template{
		Metadata: Metadata{
			Name:        "Fixture_Template",
			Description: "A test fixture that uses every field of the format.",
			Version:     "1.2.3-beta.1+build.5",
			Author:      "flowyprompt tests",
			Tags:        []string{"testing", "fixture"},
			Category:    "Testing",
			LastUpdated: "2025-01-06",
		},
		Variables: []Variable{
			{Name: "subject", Type: "string", Description: "What the prompt is about", Required: true, Examples: []string{"caching"}},
			{Name: "tone", Type: "string", Description: "Writing tone", Default: &neutral, Enum: []string{"neutral", "friendly", "formal"}},
			{Name: "notes", Type: "string", Description: "Extra notes"},
		},
		Results: []Result{
			{Name: "Closing", Content: "Notes: {{notes}}", Format: "text", Order: ptr(3)},
			{Name: "Intro", Content: "## Subject\nWrite about {{ subject }} in a {{{tone}}} tone.", Format: "markdown", Order: ptr(1)},
			{Name: "Shape", Content: `{"subject": "{{subject}}"}`, Format: "json", Order: ptr(2)},
		},
		Resources: []string{"template://Other_Template"},
		Format:    FormatJSON,
	}
	if diff := cmp.Diff(want, *tpl, cmpopts.IgnoreUnexported(Template{})); diff != "" {
		t.Errorf("template mismatch (-want +got):\n%s", diff)
	}

	var names []string
	for _, s := range tpl.Sections() {
		names = append(names, s.Name+"/"+s.Format)
	}
	if diff := cmp.Diff([]string{"Intro/markdown", "Shape/json", "Closing/text"}, names); diff != "" {
		t.Errorf("section order mismatch (-want +got):\n%s", diff)
	}
	wantParts := []Part{
		{Text: "## Subject\nWrite about ", Var: -1},
		{Text: "{{ subject }}", Name: "subject", Var: 0},
		{Text: " in a ", Var: -1},
		{Text: "{{{tone}}}", Name: "tone", Var: 1},
		{Text: " tone.", Var: -1},
	}
	if diff := cmp.Diff(wantParts, tpl.Sections()[0].Parts()); diff != "" {
		t.Errorf("parts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"subject", "tone", "notes"}, tpl.Placeholders()); diff != "" {
		t.Errorf("placeholders mismatch (-want +got):\n%s", diff)
	}
	if v, ok := tpl.Variable("tone"); !ok || v.Default == nil || *v.Default != "neutral" {
		t.Errorf("Variable(tone) = %+v, %v", v, ok)
	}
	if _, ok := tpl.Variable("nope"); ok {
		t.Error("Variable(nope) found")
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseSectionOrder(t *testing.T) {
	tests := []struct {
		name    string
		results []any
		want    []string
	}{
		{
			name:    "no orders keep file order",
			results: []any{res("a", nil), res("b", nil), res("c", nil)},
			want:    []string{"a", "b", "c"},
		},
		{
			name:    "orders sort",
			results: []any{res("a", 3), res("b", 1), res("c", 2)},
			want:    []string{"b", "c", "a"},
		},
		{
			name:    "ties keep file order",
			results: []any{res("a", 1), res("b", 0), res("c", 1)},
			want:    []string{"b", "a", "c"},
		},
		{
			name:    "missing order is the array index",
			results: []any{res("a", 5), res("b", nil), res("c", 0)},
			want:    []string{"c", "b", "a"},
		},
		{
			name:    "negative orders come first",
			results: []any{res("a", nil), res("b", -1)},
			want:    []string{"b", "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := minimal()
			m["results"] = tt.results
			tpl, _, err := Parse(mustJSON(t, m), ParseOptions{})
			if err != nil {
				t.Fatalf("Parse: %v %v", err, Problems(err))
			}
			var got []string
			for _, s := range tpl.Sections() {
				got = append(got, s.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func res(name string, order any) map[string]any {
	m := map[string]any{"name": name, "content": "content of " + name}
	if order != nil {
		m["order"] = order
	}
	return m
}

func TestParseValidVariants(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string]any)
	}{
		{"prerelease version", func(m map[string]any) { m["metadata"].(map[string]any)["version"] = "1.0.0-rc.1" }},
		{"build version", func(m map[string]any) { m["metadata"].(map[string]any)["version"] = "10.20.30+sha.abc" }},
		{"RFC 3339 lastUpdated", func(m map[string]any) { m["metadata"].(map[string]any)["lastUpdated"] = "2025-01-06T09:30:00+09:00" }},
		{"date lastUpdated", func(m map[string]any) { m["metadata"].(map[string]any)["lastUpdated"] = "2025-01-06" }},
		{"hyphen in name", func(m map[string]any) { m["metadata"].(map[string]any)["name"] = "my-template_2" }},
		{"empty tags", func(m map[string]any) { m["metadata"].(map[string]any)["tags"] = []any{} }},
		{"default in enum", withVar(map[string]any{"name": "x", "type": "string", "description": "d", "default": "a", "enum": []any{"a", "b"}})},
		{"default without enum", withVar(map[string]any{"name": "x", "type": "string", "description": "d", "default": ""})},
		{"order zero", func(m map[string]any) { m["results"] = []any{res("a", 0)} }},
		{"resources", func(m map[string]any) {
			m["resources"] = []any{"template://Style_Guide", "docs/guide.md", "./docs/../notes.txt", `docs\win.md`}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := minimal()
			tt.mutate(m)
			if _, _, err := Parse(mustJSON(t, m), ParseOptions{}); err != nil {
				t.Errorf("Parse: %v %v", err, Problems(err))
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	md := func(key string, val any) func(map[string]any) {
		return func(m map[string]any) {
			if val == nil {
				delete(m["metadata"].(map[string]any), key)
				return
			}
			m["metadata"].(map[string]any)[key] = val
		}
	}
	variable := func(key string, val any) func(map[string]any) {
		v := map[string]any{"name": "x", "type": "string", "description": "d"}
		if val == nil {
			delete(v, key)
		} else {
			v[key] = val
		}
		return func(m map[string]any) {
			m["variables"] = []any{v}
			m["results"] = []any{map[string]any{"name": "S", "content": "{{x}}"}}
		}
	}
	result := func(key string, val any) func(map[string]any) {
		r := map[string]any{"name": "S", "content": "c"}
		if val == nil {
			delete(r, key)
		} else {
			r[key] = val
		}
		return func(m map[string]any) { m["results"] = []any{r} }
	}
	tests := []struct {
		name   string
		mutate func(map[string]any)
		raw    string // used instead of minimal()+mutate when set
		want   []Problem
	}{
		{
			name: "resources a reader would refuse",
			mutate: func(m map[string]any) {
				m["resources"] = []any{"template://", "template://a/b", "https://example.com/x", "/etc/passwd", "../up.md",
					"docs/../../up.md", ".env", "docs/.git/config", "ok.md", "docs/..", `..\up.md`}
			},
			want: []Problem{
				{"/resources/0", `"template://" names no template: write template://NAME`},
				{"/resources/1", `"template://a/b" names no template: write template://NAME`},
				{"/resources/2", `"https://example.com/x": resources are template://NAME or a path in the same folder or repository`},
				{"/resources/3", `path "/etc/passwd" leads out of the template source: use a path relative to it`},
				{"/resources/4", `path "../up.md" leads out of the template source: use a path relative to it`},
				{"/resources/5", `path "docs/../../up.md" leads out of the template source: use a path relative to it`},
				{"/resources/6", `path ".env" names a hidden file or folder, which is never served`},
				{"/resources/7", `path "docs/.git/config" names a hidden file or folder, which is never served`},
				{"/resources/9", `path "docs/.." names no file: use a path relative to the template source`},
				{"/resources/10", `path "..\\up.md" leads out of the template source: use a path relative to it`},
			},
		},
		{
			name:   "name missing",
			mutate: md("name", nil),
			want:   []Problem{{"/metadata/name", `required field "name" is missing`}},
		},
		{
			name:   "name with space",
			mutate: md("name", "bad name"),
			want:   []Problem{{"/metadata/name", `"bad name" is not a valid template name: use only letters, digits, '_' and '-'`}},
		},
		{
			name:   "path traversal name",
			mutate: md("name", "../secrets"),
			want:   []Problem{{"/metadata/name", `"../secrets" is not a valid template name: use only letters, digits, '_' and '-'`}},
		},
		{
			name:   "name too long",
			mutate: md("name", strings.Repeat("a", 129)),
			want:   []Problem{{"/metadata/name", "is longer than 128 characters"}},
		},
		{
			name:   "version not semver",
			mutate: md("version", "1.0"),
			want:   []Problem{{"/metadata/version", `"1.0" is not a semantic version like 1.0.0`}},
		},
		{
			name:   "version with v prefix",
			mutate: md("version", "v1.0.0"),
			want:   []Problem{{"/metadata/version", `"v1.0.0" is not a semantic version like 1.0.0`}},
		},
		{
			name:   "version missing",
			mutate: md("version", nil),
			want:   []Problem{{"/metadata/version", `required field "version" is missing`}},
		},
		{
			name:   "version a number",
			mutate: md("version", 1),
			want:   []Problem{{"/metadata/version", "must be a string, not integer"}},
		},
		{
			name:   "description empty",
			mutate: md("description", ""),
			want:   []Problem{{"/metadata/description", "must not be empty"}},
		},
		{
			name:   "description blank",
			mutate: md("description", " \n\t"),
			want:   []Problem{{"/metadata/description", "must not be empty"}},
		},
		{
			name:   "tags not strings",
			mutate: md("tags", []any{"ok", 3}),
			want:   []Problem{{"/metadata/tags/1", "must be a string, not integer"}},
		},
		{
			name:   "lastUpdated not ISO 8601",
			mutate: md("lastUpdated", "06/01/2025"),
			want:   []Problem{{"/metadata/lastUpdated", `"06/01/2025" is not an ISO 8601 date or time like 2025-01-06 or 2025-01-06T00:00:00Z`}},
		},
		{
			name:   "metadata null",
			mutate: func(m map[string]any) { m["metadata"] = nil },
			want:   []Problem{{"/metadata", "must be an object, not null"}},
		},
		{
			name:   "variables missing",
			mutate: func(m map[string]any) { delete(m, "variables") },
			want:   []Problem{{"/variables", `required field "variables" is missing`}},
		},
		{
			name:   "variables an object",
			mutate: func(m map[string]any) { m["variables"] = map[string]any{} },
			want:   []Problem{{"/variables", "must be an array, not object"}},
		},
		{
			name:   "variable name with hyphen",
			mutate: variable("name", "company-name"),
			want:   []Problem{{"/variables/0/name", `"company-name" is not a valid variable name: use only letters, digits and '_', e.g. "company_name", and write its placeholder as {{company_name}} (a placeholder written {{company-name}} is not one: it stays as written)`}},
		},
		{
			name:   "variable type int",
			mutate: variable("type", "int"),
			want:   []Problem{{"/variables/0/type", `must be one of "string", "boolean", "number", "integer", "array"`}},
		},
		{
			name:   "variable type missing",
			mutate: variable("type", nil),
			want:   []Problem{{"/variables/0/type", `required field "type" is missing`}},
		},
		{
			name:   "variable description empty",
			mutate: variable("description", ""),
			want:   []Problem{{"/variables/0/description", "must not be empty"}},
		},
		{
			name:   "variable required a string",
			mutate: variable("required", "yes"),
			want:   []Problem{{"/variables/0/required", "must be a boolean, not string"}},
		},
		{
			name:   "variable default a number",
			mutate: variable("default", 5),
			want:   []Problem{{"/variables/0/default", "must be a string, not integer"}},
		},
		{
			name: "variable default not in enum",
			mutate: withVar(map[string]any{"name": "x", "type": "string", "description": "d",
				"default": "c", "enum": []any{"a", "b"}}),
			want: []Problem{{"/variables/0/default", `default "c" is not one of the variable's enum values`}},
		},
		{
			name: "duplicate variable names",
			mutate: func(m map[string]any) {
				v := map[string]any{"name": "x", "type": "string", "description": "d"}
				m["variables"] = []any{v, map[string]any{"name": "y", "type": "string", "description": "d"}, v}
				m["results"] = []any{map[string]any{"name": "S", "content": "{{x}}{{y}}"}}
			},
			want: []Problem{{"/variables/2/name", `duplicate variable name "x" (first defined at /variables/0)`}},
		},
		{
			name:   "results empty",
			mutate: func(m map[string]any) { m["results"] = []any{} },
			want:   []Problem{{"/results", "needs at least 1 item(s)"}},
		},
		{
			name:   "results missing",
			mutate: func(m map[string]any) { delete(m, "results") },
			want: []Problem{{"/results", `required field "results" is missing: give "results" (the sections of the prompt), ` +
				`"messages" (the turns of a conversation) or both`}},
		},
		{
			name:   "result content empty",
			mutate: result("content", ""),
			want:   []Problem{{"/results/0/content", "must not be empty"}},
		},
		{
			name:   "result name missing",
			mutate: result("name", nil),
			want:   []Problem{{"/results/0/name", `required field "name" is missing`}},
		},
		{
			name:   "result format unknown",
			mutate: result("format", "html"),
			want:   []Problem{{"/results/0/format", `must be one of "text", "markdown", "json"`}},
		},
		{
			name:   "result order fractional",
			mutate: result("order", 1.5),
			want:   []Problem{{"/results/0/order", "must be an integer, not number"}},
		},
		{
			name:   "result order too large",
			mutate: result("order", 1e12),
			want:   []Problem{{"/results/0/order", "must be between -1000000000 and 1000000000"}},
		},
		{
			name: "result order written as 1.0",
			raw:  `{"metadata":{"name":"T","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"c","order":1.0}]}`,
			want: []Problem{{"/results/0/order", "1.0 must be written as a plain integer"}},
		},
		{
			name:   "resources not strings",
			mutate: func(m map[string]any) { m["resources"] = []any{true} },
			want:   []Problem{{"/resources/0", "must be a string, not boolean"}},
		},
		{
			name: "top level array",
			raw:  `[]`,
			want: []Problem{{"", "must be an object, not array"}},
		},
		{
			name: "every problem is reported, sorted by pointer",
			mutate: func(m map[string]any) {
				m["metadata"] = map[string]any{"name": "a b", "description": "", "lastUpdated": "yesterday"}
				vars := []any{}
				for range 11 {
					vars = append(vars, map[string]any{"name": "v", "type": "string", "description": "d"})
				}
				vars[2] = map[string]any{"name": "bad-name", "type": "int", "description": "d"}
				m["variables"] = vars
				m["results"] = []any{map[string]any{"name": "", "content": "c", "format": "yaml"}}
			},
			want: []Problem{
				{"/metadata/description", "must not be empty"},
				{"/metadata/lastUpdated", `"yesterday" is not an ISO 8601 date or time like 2025-01-06 or 2025-01-06T00:00:00Z`},
				{"/metadata/name", `"a b" is not a valid template name: use only letters, digits, '_' and '-'`},
				{"/metadata/version", `required field "version" is missing`},
				{"/variables/1/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/2/name", `"bad-name" is not a valid variable name: use only letters, digits and '_', e.g. "bad_name", and write its placeholder as {{bad_name}} (a placeholder written {{bad-name}} is not one: it stays as written)`},
				{"/variables/2/type", `must be one of "string", "boolean", "number", "integer", "array"`},
				{"/variables/3/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/4/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/5/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/6/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/7/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/8/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/9/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/variables/10/name", `duplicate variable name "v" (first defined at /variables/0)`},
				{"/results/0/format", `must be one of "text", "markdown", "json"`},
				{"/results/0/name", "must not be empty"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.raw == "" {
				m := minimal()
				tt.mutate(m)
				data = mustJSON(t, m)
			}
			tpl, _, err := Parse(data, ParseOptions{FileName: "T.json"})
			if err == nil {
				t.Fatalf("Parse accepted %s", data)
			}
			if tpl != nil {
				t.Errorf("Parse returned a template with an error")
			}
			if code := fault.CodeOf(err); code != fault.InvalidTemplate {
				t.Errorf("code = %s, want %s", code, fault.InvalidTemplate)
			}
			if diff := cmp.Diff(tt.want, Problems(err)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			f := fault.As(err)
			if f.Details["file"] != "T.json" || !strings.HasPrefix(f.What, "template file T.json ") || f.How == "" {
				t.Errorf("error does not name the file or a fix: %+v", f)
			}
			if !strings.Contains(f.Why, tt.want[0].Message) {
				t.Errorf("Why %q does not give the first problem %q", f.Why, tt.want[0].Message)
			}
		})
	}
}

func TestParseMalformedJSON(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"missing value", `{"metadata": }`, "malformed JSON at line 1, column 14: invalid character '}' looking for beginning of value"},
		{"second line", "{\n  \"a\": ,\n}", "malformed JSON at line 2, column 8: invalid character ',' looking for beginning of value"},
		{"column counts characters", "{\"설명\": x}", "malformed JSON at line 1, column 8: invalid character 'x' looking for beginning of value"},
		{"truncated", "{\n\"metadata\": {", "malformed JSON at line 2, column 14: unexpected end of file"},
		{"empty", "", "empty file: a template is a JSON object"},
		{"whitespace only", " \n", "empty file: a template is a JSON object"},
		{"trailing object", "{}\n{}", "malformed JSON at line 2, column 1: unexpected { after the end of the template object"},
		{"trailing garbage", "{} x", "malformed JSON at line 1, column 4: data after the end of the template object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tt.data), ParseOptions{FileName: "x.json"})
			if fault.CodeOf(err) != fault.InvalidTemplate {
				t.Fatalf("err = %v, want INVALID_TEMPLATE", err)
			}
			want := []Problem{{Message: tt.want}}
			if diff := cmp.Diff(want, Problems(err)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		max     int
		file    string
		wantErr bool
	}{
		{"at the limit", 100, 100, "a.json", false},
		{"one byte over", 101, 100, "a.json", true},
		{"default limit", DefaultMaxFileSize + 1, 0, "big.json", true},
		{"no file name", 200, 100, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Not JSON at all: the size must be checked before decoding.
			data := []byte(strings.Repeat("x", tt.size))
			_, _, err := Parse(data, ParseOptions{MaxFileSize: tt.max, FileName: tt.file})
			if !tt.wantErr {
				if fault.CodeOf(err) != fault.InvalidTemplate {
					t.Fatalf("err = %v, want a JSON error, not a size error", err)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != fault.TemplateTooLarge {
				t.Fatalf("err = %v, want TEMPLATE_TOO_LARGE", err)
			}
			limit := tt.max
			if limit == 0 {
				limit = DefaultMaxFileSize
			}
			wantDetails := map[string]any{"actualSize": int64(tt.size), "maxSize": int64(limit), "file": tt.file}
			if diff := cmp.Diff(wantDetails, f.Details); diff != "" {
				t.Errorf("details mismatch (-want +got):\n%s", diff)
			}
			for _, s := range []string{tt.file, strconv.Itoa(tt.size), strconv.Itoa(limit)} {
				if !strings.Contains(f.What, s) {
					t.Errorf("What %q does not mention %q", f.What, s)
				}
			}
			if !strings.Contains(f.How, "split the template") || !strings.Contains(f.How, "resource file") || !strings.Contains(f.How, "MAX_FILE_SIZE") {
				t.Errorf("How = %q", f.How)
			}
		})
	}
}

func TestParseWarnings(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		file   string
		want   []Warning
		errors bool
	}{
		{
			name: "unused and undefined variables",
			raw: `{"metadata":{"name":"T","description":"d","version":"1.0.0"},
				"variables":[{"name":"used","type":"string","description":"d"},{"name":"spare","type":"string","description":"d"}],
				"results":[{"name":"S","content":"{{used}} {{ghost}} {{ghost}}"}]}`,
			file: "T.json",
			want: []Warning{
				{Template: "T", Variable: "ghost", Kind: WarnUndefinedVariable, Pointer: "/results/0/content",
					Message: `placeholder {{ghost}} has no entry in variables: it stays as written unless an argument named "ghost" is given`},
				{Template: "T", Variable: "spare", Kind: WarnUnusedVariable, Pointer: "/variables/1/name",
					Message: `variable "spare" is defined but no section uses {{spare}}`},
			},
		},
		{
			name: "file name mismatch",
			raw:  `{"metadata":{"name":"Real_Name","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"c"}]}`,
			file: "templates/other.json",
			want: []Warning{{Template: "Real_Name", Kind: WarnNameMismatch, Pointer: "/metadata/name",
				Message: `file "other.json" holds template "Real_Name": clients see the name "Real_Name"; rename the file to Real_Name.json`}},
		},
		{
			name: "unknown fields with suggestions",
			raw: `{"metadata":{"name":"T","description":"d","version":"1.0.0","licence":"MIT","tag":["x"]},"extra":1,
				"variables":[{"name":"x","type":"string","description":"d","requried":true}],
				"results":[{"name":"S","content":"{{x}}","Order":1}]}`,
			file: "T.json",
			want: []Warning{
				{Template: "T", Kind: WarnUnknownField, Pointer: "/extra", Message: `unknown field "extra" is ignored`},
				{Template: "T", Kind: WarnUnknownField, Pointer: "/metadata/licence", Message: `unknown field "licence" is ignored`},
				{Template: "T", Kind: WarnUnknownField, Pointer: "/metadata/tag", Message: `unknown field "tag" is ignored (did you mean "tags"?)`},
				{Template: "T", Kind: WarnUnknownField, Pointer: "/variables/0/requried", Message: `unknown field "requried" is ignored (did you mean "required"?)`},
				{Template: "T", Kind: WarnUnknownField, Pointer: "/results/0/Order", Message: `unknown field "Order" is ignored (did you mean "order"?)`},
			},
		},
		{
			name: "pointer escaping",
			raw:  `{"metadata":{"name":"T","description":"d","version":"1.0.0"},"a/b~c":1,"variables":[],"results":[{"name":"S","content":"c"}]}`,
			want: []Warning{{Template: "T", Kind: WarnUnknownField, Pointer: "/a~1b~0c", Message: `unknown field "a/b~c" is ignored`}},
		},
		{
			name: "placeholder and name warnings come with errors",
			raw: `{"metadata":{"name":"Real","description":"d","version":"1"},"variables":[{"name":"spare","type":"string","description":"d"}],` +
				`"results":[{"name":"S","content":"c"},{"name":"S2","content":"{{ghost}}"}]}`,
			file: "Other.json",
			want: []Warning{
				{Template: "Real", Variable: "ghost", Kind: WarnUndefinedVariable, Pointer: "/results/1/content",
					Message: `placeholder {{ghost}} has no entry in variables: it stays as written unless an argument named "ghost" is given`},
				{Template: "Real", Variable: "spare", Kind: WarnUnusedVariable, Pointer: "/variables/0/name",
					Message: `variable "spare" is defined but no section uses {{spare}}`},
				{Template: "Real", Kind: WarnNameMismatch, Pointer: "/metadata/name",
					Message: `file "Other.json" holds template "Real": clients see the name "Real"; rename the file to Real.json`},
			},
			errors: true,
		},
		{
			name: "warnings come with errors",
			raw:  `{"metadata":{"nmae":"T","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"c"}]}`,
			file: "dir/T.json",
			want: []Warning{{Template: "T", Kind: WarnUnknownField, Pointer: "/metadata/nmae",
				Message: `unknown field "nmae" is ignored (did you mean "name"?)`}},
			errors: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := Parse([]byte(tt.raw), ParseOptions{FileName: tt.file})
			if (err != nil) != tt.errors {
				t.Fatalf("err = %v, want error %v", err, tt.errors)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// encoding/json matches keys case-insensitively; Parse must not, or a
// second "NAME" key would slip past the validated "name".
func TestParseCaseVariantKeysCannotOverride(t *testing.T) {
	raw := `{"metadata":{"name":"Safe","NAME":"../etc","description":"d","version":"1.0.0"},"variables":[],
		"results":[{"name":"S","content":"c","CONTENT":"{{x}}"}]}`
	tpl, warnings, err := Parse([]byte(raw), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Metadata.Name != "Safe" || tpl.Results[0].Content != "c" {
		t.Errorf("case-variant keys overrode validated ones: %+v", tpl)
	}
	if len(warnings) != 2 {
		t.Errorf("want 2 unknown-field warnings, got %v", warnings)
	}
}

func TestSchemaIsDraft07AndEmbedded(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if s["$schema"] != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	// Schema hands out a copy: callers cannot corrupt the compiled one's source.
	Schema()[0] = 'x'
	if Schema()[0] != '{' {
		t.Error("Schema returned shared bytes")
	}
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func FuzzParse(f *testing.F) {
	f.Add(readFixture(f))
	f.Add(mustJSON(f, minimal()))
	f.Add([]byte(`{"metadata":{"name":"a b"},"variables":{},"results":[]}`))
	f.Add([]byte(`{"metadata":`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"metadata":{"name":"T","NAME":"x","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"S","content":"{{{x}}}","order":1.0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, _, err := Parse(data, ParseOptions{MaxFileSize: 4096, FileName: "f.json"})
		if err != nil {
			if tpl != nil {
				t.Fatal("template returned with an error")
			}
			code := fault.CodeOf(err)
			if code != fault.InvalidTemplate && code != fault.TemplateTooLarge {
				t.Fatalf("unexpected code %s: %v", code, err)
			}
			if code == fault.InvalidTemplate && len(Problems(err)) == 0 {
				t.Fatalf("INVALID_TEMPLATE without problems: %v", err)
			}
			return
		}
		if !validName.MatchString(tpl.Metadata.Name) {
			t.Fatalf("accepted name %q", tpl.Metadata.Name)
		}
		if len(tpl.Sections()) != len(tpl.Results) || len(tpl.Results) == 0 {
			t.Fatalf("%d sections for %d results", len(tpl.Sections()), len(tpl.Results))
		}
		for _, s := range tpl.Sections() {
			var b strings.Builder
			for _, p := range s.Parts() {
				b.WriteString(p.Text)
				if p.Var >= 0 && tpl.Variables[p.Var].Name != p.Name {
					t.Fatalf("part %q points at variable %q", p.Name, tpl.Variables[p.Var].Name)
				}
			}
			if b.String() != s.Content {
				t.Fatalf("parts of %q join to %q", s.Content, b.String())
			}
		}
	})
}

// Past nameSetLinear variables, lookups switch to a map: indexes and
// warnings must come out the same.
func TestParseManyVariables(t *testing.T) {
	m := minimal()
	var vars []any
	var content strings.Builder
	for i := range 40 {
		name := "v" + strconv.Itoa(i)
		vars = append(vars, map[string]any{"name": name, "type": "string", "description": "d"})
		if i < 39 {
			content.WriteString("{{" + name + "}} ")
		}
	}
	content.WriteString("{{ghost}}")
	m["variables"] = vars
	m["results"] = []any{map[string]any{"name": "S", "content": content.String()}}
	tpl, warnings, err := Parse(mustJSON(t, m), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tpl.Sections()[0].Parts() {
		if !p.IsPlaceholder() {
			continue
		}
		want := -1
		if p.Name != "ghost" {
			want, _ = strconv.Atoi(strings.TrimPrefix(p.Name, "v"))
		}
		if p.Var != want {
			t.Errorf("%s: Var = %d, want %d", p.Name, p.Var, want)
		}
	}
	var kinds []string
	for _, w := range warnings {
		kinds = append(kinds, w.Kind+":"+w.Variable)
	}
	if diff := cmp.Diff([]string{"undefined-variable:ghost", "unused-variable:v39"}, kinds); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

// Sources build catalogs concurrently (a refresh while the watcher
// rebuilds): the shared compiled schema must allow that.
func TestParseConcurrent(t *testing.T) {
	good, bad := readFixture(t), mustJSON(t, map[string]any{"metadata": map[string]any{"name": "a b"}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				if _, _, err := Parse(good, ParseOptions{}); err != nil {
					t.Errorf("goroutine %d: %v", i, err)
				}
				if len(Problems(func() error { _, _, err := Parse(bad, ParseOptions{}); return err }())) != 5 {
					t.Errorf("goroutine %d: wrong problems", i)
				}
			}
		})
	}
	wg.Wait()
}
