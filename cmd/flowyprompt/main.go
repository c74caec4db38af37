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
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/edition"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
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

// cmdUsageError is a mistake on command cmd's line: one line saying what
// is wrong, and where the usage is (usage itself is for -h).
func cmdUsageError(cmd, format string, args ...any) error {
	return usageError("%s (see flowyprompt %s -h)", fmt.Sprintf(format, args...), cmd)
}

const usage = `flowyprompt serves prompt templates to MCP clients.

Usage:
  flowyprompt serve     [flags]              run the MCP server (stdio by default)
  flowyprompt list      [flags]              list the templates
  flowyprompt render    NAME [--arg k=v ...]  render a template to stdout
  flowyprompt diff      NAME FROM [TO]       what changed in a template between versions (exit 1 if it did)
  flowyprompt validate  PATH...              check template files or folders (exit 1 if any is invalid)
  flowyprompt test      [flags]              run the templates' tests (exit 1 if any fails)
  flowyprompt call      TOOL ['{json}']       run one MCP tool and print its result
  flowyprompt check     [flags]              check the configuration and the template source
  flowyprompt export    --format F --out DIR  write the library as dotprompt, .prompt.yml or Agent Skills
  flowyprompt propose   FILE... [--source NS] propose templates to GitHub as a pull request
  flowyprompt preview   [flags]              a local page: the templates, their problems, a form, the rendered prompt, live
  flowyprompt version                        print the version

Templates come from --templates DIR (TEMPLATES_DIR), a GitHub repository
(GITHUB_REPO_URL), or the built-in examples. Run 'flowyprompt COMMAND -h'
for a command's flags; docs/configuration.md lists every setting.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// A server must outlive whoever reads its log. Go ends a program
		// whose write to a broken pipe is on fd 1 or 2 (os/signal,
		// "SIGPIPE"), and a client that launched serve over stdio may close
		// stderr long before stdin: the next log line would kill the
		// session mid-conversation. With SIGPIPE ignored the write fails
		// with EPIPE instead: slog drops the line, and a closed stdout
		// fails the session's next write, which ends the session as a
		// client hanging up does, so nothing spins on a dead pipe. Only
		// serve: the one-shot commands keep the Unix habit of ending
		// quietly when their reader (head, say) stops reading.
		signal.Ignore(syscall.SIGPIPE)
	}
	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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

// notifyContext is signal.NotifyContext, except that it lets go of the
// signals as soon as the first one arrives. That one starts a graceful
// stop, which can take a while (serve lets requests in flight finish, up to
// ~20 s); a second Ctrl-C or SIGTERM then takes the default action and
// ends the process at once, for whoever will not wait. The signals are
// released before ctx is cancelled, so anything that reacts to ctx (the
// "shutting down" log) happens when a second signal already works.
func notifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		var cause error
		select {
		case sig := <-ch:
			cause = fmt.Errorf("%v signal received", sig)
		case <-ctx.Done():
		}
		signal.Stop(ch)
		cancel(cause)
	}()
	return ctx, func() { cancel(nil) }
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
	case "diff":
		return cmdDiff(ctx, rest, stdout, stderr, lookup)
	case "validate":
		return cmdValidate(ctx, rest, stdout, stderr, lookup)
	case "test":
		return cmdTest(ctx, rest, stdout, stderr, lookup)
	case "call":
		return cmdCall(ctx, rest, stdout, stderr, lookup)
	case "check":
		return cmdCheck(ctx, rest, stdout, stderr, lookup)
	case "export":
		return cmdExport(ctx, rest, stdout, stderr, lookup)
	case "propose":
		return cmdPropose(ctx, rest, stdout, stderr, lookup)
	case "preview":
		return cmdPreview(ctx, rest, stdout, stderr, lookup)
	case "version":
		return cmdVersion(rest, stdout, stderr)
	case "--version", "-version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	hint := ""
	// Sorted, so that a tie is broken the same way every run.
	if c := suggest.Close(cmd, slices.Sorted(maps.Keys(commandHelp)), 1); len(c) > 0 {
		hint = fmt.Sprintf("; did you mean flowyprompt %s?", c[0])
	} else if strings.HasPrefix(cmd, "-") {
		hint = fmt.Sprintf(": flags come after the command, e.g. flowyprompt serve %s", strings.Join(args, " "))
	}
	return usageError("unknown command %q%s (see flowyprompt -h)", cmd, hint)
}

// buildVersion and buildCommit are set by make (-ldflags -X): release
// archives are built with -trimpath and from a checkout whose VCS stamp the
// toolchain may not see, so make passes what git says.
var buildVersion, buildCommit string

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
	if rev := vcsRevision(info, ok); rev != "" {
		return "dev-" + rev
	}
	return "dev"
}

// commit is the revision the binary was built from, 12 hex digits and
// "-dirty" for uncommitted changes, or "unknown".
func commit() string {
	if buildCommit != "" {
		return buildCommit
	}
	info, ok := debug.ReadBuildInfo()
	if rev := vcsRevision(info, ok); rev != "" {
		return rev
	}
	return "unknown"
}

func vcsRevision(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return ""
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
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// versionLine is what version prints: enough for a bug report to name
// the exact build (a release's archive, a bundle's binary, a go install),
// and, for the Claude Desktop bundle's, that it is the desktop build
// (package edition), which leaves the team-server features out.
func versionLine() string {
	build := ""
	if edition.Desktop {
		build = "desktop build, "
	}
	return fmt.Sprintf("flowyprompt %s (%scommit %s, %s, %s/%s)", version(), build, commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// cmdVersion prints the version. It parses flags only so that
// `version -h` explains the command instead of answering it.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "version", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdUsageError("version", "version takes no arguments, got %q", fs.Arg(0))
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// commandHelp is each command's line of description and example for its
// -h. It is keyed by name rather than passed to newFlagSet so that every
// command's help comes out the same, whichever file defines the command.
var commandHelp = map[string]struct{ summary, example string }{
	"serve":    {"Run the MCP server: over stdio for Claude Desktop (the default), or over HTTP with --transport http.", "flowyprompt serve --templates ./prompts"},
	"list":     {"List the templates with their arguments (* marks a required one).", "flowyprompt list --templates ./prompts"},
	"render":   {"Render a template with its arguments and print the prompt on stdout.", "flowyprompt render Commit_Message --arg diff=@change.diff --arg style=plain"},
	"diff":     {"Print what changed in a template between two versions, labels or a pull request (#N): the unified diff of its file, then of its prompt rendered with its example values. An empty or missing TO is the served version. Like diff(1): exit 0 and print nothing when they are the same, 1 when they differ, 2 on trouble.", "flowyprompt diff Code_Review 1.0.0 --github-repo https://github.com/acme/prompts"},
	"validate": {"Check template files, or the *.json files in folders, without serving them; exit 1 if any is invalid.", "flowyprompt validate ./prompts"},
	"test":     {"Render every test of the templates' \"tests\" and check what each expects; print PASS or FAIL for each and the counts; exit 1 if any fails.", "flowyprompt test --templates ./prompts --junit report.xml"},
	"call":     {"Run one MCP tool in this process, as a client would, and print its result.", `flowyprompt call flowyprompt_search_templates '{"query":"commit"}'`},
	"check":    {"Check the configuration and the template source (for GitHub: the repository, ref and rate limit); exit 1 if GitHub cannot be reached, a template is invalid or a file a template lists is missing.", "GITHUB_REPO_URL=https://github.com/acme/prompts flowyprompt check"},
	"export":   {"Write every template in another format: dotprompt .prompt files, GitHub Models .prompt.yml files, or one Agent Skill folder (SKILL.md) per template.", "flowyprompt export --format skill --out ./skills --templates ./prompts"},
	"propose":  {"Validate template files, run their tests, and propose them to a GitHub library as a pull request (opened, or updated when yours is open); print its URL.", "flowyprompt propose Code_Review.json --source team"},
	"preview":  {"Serve a page on this machine (127.0.0.1) for authors: the templates and flows with their problems, a form for each template's variables, the prompt it renders as you type and its tests' results, all updated as the files change.", "flowyprompt preview --templates ./prompts --open"},
	"version":  {"Print the version, the commit it was built from, the Go version and the platform.", "flowyprompt version"},
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: flowyprompt %s\n", synopsis)
		if h, ok := commandHelp[name]; ok {
			fmt.Fprintf(stderr, "\n%s\n\nExample:\n  %s\n", h.summary, h.example)
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
		if fs.Lookup("github-repo") != nil {
			fmt.Fprint(stderr, githubEnvHelp)
		}
	}
	return fs
}

// githubEnvHelp names, for the commands that read GitHub, the settings
// that are variables only.
const githubEnvHelp = `
Environment:
  GITHUB_REPO_URL  the GitHub repository to read templates from (or -github-repo)
  GITHUB_PAT       the GitHub token, for a private repository and a higher rate
                   limit; a variable only, since a command line is visible to
                   every user of the machine
`

// oneShotHelp makes a one-shot command's -h say what it does: its own
// default log level (level, unless LOG_LEVEL sets one), and a template
// folder that is read once, not watched.
func oneShotHelp(fs *flag.FlagSet, level string, lookup env) {
	if f := fs.Lookup("log-level"); f != nil {
		if _, fromEnv := lookup("LOG_LEVEL"); !fromEnv {
			f.DefValue = level
		}
	}
	if f := fs.Lookup("templates"); f != nil {
		f.Usage = "read the templates in `folder` DIR (env TEMPLATES_DIR); default: the built-in examples"
	}
}

// parse parses flags; -h prints the usage and is a success, a bad flag a
// one-line usage error (the flag package would print the whole usage).
func parse(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return &exitError{code: 0}
	}
	return cmdUsageError(fs.Name(), "%v%s", err, flagHint(fs, err))
}

// parseInterleaved parses flags that may come before, between or after
// the command's words (propose's files, diff's NAME FROM TO), and
// returns the words in order: the flag package stops at the first word.
// After "--" everything is a word.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return words, nil
		}
		rest := fs.Args()
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(words, rest...), nil
		}
		words, args = append(words, rest[0]), rest[1:]
	}
}

// flagHint is what an unknown flag most likely meant, among the command's
// own flags ("; did you mean --templates?"), or "". The flag package
// reports the name as it was written, without its dashes, in a message
// of its own wording: only that name is taken from it.
func flagHint(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	// Two at most: --github-rep is as near to --github-ref as to
	// --github-repo.
	c := suggest.Close(name, names, 2)
	if len(c) > 0 {
		return "; did you mean --" + strings.Join(c, " or --") + "?"
	}
	if fs.Name() != "serve" && serveOnly(name) {
		// list --transport http: a server's setting on a one-shot command.
		return fmt.Sprintf("; --%s is a flag of flowyprompt serve alone", name)
	}
	return ""
}

// serveOnly reports whether name is one of the server's own flags, which
// no other command takes (the state keys are call's too).
func serveOnly(name string) bool {
	serve := flag.NewFlagSet("serve", flag.ContinueOnError)
	state := flag.NewFlagSet("state", flag.ContinueOnError)
	unset := func(string) (string, bool) { return "", false }
	_ = config.RegisterServe(serve, &config.Config{}, unset) // an empty environment holds no bad value
	config.RegisterState(state, &config.Config{}, unset)
	return serve.Lookup(name) != nil && state.Lookup(name) == nil
}
