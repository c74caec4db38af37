package templates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A typed variable's default, enum values and examples, and a test's
// arguments, may be written as JSON values of their type; the template
// holds them in the string form values travel in.
func TestParseTypedValuesAndTests(t *testing.T) {
	data := []byte(`{
  "metadata": {"name": "T", "description": "d", "version": "1.0.0"},
  "variables": [
    {"name": "strict", "type": "boolean", "description": "d", "default": false, "examples": [true]},
    {"name": "ratio", "type": "number", "description": "d", "default": 0.5, "enum": [0.5, "1e0"]},
    {"name": "count", "type": "integer", "description": "d", "default": "3"},
    {"name": "files", "type": "array", "description": "d", "default": ["a.go", "b <c>.go"], "examples": ["x.go\ny.go"]},
    {"name": "text", "type": "string", "description": "d"}
  ],
  "results": [{"name": "S", "content": "{{strict}} {{ratio}} {{count}} {{files}} {{text}}"}],
  "tests": [
    {"name": "typed", "arguments": {"strict": true, "ratio": 1, "count": 7, "files": ["z.go", 2], "text": "t"},
     "expect": {"contains": ["z.go"], "notContains": ["a.go"], "equals": "x"}},
    {"name": "renders"}
  ]
}`)
	tpl, warns, err := Parse(data, ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	str := func(s string) *string { return &s }
	wantVars := []Variable{
		{Name: "strict", Type: TypeBoolean, Description: "d", Default: str("false"), Examples: []string{"true"}},
		{Name: "ratio", Type: TypeNumber, Description: "d", Default: str("0.5"), Enum: []string{"0.5", "1e0"}},
		{Name: "count", Type: TypeInteger, Description: "d", Default: str("3")},
		{Name: "files", Type: TypeArray, Description: "d", Default: str(`["a.go","b <c>.go"]`), Examples: []string{"x.go\ny.go"}},
		{Name: "text", Type: TypeString, Description: "d"},
	}
	if diff := cmp.Diff(wantVars, tpl.Variables); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
	wantTests := []Test{
		{Name: "typed", Arguments: map[string]string{"strict": "true", "ratio": "1", "count": "7", "files": `["z.go",2]`, "text": "t"},
			Expect: Expectation{Contains: []string{"z.go"}, NotContains: []string{"a.go"}, Equals: str("x")}},
		{Name: "renders"},
	}
	if diff := cmp.Diff(wantTests, tpl.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
}

// Unknown keys of a test and of its expectation are warnings, as anywhere
// else in a template.
func TestParseTestUnknownFields(t *testing.T) {
	m := minimal()
	m["tests"] = []any{map[string]any{"name": "a", "expected": map[string]any{}, "expect": map[string]any{"contain": []any{"x"}}}}
	_, warns, err := Parse(mustJSON(t, m), ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.Pointer+" "+w.Message)
	}
	want := []string{
		`/tests/0/expected unknown field "expected" is ignored (did you mean "expect"?)`,
		`/tests/0/expect/contain unknown field "contain" is ignored (did you mean "contains"?)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestInEnum(t *testing.T) {
	tests := []struct {
		typ, val string
		enum     []string
		want     bool
	}{
		{TypeString, "a", []string{"a", "b"}, true},
		{TypeString, "A", []string{"a", "b"}, false},
		{TypeNumber, "1.0", []string{"1", "2"}, true},
		{TypeNumber, "3", []string{"1", "2"}, false},
		{TypeInteger, "1e1", []string{"10"}, true},
		{TypeBoolean, "TRUE", []string{"true"}, true},
		{TypeBoolean, "maybe", []string{"true"}, false},
	}
	for _, tt := range tests {
		if got := InEnum(tt.typ, tt.val, tt.enum); got != tt.want {
			t.Errorf("InEnum(%s, %q, %q) = %v, want %v", tt.typ, tt.val, tt.enum, got, tt.want)
		}
	}
}
