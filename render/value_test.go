package render

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		typ, raw string
		want     any
		err      string // the error's What, when the value does not parse
	}{
		{typ: templates.TypeString, raw: " as written\n", want: " as written\n"},
		{typ: "", raw: "true", want: "true"},

		{typ: templates.TypeBoolean, raw: "true", want: true},
		{typ: templates.TypeBoolean, raw: "false", want: false},
		{typ: templates.TypeBoolean, raw: " TRUE\n", want: true},
		{typ: templates.TypeBoolean, raw: "False", want: false},
		{typ: templates.TypeBoolean, raw: "yes", err: "v is not a valid boolean: not true or false"},
		{typ: templates.TypeBoolean, raw: "1", err: "v is not a valid boolean: not true or false"},
		{typ: templates.TypeBoolean, raw: "true false", err: "v is not a valid boolean: not true or false"},

		{typ: templates.TypeNumber, raw: "0.5", want: 0.5},
		{typ: templates.TypeNumber, raw: " -3 ", want: -3.0},
		{typ: templates.TypeNumber, raw: "1e3", want: 1000.0},
		{typ: templates.TypeNumber, raw: "1E-2", want: 0.01},
		{typ: templates.TypeNumber, raw: "1.7976931348623157e308", want: math.MaxFloat64},
		{typ: templates.TypeNumber, raw: "1e999", err: "v is not a valid number: out of the range of a 64-bit floating-point number"},
		{typ: templates.TypeNumber, raw: ".5", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "+1", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "NaN", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "Inf", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "0x10", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "1_000", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "1 2", err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: `"1"`, err: "v is not a valid number: not a number"},
		{typ: templates.TypeNumber, raw: "1,5", err: "v is not a valid number: not a number"},

		{typ: templates.TypeInteger, raw: "3", want: int64(3)},
		{typ: templates.TypeInteger, raw: "-0", want: int64(0)},
		{typ: templates.TypeInteger, raw: "3.0", want: int64(3)},
		{typ: templates.TypeInteger, raw: "2e2", want: int64(200)},
		{typ: templates.TypeInteger, raw: "9223372036854775807", want: int64(math.MaxInt64)},
		{typ: templates.TypeInteger, raw: "-9223372036854775808", want: int64(math.MinInt64)},
		{typ: templates.TypeInteger, raw: "9223372036854775808", err: "v is not a valid integer: out of the range of a 64-bit integer"},
		{typ: templates.TypeInteger, raw: "1e30", err: "v is not a valid integer: out of the range of a 64-bit integer"},
		{typ: templates.TypeInteger, raw: "2.5", err: "v is not a valid integer: not a whole number"},
		{typ: templates.TypeInteger, raw: "three", err: "v is not a valid integer: not a number"},

		{typ: templates.TypeArray, raw: `["a", "b"]`, want: []string{"a", "b"}},
		{typ: templates.TypeArray, raw: " [\"a\",\n \"b\"] \n", want: []string{"a", "b"}},
		{typ: templates.TypeArray, raw: `[1, true, "x"]`, want: []string{"1", "true", "x"}},
		{typ: templates.TypeArray, raw: `[]`, want: []string{}},
		{typ: templates.TypeArray, raw: "a.go\n  b.go  \r\n\n c.go", want: []string{"a.go", "b.go", "c.go"}},
		{typ: templates.TypeArray, raw: "one", want: []string{"one"}},
		{typ: templates.TypeArray, raw: "\n \n", want: []string{}},
		{typ: templates.TypeArray, raw: "[WIP] login page\n[docs] readme", want: []string{"[WIP] login page", "[docs] readme"}},
		{typ: templates.TypeArray, raw: `["a", {{x}}]`, want: []string{`["a", {{x}}]`}},
		{typ: templates.TypeArray, raw: `["a", {"b": 1}]`, err: "v is not a valid array: item 1 of the JSON array is an object, not a string"},
		{typ: templates.TypeArray, raw: `[null]`, err: "v is not a valid array: item 0 of the JSON array is null, not a string"},
		{typ: templates.TypeArray, raw: `[["a"]]`, err: "v is not a valid array: item 0 of the JSON array is an array, not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.raw, func(t *testing.T) {
			v := &templates.Variable{Name: "v", Type: tt.typ}
			got, err := ParseValue(v, tt.raw)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("ParseValue(%q) = %v", tt.raw, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ParseValue(%q) (-want +got):\n%s", tt.raw, diff)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != fault.InvalidArgument {
				t.Fatalf("ParseValue(%q) = %v, %v; want INVALID_ARGUMENT", tt.raw, got, err)
			}
			if f.What != tt.err {
				t.Errorf("What = %q, want %q", f.What, tt.err)
			}
			form, example := templates.TypeForm(tt.typ)
			if f.Details["field"] != "v" || f.Details["expected"] != form || f.Details["example"] != example ||
				!strings.Contains(f.How, form) || !strings.Contains(f.How, example) {
				t.Errorf("the error does not name the variable, the form and an example: %+v", f)
			}
		})
	}
}

// The error a client reads, whole, for a value that is not a boolean.
func TestParseValueErrorText(t *testing.T) {
	_, err := ParseValue(&templates.Variable{Name: "strict", Type: templates.TypeBoolean}, "yes")
	f := fault.As(err)
	want := fault.Error{Code: fault.InvalidArgument,
		What:    "strict is not a valid boolean: not true or false",
		Why:     "strict is of type boolean: its value is true or false",
		How:     "pass true or false for strict, e.g. true",
		Details: map[string]any{"field": "strict", "type": "boolean", "expected": "true or false", "example": "true"}}
	if diff := cmp.Diff(&want, f); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

const typedTemplate = `{
  "metadata": {"name": "Typed", "description": "d", "version": "1.0.0"},
  "variables": [
    {"name": "strict", "type": "boolean", "description": "d", "default": false},
    {"name": "count", "type": "integer", "description": "d", "enum": [1, 2, 3]},
    {"name": "files", "type": "array", "description": "d", "default": ["a.go", "b.go"], "enum": ["a.go", "b.go", "c.go"]},
    {"name": "ratio", "type": "number", "description": "d", "required": true}
  ],
  "results": [{"name": "S", "content": "strict={{strict}} count={{count}} ratio={{ratio}}\nfiles:\n{{files}}"}]
}`

// Typed values render through Prompt: checked against their type and
// enum, substituted as written, a list one item a line.
func TestPromptTypedValues(t *testing.T) {
	tpl := parse(t, []byte(typedTemplate))
	tests := []struct {
		name string
		args map[string]string
		want string // the section's text
		err  string // the error's What
	}{
		{name: "defaults", args: map[string]string{"ratio": "0.5"},
			want: "strict=false count= ratio=0.5\nfiles:\na.go\nb.go"},
		{name: "given", args: map[string]string{"ratio": "1e1", "strict": "TRUE", "count": "2.0", "files": `["c.go"]`},
			want: "strict=TRUE count=2.0 ratio=1e1\nfiles:\nc.go"},
		{name: "a list given line by line", args: map[string]string{"ratio": "1", "files": "c.go\n a.go \n"},
			want: "strict=false count= ratio=1\nfiles:\nc.go\na.go"},
		{name: "a list item like a placeholder is a value, checked as one", args: map[string]string{"ratio": "1", "files": `["{{ratio}}"]`},
			err: `"{{ratio}}" is not an allowed value of files (template "Typed")`},
		{name: "not a number", args: map[string]string{"ratio": "half"},
			err: "ratio is not a valid number: not a number"},
		{name: "an integer outside the enum", args: map[string]string{"ratio": "1", "count": "4"},
			err: `"4" is not an allowed value of count (template "Typed")`},
		{name: "a list item outside the enum", args: map[string]string{"ratio": "1", "files": "a.go\nd.go"},
			err: `"d.go" is not an allowed value of files (template "Typed")`},
		{name: "missing first", args: map[string]string{"strict": "maybe"},
			err: `template "Typed" needs the required variable ratio`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Prompt(tpl, tt.args)
			if tt.err != "" {
				f := fault.As(err)
				if f == nil || f.What != tt.err {
					t.Fatalf("Prompt = %q, %v; want the error %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			_, section, _ := strings.Cut(got, "---\n\n")
			if section != tt.want {
				t.Errorf("section = %q, want %q", section, tt.want)
			}
		})
	}
}

// FuzzParseValue: ParseValue never panics, returns the Go type of its
// variable's type or an INVALID_ARGUMENT error, and what it returns
// round-trips: a list's items, written as a JSON array, parse back to
// themselves; a number or integer printed parses back to itself.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"true", " False ", "0.5", "-3", "1e999", "2.0", `["a","b"]`, "a\nb\n", "[x", `[{"a":1}]`, "", "\xff"} {
		for _, typ := range []string{templates.TypeString, templates.TypeBoolean, templates.TypeNumber, templates.TypeInteger, templates.TypeArray} {
			f.Add(typ, s)
		}
	}
	f.Fuzz(func(t *testing.T, typ, raw string) {
		v := &templates.Variable{Name: "v", Type: typ}
		got, err := ParseValue(v, raw)
		if err != nil {
			if fault.CodeOf(err) != fault.InvalidArgument {
				t.Fatalf("ParseValue(%s, %q): %v is not INVALID_ARGUMENT", typ, raw, err)
			}
			if typ != templates.TypeBoolean && typ != templates.TypeNumber && typ != templates.TypeInteger && typ != templates.TypeArray {
				t.Fatalf("a %q value failed: %v", typ, err)
			}
			return
		}
		switch x := got.(type) {
		case string:
			if x != raw {
				t.Fatalf("string %q came back %q", raw, x)
			}
		case bool:
			if typ != templates.TypeBoolean {
				t.Fatalf("%s gave a bool", typ)
			}
		case float64:
			back, err := ParseValue(v, formatFloat(x))
			if typ != templates.TypeNumber || err != nil || back != x {
				t.Fatalf("number %q = %v did not round-trip: %v, %v", raw, x, back, err)
			}
		case int64:
			if typ != templates.TypeInteger {
				t.Fatalf("%s gave an int64", typ)
			}
		case []string:
			if typ != templates.TypeArray {
				t.Fatalf("%s gave a list", typ)
			}
			if !utf8.ValidString(raw) {
				return // JSON replaces invalid bytes: nothing to compare
			}
			text, _ := templates.ValueText(toAny(x))
			back, err := ParseValue(v, text)
			if err != nil || !cmp.Equal(back, x) {
				t.Fatalf("list %q = %q written %s came back %q, %v", raw, x, text, back, err)
			}
		default:
			t.Fatalf("ParseValue returned %T", got)
		}
	})
}

func formatFloat(f float64) string {
	s, _ := templates.ValueText(f)
	return s
}

func toAny(items []string) []any {
	out := make([]any, len(items))
	for i, s := range items {
		out[i] = s
	}
	return out
}
