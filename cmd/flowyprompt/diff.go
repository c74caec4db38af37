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
	// NAME, FROM and TO may come before, between or after the flags, as
	// propose's files do.
	s, words, err := loadWords(ctx, fs, args, stderr, lookup, sourceFlags, false, func(words []string) error {
		if len(words) < 2 || len(words) > 3 {
			return cmdUsageError("diff", "diff needs a template NAME, FROM and, unless it is the served version, TO; got %d words (%s): "+
				"flowyprompt diff Code_Review 1.0.0 (FROM and TO: a label, a metadata.version, a tag, a commit SHA, or #N for a pull request)",
				len(words), quoteWords(words))
		}
		return nil
	})
	if err != nil {
		return trouble(err)
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

// quoteWords is words quoted, each cut to 40 characters and at most
// five of them, for an error that shows what it was given.
func quoteWords(words []string) string {
	var out []string
	for i, w := range words {
		if i == 5 {
			out = append(out, fmt.Sprintf("and %d more", len(words)-i))
			break
		}
		out = append(out, fmt.Sprintf("%.40q", w))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
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
