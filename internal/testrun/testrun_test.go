package testrun

import (
	"bytes"
	"context"
	"encoding/xml"
	"testing"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func parse(t *testing.T, data string) *templates.Template {
	t.Helper()
	tpl, _, err := templates.Parse([]byte(data), templates.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v %v", err, templates.Problems(err))
	}
	return tpl
}

const greet = `{"metadata":{"name":"Greet","description":"Greets","version":"1.0.0"},
"variables":[{"name":"who","type":"string","description":"d","required":true},
 {"name":"loud","type":"boolean","description":"d","default":false}],
"results":[{"name":"s","content":"Hello {{who}}, loud={{loud}}"}],
"tests":[
 {"name":"plain","arguments":{"who":"Ada"},"expect":{"contains":["Hello Ada"],"notContains":["Bob"]}},
 {"name":"typed","arguments":{"who":"Ada","loud":true},"expect":{"contains":["loud=true"]}},
 {"name":"equals","arguments":{"who":"Ada"},"expect":{"equals":"# Greet\n\nGreets\n\n**Version**: 1.0.0\n\n---\n\nHello Ada, loud=false"}},
 {"name":"wrong","arguments":{"who":"Bob"},"expect":{"contains":["Hello Ada","Hi"],"notContains":["Bob"],"equals":"# Greet"}},
 {"name":"missing"},
 {"name":"renders","arguments":{"who":"x"}}
]}`

func TestRun(t *testing.T) {
	got := Run(parse(t, greet))
	want := []Result{
		{Template: "Greet", Test: "plain", Status: Pass},
		{Template: "Greet", Test: "typed", Status: Pass},
		{Template: "Greet", Test: "equals", Status: Pass},
		{Template: "Greet", Test: "wrong", Status: Fail, Reason: `the text is not the one expected: line 2, "", is past the expected end` +
			`; the text does not contain "Hello Ada"; the text does not contain "Hi"; the text contains "Bob"`},
		{Template: "Greet", Test: "missing", Status: Fail,
			Reason: `does not render: MISSING_REQUIRED_VARIABLE: template "Greet" needs the required variable who: required variables have no default, and an empty value counts as missing`},
		{Template: "Greet", Test: "renders", Status: Pass},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if c := Count(got); c.String() != "4 passed, 2 failed" {
		t.Errorf("counts: %s", c)
	}
}

// A conversation's tests match the transcript: each message under a
// heading naming its role. Evaluators are reported as not run.
func TestRunConversationAndEvaluators(t *testing.T) {
	tpl := parse(t, `{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},
"variables":[{"name":"q","type":"string","description":"d"}],
"messages":[{"role":"user","content":"Q: {{q}}"},{"role":"assistant","content":"A."}],
"tests":[{"name":"t","arguments":{"q":"why"},"expect":{"equals":"## User\n\nQ: why\n\n## Assistant\n\nA."}}]}`)
	tpl.Evaluators = []string{"similarity"}
	got := Run(tpl)
	want := []Result{
		{Template: "Chat", Test: "t", Status: Pass},
		{Template: "Chat", Test: "similarity", Status: NotRun,
			Reason: "an evaluator judges a model's answer, which flowyprompt does not produce (gh models eval runs it)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if c := Count(got); c.String() != "1 passed, 0 failed, 1 not run" {
		t.Errorf("counts: %s", c)
	}
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Line())
	}
	if diff := cmp.Diff([]string{"PASS Chat/t", "NOT RUN Chat/similarity: " + want[1].Reason}, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	eq := func(s string) *string { return &s }
	tests := []struct {
		name string
		e    templates.Expectation
		text string
		want string
	}{
		{"nothing expected", templates.Expectation{}, "x", ""},
		{"equal", templates.Expectation{Equals: eq("a\nb")}, "a\nb", ""},
		{"a line differs", templates.Expectation{Equals: eq("a\nb\nc")}, "a\nB\nc", `the text is not the one expected: line 2 is "B", expected "b"`},
		{"shorter", templates.Expectation{Equals: eq("a\nb")}, "a", `the text is not the one expected: it ends at line 2, where "b" was expected`},
		{"an empty expectation of equality", templates.Expectation{Equals: eq("")}, "a", `the text is not the one expected: line 1 is "a", expected ""`},
		{"contains", templates.Expectation{Contains: []string{"b", "z"}}, "abc", `the text does not contain "z"`},
		{"not contains", templates.Expectation{NotContains: []string{"{{", "q"}}, "a {{x}}", `the text contains "{{"`},
	}
	for _, tt := range tests {
		if got := Check(tt.e, tt.text); got != tt.want {
			t.Errorf("%s: Check = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The JUnit file parses back with encoding/xml, its counts those of the
// results.
func TestWriteJUnit(t *testing.T) {
	rs := []Result{
		{Template: "A", Test: "one", Status: Pass},
		{Template: "A", Test: "two", Status: Fail, Reason: `the text contains "<b>" & more`},
		{Template: "B", Test: "ev", Status: NotRun, Reason: "judges a model's answer"},
		{Template: "bad/C.json", Status: Fail, Reason: "INVALID_TEMPLATE: template file is invalid"},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, rs); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if doc.Tests != 4 || doc.Failures != 2 || doc.Skipped != 1 || len(doc.Suites) != 3 {
		t.Fatalf("counts: %+v", doc)
	}
	a := doc.Suites[0]
	if a.Name != "A" || a.Tests != 2 || a.Failures != 1 || a.Cases[1].Failure == nil || a.Cases[1].Failure.Message != rs[1].Reason || a.Cases[0].Failure != nil {
		t.Errorf("suite A: %+v", a)
	}
	if b := doc.Suites[1]; b.Skipped != 1 || b.Cases[0].Skipped == nil {
		t.Errorf("suite B: %+v", b)
	}
	if c := doc.Suites[2]; c.Cases[0].Name != "(template file)" || c.Failures != 1 {
		t.Errorf("suite C: %+v", c)
	}
}

// The built-in examples' tests hold, so every change to an example is
// checked by its own tests.
func TestEmbeddedExamplesPass(t *testing.T) {
	c, err := templates.Embedded().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var results []Result
	for _, e := range c.Templates() {
		results = append(results, Run(e.Template)...)
	}
	// An evaluator (Summarize_Text.prompt.yml has two) judges a model's
	// answer: reported as not run, never as passed or failed.
	for _, r := range results {
		if r.Status == Fail {
			t.Errorf("%s", r.Line())
		}
	}
	if n := Count(results).NotRun; n != 2 {
		t.Errorf("%d not run, want Summarize_Text's 2 evaluators", n)
	}
	if n := Count(results).Passed; n < 6 {
		t.Errorf("%d examples' tests passed, want at least 6: were tests removed from the examples?", n)
	}
}
