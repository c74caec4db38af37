package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/templates"
)

// cmdTest renders every test of the library's templates, as prompts/get
// renders them, and prints one line per test and the counts; a failed
// test, or a file left out as invalid, makes it exit 1.
func cmdTest(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("test", "test [--junit FILE] [flags]", stderr)
	junit := fs.String("junit", "", "also write the results as JUnit XML to `FILE`, for CI")
	s, err := load(ctx, fs, args, stderr, lookup, sourceFlags, false)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdUsageError("test", "test takes no arguments, got %q: name the library with --templates DIR or --source", fs.Arg(0))
	}
	results := libraryTests(s.lib.Catalog())
	for _, r := range results {
		fmt.Fprintln(stdout, r.Line())
	}
	counts := testrun.Count(results)
	if len(results) == 0 {
		fmt.Fprintln(stdout, `no tests: give a template "tests" (docs/templates.md, "Tests")`)
	}
	fmt.Fprintln(stdout, counts)
	if *junit != "" {
		var buf bytes.Buffer
		if err := testrun.WriteJUnit(&buf, results); err != nil {
			return err
		}
		if err := os.WriteFile(*junit, buf.Bytes(), 0o644); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--junit %s: cannot write the report: %w; name a file in a folder that exists", *junit, err)}
		}
	}
	if counts.Failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// libraryTests runs the tests of every template of cat, and fails each
// file the library left out as invalid: its tests cannot run, and CI must
// not pass it.
func libraryTests(cat *templates.Catalog) []testrun.Result {
	var out []testrun.Result
	for _, inv := range cat.Invalid() {
		out = append(out, testrun.Result{Template: inv.Path, Status: testrun.Fail, Reason: invalidReason(inv.Err)})
	}
	for _, e := range cat.Templates() {
		out = append(out, testrun.Run(e.Template)...)
	}
	return out
}

// testProblems runs t's tests for validate: each failure is an error at
// the test's pointer.
func testProblems(t *templates.Template) []templates.Problem {
	var out []templates.Problem
	for i, r := range testrun.Run(t) {
		if r.Status == testrun.Fail && i < len(t.Tests) {
			out = append(out, templates.Problem{Pointer: fmt.Sprintf("/tests/%d", i), Message: fmt.Sprintf("test %q fails: %s", r.Test, r.Reason)})
		}
	}
	return out
}

// invalidReason says why a file is not valid: each problem at its
// pointer, or the error.
func invalidReason(err error) string {
	ps := templates.Problems(err)
	if len(ps) == 0 {
		return "not served: " + err.Error()
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "not a valid template: " + strings.Join(parts, "; ")
}
