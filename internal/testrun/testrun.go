// Package testrun runs the tests templates carry (templates.Test): it
// renders each one as prompts/get renders the template, checks the text
// against the test's expectation, and writes the outcome as JUnit XML for
// CI. `flowyprompt test` and `flowyprompt validate` use it.
package testrun

import (
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Status is a test's outcome.
type Status string

// The outcomes. NotRun is an evaluator of a .prompt.yml file: it judges a
// model's answer, which flowyprompt never produces, so it is never passed.
const (
	Pass   Status = "pass"
	Fail   Status = "fail"
	NotRun Status = "not run"
)

// Result is one test's outcome.
type Result struct {
	Template string // the template's name (or, for a file that is not valid, its path)
	Test     string // the test's name; "" for a file that is not valid
	Status   Status
	Reason   string // why it failed or was not run
}

// Line is the result as `flowyprompt test` prints it: "PASS name/test",
// "FAIL name/test: why", "NOT RUN name/evaluator: why".
func (r Result) Line() string {
	name := r.Template
	if r.Test != "" {
		name += "/" + r.Test
	}
	switch r.Status {
	case Pass:
		return "PASS " + name
	case NotRun:
		return "NOT RUN " + name + ": " + r.Reason
	}
	return "FAIL " + name + ": " + r.Reason
}

// Text renders t with args as prompts/get does and returns the text a
// test's expectation is matched against: the prompt, or for a
// conversation its messages as render.Transcript writes them (each under
// a heading naming its role), as the render tool and `flowyprompt
// render` show them. Resources a template attaches are not part of it.
func Text(t *templates.Template, args map[string]string) (string, error) {
	if len(t.Messages) == 0 {
		return render.Prompt(t, args)
	}
	msgs, err := render.Conversation(t, args)
	if err != nil {
		return "", err
	}
	return render.Transcript(msgs), nil
}

// Run runs t's tests, in file order, then reports its evaluators as not
// run.
func Run(t *templates.Template) []Result {
	name := t.Metadata.Name
	out := make([]Result, 0, len(t.Tests)+len(t.Evaluators))
	for _, tt := range t.Tests {
		r := Result{Template: name, Test: tt.Name, Status: Pass}
		text, err := Text(t, tt.Arguments)
		if err != nil {
			r.Status, r.Reason = Fail, "does not render: "+fault.CodeOf(err)+": "+err.Error()
		} else if why := Check(tt.Expect, text); why != "" {
			r.Status, r.Reason = Fail, why
		}
		out = append(out, r)
	}
	for _, ev := range t.Evaluators {
		out = append(out, Result{Template: name, Test: ev, Status: NotRun,
			Reason: "an evaluator judges a model's answer, which flowyprompt does not produce (gh models eval runs it)"})
	}
	return out
}

// Check says why text does not meet e, or "" when it does: every
// expectation that fails, in the order equals, contains, notContains.
func Check(e templates.Expectation, text string) string {
	var why []string
	if e.Equals != nil && text != *e.Equals {
		why = append(why, "the text is not the one expected: "+firstDifference(text, *e.Equals))
	}
	for _, s := range e.Contains {
		if !strings.Contains(text, s) {
			why = append(why, fmt.Sprintf("the text does not contain %q", s))
		}
	}
	for _, s := range e.NotContains {
		if strings.Contains(text, s) {
			why = append(why, fmt.Sprintf("the text contains %q", s))
		}
	}
	return strings.Join(why, "; ")
}

// firstDifference locates where got leaves want: the line, and both
// lines as they are there.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		switch {
		case i >= len(g):
			return fmt.Sprintf("it ends at line %d, where %q was expected", i+1, cut(wl))
		case i >= len(w):
			return fmt.Sprintf("line %d, %q, is past the expected end", i+1, cut(gl))
		case gl != wl:
			return fmt.Sprintf("line %d is %q, expected %q", i+1, cut(gl), cut(wl))
		}
	}
	return "they differ" // unreachable: equal texts have no difference
}

// cut shortens a line for a message.
func cut(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// Counts are how many results had each status.
type Counts struct {
	Passed, Failed, NotRun int
}

// Count counts rs by status.
func Count(rs []Result) Counts {
	var c Counts
	for _, r := range rs {
		switch r.Status {
		case Pass:
			c.Passed++
		case Fail:
			c.Failed++
		case NotRun:
			c.NotRun++
		}
	}
	return c
}

// String is the summary line: "3 passed, 1 failed", with ", 2 not run"
// when evaluators were left.
func (c Counts) String() string {
	s := fmt.Sprintf("%d passed, %d failed", c.Passed, c.Failed)
	if c.NotRun > 0 {
		s += fmt.Sprintf(", %d not run", c.NotRun)
	}
	return s
}
