package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/flowyprompt/flowyprompt/templates/export"
)

// exportFormat is --format: checked as the flags are read, so a mistyped
// format is refused before any template is loaded.
type exportFormat string

func (f *exportFormat) String() string { return string(*f) }
func (f *exportFormat) Set(s string) error {
	for _, known := range export.Formats {
		if s == known {
			*f = exportFormat(s)
			return nil
		}
	}
	return fmt.Errorf("unknown format %q: use one of %s", s, strings.Join(export.Formats, ", "))
}

// cmdExport writes the library in another format: dotprompt files,
// GitHub Models .prompt.yml files, or one Agent Skill folder per template.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("export", "export --format dotprompt|prompt-yml|skill --out DIR [flags]", stderr)
	var format exportFormat
	fs.Var(&format, "format", "the format to write: "+strings.Join(export.Formats, ", "))
	out := fs.String("out", "", "the folder to write into (created if missing; files of the same names are replaced)")
	s, err := load(ctx, fs, args, stderr, lookup, sourceFlags, true)
	if err != nil {
		return err
	}
	switch {
	case format == "":
		return cmdUsageError("export", "export needs --format: one of %s", strings.Join(export.Formats, ", "))
	case *out == "":
		return cmdUsageError("export", "export needs --out DIR, the folder to write the files into")
	case fs.NArg() > 0:
		return cmdUsageError("export", "export takes no arguments, got %q", fs.Arg(0))
	}
	cat := s.lib.Catalog()
	files, err := export.Library(cat, string(format))
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("cannot create %s: %w", *out, err)}
	}
	// The files are written through a root at the folder: a template
	// name never leads out of it, and neither does a link inside it.
	root, err := os.OpenRoot(*out)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("cannot open %s: %w", *out, err)}
	}
	defer root.Close()
	for _, f := range files {
		if dir := path.Dir(f.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("cannot create %s in %s: %w", dir, *out, err)}
			}
		}
		if err := root.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("cannot write %s in %s: %w", f.Path, *out, err)}
		}
	}
	fmt.Fprintf(stdout, "Wrote %d templates as %s to %s\n", cat.Len(), format, *out)
	if inv := cat.Invalid(); len(inv) > 0 {
		fmt.Fprintf(stdout, "%d invalid file(s) left out (flowyprompt validate lists their problems):\n", len(inv))
		for _, i := range inv {
			fmt.Fprintf(stdout, "  %s\n", i.Path)
		}
	}
	return nil
}
