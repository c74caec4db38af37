// Command flowyprompt serves a team's prompt templates to MCP clients
// (Claude Desktop over stdio, IDEs and MCP Inspector over HTTP) and works
// with them from a terminal: list, render, validate, call a tool.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// exitError carries a process exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a command-line mistake: exit status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

const usage = `flowyprompt serves prompt templates to MCP clients.

Usage:
  flowyprompt serve     [flags]              run the MCP server (stdio by default)
  flowyprompt list      [flags]              list the templates
  flowyprompt render    NAME [--arg k=v ...]  render a template to stdout
  flowyprompt validate  PATH...              check template files or folders (exit 1 if any is invalid)
  flowyprompt call      TOOL ['{json}']       run one MCP tool and print its result
  flowyprompt check     [flags]              check the configuration and the template source
  flowyprompt version                        print the version

Templates come from --templates DIR (TEMPLATES_DIR), a GitHub repository
(GITHUB_REPO_URL), or the built-in examples. Run 'flowyprompt COMMAND -h'
for a command's flags; docs/configuration.md lists every setting.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ee == nil || ee.err != nil {
		fmt.Fprintf(os.Stderr, "flowyprompt: %v\n", err)
	}
	os.Exit(code)
}

type env func(string) (string, bool)

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookup env) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stdin, stdout, stderr, lookup)
	case "list":
		return cmdList(ctx, rest, stdout, stderr, lookup)
	case "render":
		return cmdRender(ctx, rest, stdout, stderr, lookup)
	case "validate":
		return cmdValidate(rest, stdout, stderr, lookup)
	case "call":
		return cmdCall(ctx, rest, stdout, stderr, lookup)
	case "check":
		return cmdCheck(ctx, rest, stdout, stderr, lookup)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "flowyprompt %s\n", version())
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError("unknown command %q", cmd)
}

// buildVersion is set by `make build` (-ldflags -X), for builds where the
// toolchain stamps no VCS information.
var buildVersion string

// version reports the module version stamped by `go install …@vX`, the
// version make stamped, or the VCS revision of a local build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	if buildVersion != "" {
		return buildVersion
	}
	if !ok {
		return "dev"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: flowyprompt %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; -h is a success, a bad flag a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: 0}
		}
		return &exitError{code: 2, err: nil}
	}
	return nil
}
