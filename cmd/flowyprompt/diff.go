package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// cmdDiff prints what changed in a template between two versions: the
// unified diff of its file, then that of its prompt rendered with its
// example values, as the diff tool shows them (through the same App.Diff)
// but never cut. FROM and TO are what the tool's from and to take; an
// empty one is the served version, and TO may be left out for it.
//
// Like diff(1), it prints nothing and exits 0 when the two are the same,
// exits 1 when they differ, and 2 on trouble, so that a script can test
// whether a template changed.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("diff", "diff NAME FROM [TO] [flags]", stderr)
	// The words before the first flag are NAME, FROM and TO (as render
	// takes its NAME); the flag package reads those after the flags.
	var words []string
	rest := args
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		words, rest = append(words, rest[0]), rest[1:]
	}
	s, err := load(ctx, fs, rest, stderr, lookup, sourceFlags, false)
	if err != nil {
		return trouble(err)
	}
	words = append(words, fs.Args()...)
	if len(words) < 2 || len(words) > 3 {
		return cmdUsageError("diff", "diff needs a template NAME, FROM and, unless it is the served version, TO; got %d words: "+
			"flowyprompt diff Code_Review 1.0.0 (FROM and TO: a label, a metadata.version, a tag, a commit SHA, or #N for a pull request)", len(words))
	}
	to := ""
	if len(words) == 3 {
		to = words[2]
	}
	d, err := newApp(s).Diff(ctx, words[0], words[1], to)
	if err != nil {
		return trouble(explain(err))
	}
	if !d.Changed() {
		return nil
	}
	fmt.Fprint(stdout, d.File, d.Rendered)
	return &exitError{code: 1}
}

// trouble is err with diff(1)'s exit status for trouble, 2: 1 says that
// the versions differ.
func trouble(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.code != 1 {
		return err
	}
	return &exitError{code: 2, err: err}
}
