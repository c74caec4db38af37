// Package review is what a reviewer reads of a change to a template: the
// unified diff of its file and of the prompt it renders with its example
// values. The save tool's pull requests, the diff tool and `flowyprompt
// diff` all show changes through it, so they read the same.
package review

import (
	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Unified is the unified diff (three lines of context) that turns from
// into to, with fromName and toName in its header; "" when they are
// equal. The diff is the library's (a port of the Go tools' Myers diff).
func Unified(fromName, toName, from, to string) string {
	if from == to {
		return ""
	}
	return udiff.Unified(fromName, toName, from, to)
}

// Examples are the values a template is shown with: the arguments of its
// first test when it has tests, else each variable's default, else its
// first example. Variables with none of these are left out, so the
// template renders as a client that leaves them out would see it.
func Examples(t *templates.Template) map[string]string {
	if len(t.Tests) > 0 {
		out := make(map[string]string, len(t.Tests[0].Arguments))
		for k, v := range t.Tests[0].Arguments {
			out[k] = v
		}
		return out
	}
	out := map[string]string{}
	for _, v := range t.Variables {
		switch {
		case v.Default != nil:
			out[v.Name] = *v.Default
		case len(v.Examples) > 0:
			out[v.Name] = v.Examples[0]
		}
	}
	return out
}

// Rendered is t's prompt with its example values, as prompts/get renders
// it (a conversation as its transcript).
func Rendered(t *templates.Template) (string, error) {
	return testrun.Text(t, Examples(t))
}
