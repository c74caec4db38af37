package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/internal/preview"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/flowyprompt/flowyprompt/internal/telemetry"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/flowyprompt/flowyprompt/transport/stdio"
	"github.com/sourcegraph/jsonrpc2"
)

// setup is what every command that serves templates needs.
type setup struct {
	cfg config.Config
	log *slog.Logger
	lib *templates.Library
	src templates.Source
	// replicas is the link to the other replicas (serve --nats); nil
	// for one process.
	replicas replicas
	// tel is serve's telemetry (nil for other commands): set up before
	// the source opens, so the GitHub source's first requests are traced.
	tel *telemetry.Telemetry
	// audit is serve's audit log, nil when the log level hides its lines.
	audit *audit.Log
	// policy is serve's access policy (--auth-policy), nil without.
	policy *auth.PolicyFile
	// labels are the libraries of the labels the sources name (nil:
	// none), the default's being lib.
	labels *labelset.Set
	// ui is serve --ui's preview page, nil without.
	ui *preview.Handler
}

// flagGroups says which settings a command that loads templates takes,
// so that its -h lists only flags that do something for it.
type flagGroups int

const (
	sourceFlags flagGroups = iota // list, render: where templates come from, logging
	toolFlags                     // call: those, the save tool's (it may run it) and the state keys (a flow's handle)
	serveFlags                    // serve: all of those, and the server's own
)

// load parses the flags and loads the templates. problems says whether
// the library logs the templates' problems (warnings, invalid files):
// render, which reads one template, logs that one's alone. The words
// before the first flag are the command's to take; those after the flags
// are left in fs.Args().
func load(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer, lookup env, groups flagGroups, problems bool) (*setup, error) {
	return loadParsing(ctx, fs, stderr, lookup, groups, problems, func() error { return parse(fs, args) })
}

// loadWords is load for a command whose words (diff's NAME FROM TO) may
// come before, between or after its flags, as propose's files may
// (parseInterleaved): it returns them. check judges them (their count)
// before the source is opened, so that a wrong command line is told at
// once, not after the library is read.
func loadWords(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer, lookup env, groups flagGroups, problems bool,
	check func(words []string) error) (*setup, []string, error) {
	var words []string
	s, err := loadParsing(ctx, fs, stderr, lookup, groups, problems, func() error {
		var err error
		if words, err = parseInterleaved(fs, args); err != nil {
			return err
		}
		return check(words)
	})
	return s, words, err
}

// loadParsing is load with parseArgs reading the command line, once the
// flags are defined and before anything is opened.
func loadParsing(ctx context.Context, fs *flag.FlagSet, stderr io.Writer, lookup env, groups flagGroups, problems bool,
	parseArgs func() error) (_ *setup, err error) {
	s := &setup{}
	envErr := config.RegisterSource(fs, &s.cfg, config.Env(lookup))
	if groups >= toolFlags {
		envErr = errors.Join(envErr, config.RegisterWrite(fs, &s.cfg, config.Env(lookup)))
	}
	serve := groups == serveFlags
	if serve {
		envErr = errors.Join(envErr, config.RegisterServe(fs, &s.cfg, config.Env(lookup)))
	} else if groups == toolFlags {
		config.RegisterState(fs, &s.cfg, config.Env(lookup))
	}
	if !serve {
		oneShotHelp(fs, "warn", lookup)
	}
	if err := parseArgs(); err != nil {
		return nil, err
	}
	if err := errors.Join(envErr, s.cfg.Check()); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("bad configuration:\n%w", err)}
	}
	if _, fromEnv := lookup("LOG_LEVEL"); !serve && !fromEnv && !flagSet(fs, "log-level") {
		// One-shot commands print results; only problems belong on stderr.
		s.cfg.LogLevel = "warn"
	}
	s.log = s.cfg.Logger(stderr)
	if serve {
		tel, terr := telemetry.Setup(ctx, telemetry.Options{Stdio: s.cfg.Transport != "http", MetricsAddr: s.cfg.MetricsAddr, AllowedHosts: s.cfg.AllowedHosts,
			ServiceVersion: version(), Logger: s.log})
		if terr != nil {
			return nil, &exitError{code: 2, err: fmt.Errorf("bad telemetry configuration: %w", terr)}
		}
		s.tel = tel
		defer func() {
			if err != nil {
				s.closeTelemetry()
			}
		}()
	}
	if serve && s.cfg.NATSURL != "" {
		link, err := joinReplicas(&s.cfg, s.log)
		if err != nil {
			return nil, &exitError{code: 2, err: fmt.Errorf("bad cluster configuration: %w", err)}
		}
		s.replicas = link
	}
	shareBlobs(&s.cfg)
	src, err := openSource(&s.cfg, s.log, s.replicas)
	if err != nil {
		return nil, namedAsGiven(err, fs)
	}
	s.src = src
	libLog := s.log
	if !problems {
		libLog = slog.New(slog.DiscardHandler)
	}
	s.lib = templates.NewLibrary(src, libLog)
	if err := s.lib.Load(ctx); err != nil {
		return nil, namedAsGiven(explainSources(err, &s.cfg), fs)
	}
	s.labels = labelsOf(&s.cfg, s.lib, libLog, s.replicas)
	return s, nil
}

// closeTelemetry flushes the spans and metrics not yet exported. It runs
// once the engine has shut down, so every request's span has ended.
func (s *setup) closeTelemetry() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.tel.Shutdown(ctx); err != nil {
		s.log.Warn("telemetry not flushed", "err", err)
	}
}

// closeAudit writes the audit lines still queued and stops the audit
// log. It runs once the engine has shut down, so that every request's
// line is queued, and before the last lines of the log, which then come
// after the audit lines. A stderr nobody reads but nobody closed would
// hold it forever: it gives up after 5 s, and says nothing, as nothing can
// be said on that stderr. A second call does nothing.
func (s *setup) closeAudit() {
	if s.audit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.audit.Close(ctx)
}

// openSource picks the template source: GitHub, a folder, or the examples.
func openSource(cfg *config.Config, log *slog.Logger, link replicas) (templates.Source, error) {
	switch {
	case len(cfg.Sources) > 0:
		return compositeSource(cfg, log, link)
	case cfg.GitHubRepoURL != "":
		src, err := githubSource(cfg, log, link)
		if err != nil {
			return nil, err
		}
		return src, nil
	case cfg.TemplatesDir != "":
		abs, err := filepath.Abs(cfg.TemplatesDir)
		if err != nil {
			return nil, fmt.Errorf("template folder %q: %w", cfg.TemplatesDir, err)
		}
		return folder.New(abs, templates.BuildOptions{MaxFileSize: cfg.MaxFileSize, Logger: log,
			Info: templates.SourceInfo{Kind: "directory", Location: abs}}), nil
	}
	return templates.Embedded(), nil
}

// explain formats an error with its what / why / how for a terminal.
func explain(err error) error {
	f := fault.As(err)
	if f == nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", f.Code, f.Error())
	if f.How != "" {
		fmt.Fprintf(&b, "\n  how to fix: %s", f.How)
	}
	if len(f.Suggestions) > 0 {
		fmt.Fprintf(&b, "\n  did you mean: %s", strings.Join(f.Suggestions, ", "))
	}
	if f.RetryAfter > 0 {
		fmt.Fprintf(&b, "\n  retry after: %s", f.RetryAfter.Round(time.Second))
	}
	return &exitError{code: 1, err: errors.New(b.String())}
}

func newApp(s *setup) *app.App {
	w := writerFor(s.src)
	switch c, several := s.src.(*templates.Composite); {
	case s.cfg.AllowWrite && several && len(c.Saves()) == 0:
		// A save names its source among several (the save tool's source
		// argument); none of these can take one.
		w = nil
		s.log.Warn("writing is enabled but none of the --source libraries can be written: add a folder (dir=) or a GitHub repository (github=) to save templates")
	case s.cfg.AllowWrite && w == nil:
		s.log.Warn("writing is enabled but the built-in examples cannot be written: serve a folder (--templates) or a GitHub repository to save templates")
	}
	var state *seal.Sealer
	if s.cfg.StateKeys != "" {
		// Config.Check has parsed them already.
		if keys, err := seal.ParseKeys(s.cfg.StateKeys); err == nil {
			state, _ = seal.New(keys...)
		}
	}
	var policy func() *auth.Policy
	if s.policy != nil {
		policy = s.policy.Policy
	}
	return app.New(app.Options{Library: s.lib, Version: version(), Logger: s.log, MaxFileSize: s.cfg.MaxFileSize,
		AllowWrite: s.cfg.AllowWrite, WritePatterns: s.cfg.Patterns(), Writer: w, State: state,
		// With a token, the library is for its holders alone: no shared
		// cache may keep it; with members', what each sees is theirs.
		PrivateCache: (s.cfg.AuthToken != "" || s.cfg.AuthIssuer != "") && s.cfg.Transport == "http",
		Policy:       policy,
		Labels:       appLabels(s.labels), Label: s.cfg.Label})
}

// appLabels is set as the app's Labels: nil, not a nil *labelset.Set,
// when there are none.
func appLabels(set *labelset.Set) app.Labels {
	if set == nil {
		return nil
	}
	return set
}

// loadPolicy reads the access policy file (--auth-policy), checked
// against the sources served: a policy that names a source the server
// does not serve, or does not parse, stops serve before it starts.
func loadPolicy(s *setup) error {
	if s.cfg.AuthPolicy == "" {
		return nil
	}
	pf, err := auth.LoadPolicyFile(s.cfg.AuthPolicy, app.SourceNames(s.src), s.cfg.LabelNames(), s.log)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%w\n  how to fix: correct the policy file (see docs/auth.md, \"The access policy\"), or unset --auth-policy (FLOWYPROMPT_AUTH_POLICY)", err)}
	}
	p := pf.Policy()
	s.policy = pf
	s.log.Info("access policy loaded", "file", pf.Path(), "claim", p.Claim, "read_rules", len(p.Read), "write_rules", len(p.Write))
	return nil
}

// watchPolicy reloads the access policy when its file changes and on
// SIGHUP until ctx ends, telling every client its lists may have changed.
func watchPolicy(ctx context.Context, s *setup, a *app.App, e *mcp.Engine) {
	if s.policy == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	context.AfterFunc(ctx, func() { signal.Stop(hup) })
	if err := s.policy.Watch(ctx, hup, func(*auth.Policy) { a.PolicyChanged(e) }); err != nil {
		s.log.Warn("the access policy file is not watched: send SIGHUP to reload it", "err", err)
	}
}

// returnLoadGarbage hands the memory a library load left behind back to
// the system, now and after every later load. A load allocates several
// times the library in garbage that dies within it (the fetched files,
// decoded JSON documents, schema validation), and the collector sizes the
// heap to that burst; without this the server's resident set stays at the
// burst's size long after, since the runtime returns free pages only
// slowly. Loads are rare, and a forced collection costs milliseconds.
func returnLoadGarbage(lib *templates.Library) {
	debug.FreeOSMemory()
	lib.OnChange(func(_, _ *templates.Catalog, _ templates.Changes) {
		// Listeners must be quick: the collection runs beside them.
		go debug.FreeOSMemory()
	})
}

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("serve", "serve [flags]", stderr)
	s, err := load(ctx, fs, args, stderr, lookup, serveFlags, true)
	if err != nil {
		return err
	}
	if s.replicas != nil {
		defer s.replicas.close()
	}
	defer s.closeTelemetry()
	if n, set := procs(s.cfg.Procs, os.Getenv("GOMAXPROCS"), s.cfg.Transport, runtime.NumCPU()); set {
		runtime.GOMAXPROCS(n)
	}
	if s.cfg.CPUProfile != "" {
		stop, err := startCPUProfile(s.cfg.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := loadPolicy(s); err != nil {
		return err
	}
	a := newApp(s)
	if s.labels != nil {
		defer s.labels.Close()
	}
	returnLoadGarbage(s.lib)
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{MaxMessageSize: s.cfg.MaxMessageSize,
		MaxSubscriptions: s.cfg.MaxSubscriptions, RequestTimeout: s.cfg.RequestTimeout, IdleTimeout: httpIdleTimeout(&s.cfg), Logger: s.log,
		Observer: observers(ctx, s, stderr)})
	defer s.closeAudit() // when serving fails; a clean stop has closed it already
	defer a.Attach(e)()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := s.lib.Run(runCtx); err != nil && runCtx.Err() == nil {
			s.log.Warn("watching the template source stopped", "err", err)
		}
	}()
	watchPolicy(runCtx, s, a, e)
	switch s.cfg.Transport {
	case "http":
		if s.cfg.UI {
			// The page reads what a request's caller may read, of the
			// label it names, as every handler does, and follows every
			// label's library.
			s.ui = preview.New(preview.Options{Library: s.lib, Labels: previewLabels(s.labels), View: a.PageView,
				Version: version(), Logger: s.log})
			defer s.ui.Close()
		}
		return serveHTTP(ctx, s, a, e, stderr)
	default:
		in, out := stdin, stdout
		if f, ok := stdin.(*os.File); ok {
			pf, restore := stdio.Pollable(f)
			defer restore()
			in = pf
		}
		if f, ok := stdout.(*os.File); ok {
			pf, restore := stdio.Pollable(f)
			defer restore()
			out = pf
		}
		// Until stdin closes, nothing else tells the person who pressed
		// Ctrl-C why the process lingers, nor that pressing it again works.
		stopLog := context.AfterFunc(ctx, func() {
			s.log.Info("shutting down: finishing in-flight requests; a second signal exits at once",
				"cause", context.Cause(ctx), "grace", stdioDrain)
		})
		defer stopLog()
		logServing(s)
		err = stdio.Serve(ctx, e, in, out, stdio.Options{DrainTimeout: stdioDrain})
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = e.Shutdown(sctx)
		s.closeAudit()
		if err != nil {
			return err
		}
		s.log.Info("stdio session ended")
		return nil
	}
}

// observers is the engine's hook: the telemetry, when the environment
// asks for it, and the audit log of prompt usage, when the log level lets
// info lines through. Neither: nil, and requests run without a hook. The
// audit log writes to stderr from a goroutine of its own, in batches, so
// that a request never waits for its line (internal/audit).
func observers(ctx context.Context, s *setup, stderr io.Writer) mcp.Observer {
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return mcp.JoinObservers(s.tel.Observer, nil)
	}
	s.audit = audit.Buffered(stderr, s.cfg.Handler)
	return mcp.JoinObservers(s.tel.Observer, s.audit)
}

// logServing says that the server is up: over HTTP once its listener
// is, so that a server that could not listen never claims to serve.
func logServing(s *setup) {
	c := s.lib.Catalog()
	info := c.Info()
	s.log.Info("flowyprompt serving", "transport", s.cfg.Transport, "version", version(),
		"source", info.Kind, "location", info.Location, "templates", c.Len(), "invalid", len(c.Invalid()))
}

// stdioDrain bounds how long a stdio session's requests in flight may
// finish once stdin closes or a signal arrives.
const stdioDrain = 10 * time.Second

func cmdList(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("list", "list [--json] [flags]", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	s, err := load(ctx, fs, args, stderr, lookup, sourceFlags, true)
	if err != nil {
		return err
	}
	cat := s.lib.Catalog()
	if *asJSON {
		type item struct {
			Name        string               `json:"name"`
			Description string               `json:"description"`
			Version     string               `json:"version"`
			Path        string               `json:"path"`
			Variables   []templates.Variable `json:"variables"`
		}
		type invalid struct {
			Path  string `json:"path"`
			Error string `json:"error"`
		}
		type flow struct {
			Name        string               `json:"name"`
			Description string               `json:"description"`
			Path        string               `json:"path"`
			Arguments   []templates.FlowArg  `json:"arguments"`
			Steps       []templates.FlowStep `json:"steps"`
		}
		out := struct {
			Templates []item               `json:"templates"`
			Flows     []flow               `json:"flows"`
			Invalid   []invalid            `json:"invalid"`
			Source    templates.SourceInfo `json:"source"`
		}{Templates: []item{}, Flows: []flow{}, Invalid: []invalid{}, Source: cat.Info()}
		for _, e := range cat.Templates() {
			m := e.Template.Metadata
			out.Templates = append(out.Templates, item{m.Name, m.Description, m.Version, e.Path, e.Template.Variables})
		}
		for _, fe := range cat.Flows() {
			f := fe.Flow
			out.Flows = append(out.Flows, flow{f.Name, f.Description, fe.Path, f.Arguments, f.Steps})
		}
		for _, i := range cat.Invalid() {
			out.Invalid = append(out.Invalid, invalid{i.Path, i.Err.Error()})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tARGUMENTS\tDESCRIPTION")
	for _, e := range cat.Templates() {
		t := e.Template
		var as []string
		for _, v := range t.Variables {
			if v.Required {
				as = append(as, v.Name+"*")
			} else {
				as = append(as, v.Name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Metadata.Name, t.Metadata.Version, strings.Join(as, ","), t.Metadata.Description)
	}
	tw.Flush()
	noun := "templates"
	if cat.Len() == 1 {
		noun = "template"
	}
	if flows := cat.Flows(); len(flows) > 0 {
		fmt.Fprintln(tw, "\nFLOW\tSTEPS\tARGUMENTS\tDESCRIPTION")
		for _, fe := range flows {
			f := fe.Flow
			var as, steps []string
			for _, a := range f.Arguments {
				if a.Required {
					as = append(as, a.Name+"*")
				} else {
					as = append(as, a.Name)
				}
			}
			for _, st := range f.Steps {
				steps = append(steps, st.Template)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", "flow:"+f.Name, strings.Join(steps, " → "), strings.Join(as, ","), f.Description)
		}
		tw.Flush()
	}
	fmt.Fprintf(stdout, "\n%d %s from %s (* = required argument)\n", cat.Len(), noun, cat.Info().Kind+" "+cat.Info().Location)
	if inv := cat.Invalid(); len(inv) > 0 {
		fmt.Fprintf(stdout, "%d invalid file(s) left out:\n", len(inv))
		for _, i := range inv {
			fmt.Fprintf(stdout, "  %s: %v\n", i.Path, i.Err)
		}
	}
	return nil
}

// argFlags collects repeated --arg k=v.
type argFlags map[string]string

func (a argFlags) String() string { return "" }
func (a argFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	a[k] = v
	return nil
}

func cmdRender(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("render", "render NAME [--arg name=value ...] [flags]", stderr)
	vals := argFlags{}
	fs.Var(vals, "arg", "a variable `name=value` (repeatable); value @FILE reads a file, @- stdin")
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	s, err := load(ctx, fs, rest, stderr, lookup, sourceFlags, false)
	if err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if name == "" {
		return cmdUsageError("render", "render needs a template NAME: flowyprompt list shows them")
	}
	for k, v := range vals {
		if strings.HasPrefix(v, "@") {
			var data []byte
			if v == "@-" {
				data, err = io.ReadAll(os.Stdin)
			} else {
				data, err = os.ReadFile(v[1:])
			}
			if err != nil {
				return usageError("--arg %s=%s: cannot read the value: %w; a value @FILE is read from FILE: name a file that exists "+
					"(relative to the working folder), or @- for stdin", k, v, err)
			}
			vals[k] = string(data)
		}
	}
	cat := s.lib.Catalog()
	e, ok := cat.Lookup(name)
	if !ok {
		return explain(cliNotFound(templates.NotFound(name, cat), name, cat, listCommand(rest[:len(rest)-fs.NArg()])))
	}
	for _, w := range e.Warnings {
		s.log.Warn("template warning", "template", w.Template, "variable", w.Variable, "kind", w.Kind, "path", e.Path, "detail", w.Message)
	}
	// The app renders it as prompts/get does, with the resources the
	// template attaches.
	res, err := newApp(s).GetPrompt(ctx, nil, &mcp.GetPromptParams{Name: name, Arguments: vals})
	if err != nil {
		return explain(err)
	}
	if unknown := render.Unknown(e.Template, vals); len(unknown) > 0 {
		fmt.Fprintf(stderr, "warning: ignored arguments that name no variable: %s\n", unknownArgs(unknown, e.Template.Variables))
	}
	if len(e.Template.Messages) > 0 {
		// A conversation's roles are part of it: its messages are printed
		// as the render tool shows them, the resources after them.
		var conv []render.Message
		for _, m := range res.Messages {
			if m.Content.Type != "text" {
				break
			}
			conv = append(conv, render.Message{Role: m.Role, Text: m.Content.Text})
		}
		fmt.Fprintln(stdout, render.Transcript(conv))
		for _, m := range res.Messages[len(conv):] {
			printMessage(stdout, len(conv), m.Content)
		}
		return nil
	}
	for i, m := range res.Messages {
		printMessage(stdout, i, m.Content)
	}
	return nil
}

// printMessage prints one message of a rendered prompt: the text as it
// is, an attached resource after a line naming it.
func printMessage(w io.Writer, i int, c mcp.Content) {
	switch {
	case c.Type == "text" && i == 0:
		fmt.Fprintln(w, c.Text)
	case c.Type == "text":
		fmt.Fprintf(w, "\n%s\n", c.Text)
	case c.Resource != nil && c.Resource.Blob != "":
		fmt.Fprintf(w, "\n===== attached resource %s (%s, %d bytes base64, not shown) =====\n", c.Resource.URI, c.Resource.MimeType, len(c.Resource.Blob))
	case c.Resource != nil:
		fmt.Fprintf(w, "\n===== attached resource %s (%s) =====\n%s\n", c.Resource.URI, c.Resource.MimeType, c.Resource.Text)
	}
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("validate", "validate [--json] PATH...", stderr)
	var cfg config.Config
	envErr := config.RegisterFileSize(fs, &cfg, config.Env(lookup))
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if envErr != nil {
		return &exitError{code: 2, err: envErr}
	}
	if fs.NArg() == 0 {
		return cmdUsageError("validate", "validate needs at least one file or folder")
	}
	// A file is read here only when it is named; a folder's files are
	// read as the server reads them, so what it refuses (a link leading
	// out of the folder, a file over the limit) is reported here too.
	type input struct {
		file string
		data []byte
		err  error
		root string // the folder its resources are relative to
	}
	var inputs []input
	for _, p := range fs.Args() {
		st, err := os.Stat(p)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("cannot read %s: %w", p, err)}
		}
		if !st.IsDir() {
			data, err := os.ReadFile(p)
			inputs = append(inputs, input{p, data, err, filepath.Dir(p)})
			continue
		}
		files, err := folder.New(p, templates.BuildOptions{MaxFileSize: cfg.MaxFileSize, Logger: slog.New(slog.DiscardHandler)}).Files(ctx)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("cannot read %s: %w", p, err)}
		}
		if len(files) == 0 {
			return &exitError{code: 1, err: fmt.Errorf("no template files in %s: validate reads the template files (*.json, *.prompt.yml, *.prompt, *.prompty) "+
				"of a folder and of its subfolders one level down (not those whose names start with a dot); name a template file, or the folder that holds them", p)}
		}
		for _, f := range files {
			inputs = append(inputs, input{filepath.Join(p, filepath.FromSlash(f.Path)), f.Data, f.Err, p})
		}
	}
	type fileReport struct {
		File string `json:"file"`
		templates.ValidationReport
	}
	var reports []fileReport
	bad := 0
	names := map[string]string{}
	// A flow is checked against the templates of its library, the folder
	// that holds its flows/ folder, and a template's template:// resources
	// against those of the folder it was read from: each read once
	// whichever way it was named.
	libraries := map[string]*templates.Catalog{}
	library := func(root string) (*templates.Catalog, error) {
		if c, ok := libraries[root]; ok {
			return c, nil
		}
		opts := templates.BuildOptions{MaxFileSize: cfg.MaxFileSize, Logger: slog.New(slog.DiscardHandler)}
		files, err := folder.New(root, opts).Files(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot read the templates in %s that the file refers to: %w", root, err)
		}
		c := templates.Build(files, opts)
		libraries[root] = c
		return c, nil
	}
	for _, in := range inputs {
		f := in.file
		var rep templates.ValidationReport
		format, _ := templates.FormatOf(f)
		isFlow := templates.IsFlowPath(filepath.ToSlash(f)) && format == templates.FormatJSON
		partial, isPartial := templates.PartialName(filepath.ToSlash(f))
		switch {
		case in.err == nil && isPartial:
			// A partial is checked in its library, with the templates that
			// include it: a partials/ folder's parent, or the folder of a
			// _NAME.prompt.
			root := filepath.Dir(f)
			if filepath.Base(root) == "partials" {
				root = filepath.Dir(root)
			}
			cat, err := library(root)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rep = libraryReport(cat, root, f, templates.ValidationReport{Valid: true, Name: partial,
				Errors: []templates.Problem{}, Warnings: []string{}})
		case in.err != nil:
			rep = templates.ValidationReport{Errors: []templates.Problem{templates.FaultProblem(in.err)}, Warnings: []string{}}
			if flt := fault.As(in.err); flt != nil {
				rep.Code = flt.Code
			}
		case isFlow:
			cat, err := library(filepath.Dir(filepath.Dir(f)))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rep = templates.ValidateFlow(in.data, filepath.Base(f), cfg.MaxFileSize, cat.Lookup)
		default:
			rep = templates.Validate(in.data, filepath.Base(f), cfg.MaxFileSize)
			if rep.Valid {
				// A listed file that is not there fails the prompt's
				// attachments when served: it is an error here.
				// The file's name says its format.
				t, _, _ := templates.Parse(in.data, templates.ParseOptions{MaxFileSize: cfg.MaxFileSize, FileName: filepath.Base(f)})
				var lib *templates.Catalog
				if slices.ContainsFunc(t.Resources, func(r string) bool { return strings.HasPrefix(r, app.TemplateURIPrefix) }) {
					// Only then: a named file's folder may hold anything.
					var err error
					if lib, err = library(in.root); err != nil {
						return &exitError{code: 2, err: err}
					}
				}
				rr := folder.New(in.root, templates.BuildOptions{MaxFileSize: cfg.MaxFileSize, Logger: slog.New(slog.DiscardHandler)})
				if ps := resourceProblems(ctx, rr, lib, t); len(ps) > 0 {
					rep.Valid, rep.Code = false, fault.ResourceNotFound
					rep.Errors = append(rep.Errors, ps...)
				}
				tested := t
				if rep.Valid && len(t.Partials()) > 0 {
					// Its partials are files of its library: linked there,
					// and its tests run on the linked template.
					cat, err := library(in.root)
					if err != nil {
						return &exitError{code: 2, err: err}
					}
					rep = libraryReport(cat, in.root, f, rep)
					tested = nil
					if e, ok := cat.Lookup(t.Metadata.Name); ok {
						tested = e.Template
					}
				}
				if tested != nil {
					if ps := testProblems(tested); len(ps) > 0 {
						if rep.Valid {
							rep.Code = fault.TestFailed
						}
						rep.Valid = false
						rep.Errors = append(rep.Errors, ps...)
					}
				}
			}
		}
		if rep.Valid {
			// Flows, partials and templates are named apart (a flow's
			// prompt is flow:NAME): each must be unique among its kind.
			key, pointer := rep.Name, "/metadata/name"
			switch {
			case isFlow:
				key, pointer = "flow:"+rep.Name, "/name"
			case isPartial:
				key, pointer = "partial:"+rep.Name, ""
			}
			if other, dup := names[key]; dup {
				rep.Valid = false
				rep.Errors = append(rep.Errors, templates.Problem{Pointer: pointer,
					Message: fmt.Sprintf("duplicate name %q: %s has it too; names must be unique", rep.Name, other)})
			}
			names[key] = f
		}
		if !rep.Valid {
			bad++
		}
		reports = append(reports, fileReport{File: f, ValidationReport: rep})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			status := "ok"
			if !r.Valid {
				status = "INVALID"
			}
			fmt.Fprintf(stdout, "%s: %s\n", r.File, status)
			for _, p := range r.Errors {
				ptr := p.Pointer
				if ptr == "" {
					ptr = "(document)"
				}
				fmt.Fprintf(stdout, "  error   %s: %s\n", ptr, p.Message)
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(stdout, "  warning %s\n", w)
			}
		}
		fmt.Fprintf(stdout, "\n%d file(s) checked: %d valid, %d invalid\n", len(reports), len(reports)-bad, bad)
	}
	if bad > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// resourceProblems reports each resource of t that would not be
// attached, at its JSON pointer: a file rr cannot read (missing,
// unreadable, outside the folder) and a template:// that lib does not
// serve.
// libraryReport is rep, for the file f of the library cat read from root,
// made invalid with the library's problems when the library left f out:
// what only the library can check, a template's partials or a partial's
// own problems.
func libraryReport(cat *templates.Catalog, root, f string, rep templates.ValidationReport) templates.ValidationReport {
	rel, err := filepath.Rel(root, f)
	if err != nil {
		return rep
	}
	for _, inv := range cat.Invalid() {
		if inv.Path != filepath.ToSlash(rel) {
			continue
		}
		rep.Valid, rep.Code = false, fault.CodeOf(inv.Err)
		ps := templates.Problems(inv.Err)
		if len(ps) == 0 {
			ps = []templates.Problem{templates.FaultProblem(inv.Err)}
		}
		rep.Errors = append(rep.Errors, ps...)
	}
	return rep
}

func resourceProblems(ctx context.Context, rr templates.ResourceReader, lib *templates.Catalog, t *templates.Template) []templates.Problem {
	var out []templates.Problem
	if t == nil {
		return nil
	}
	for i, r := range t.Resources {
		at := fmt.Sprintf("/resources/%d", i)
		if name, ok := strings.CutPrefix(r, app.TemplateURIPrefix); ok {
			if _, found := lib.Lookup(name); !found {
				out = append(out, templates.Problem{Pointer: at, Message: fmt.Sprintf(
					"resource %q names no template of the library: clients would get the prompt without it; add the template or fix the name", r)})
			}
			continue
		}
		if rr == nil || strings.Contains(r, "://") {
			continue
		}
		err := templates.CheckResource(ctx, rr, r)
		if err == nil {
			continue
		}
		why := err.Error()
		if f := fault.As(err); f != nil && f.Why != "" {
			why = f.Why
		}
		msg := fmt.Sprintf("resource %q cannot be read (%s): clients would get the prompt without it; fix the file or the path", r, why)
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("resource %q does not exist: clients would get the prompt without it; add the file (the path is relative to the template folder) or fix the path", r)
		}
		out = append(out, templates.Problem{Pointer: at, Message: msg})
	}
	return out
}

// cmdCall runs one tool through the same engine the server uses, over an
// in-process session (the seed's Void Lab "Plan B" runner).
func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("call", "call TOOL ['{\"json\":\"arguments\"}'] [--json] [flags]", stderr)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	var tool, argJSON string
	rest := args
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		if tool == "" {
			tool = rest[0]
		} else if argJSON == "" {
			argJSON = rest[0]
		}
		rest = rest[1:]
	}
	s, err := load(ctx, fs, rest, stderr, lookup, toolFlags, true)
	if err != nil {
		return err
	}
	for _, a := range fs.Args() {
		if tool == "" {
			tool = a
		} else if argJSON == "" {
			argJSON = a
		}
	}
	if tool == "" {
		return cmdUsageError("call", "call needs a TOOL name, e.g. flowyprompt call flowyprompt_list_templates")
	}
	if argJSON == "" {
		argJSON = "{}"
	}
	if err := checkJSON(argJSON); err != nil {
		return usageError("the arguments are not valid JSON: %v; quote them for the shell, e.g. '{\"name\":\"Commit_Message\"}'", err)
	}
	a := newApp(s)
	e := mcp.NewEngine(a.Server(), mcp.EngineOptions{Logger: s.log})
	defer e.Shutdown(context.Background())
	res, err := callOnce(ctx, e, tool, json.RawMessage(argJSON))
	if err != nil {
		return err
	}
	var result mcp.CallToolResult
	if res.Error != nil {
		var data mcp.ErrorData
		if res.Error.Data != nil {
			_ = json.Unmarshal(*res.Error.Data, &data)
		}
		msg := res.Error.Message
		if data.Code == fault.ToolNotFound {
			// The server's fix is for an MCP client (call tools/list);
			// here it is the command's.
			data.How = cliToolFix(ctx, a)
		}
		if data.How != "" {
			msg += "\n  how to fix: " + data.How
		}
		if len(data.Suggestions) > 0 {
			msg += "\n  did you mean: " + strings.Join(data.Suggestions, ", ")
		}
		// Only the caller's mistakes (an unknown tool, arguments that do
		// not fit) are usage errors; a failure of the server is exit 1.
		if res.Error.Code == jsonrpc2.CodeInvalidParams || res.Error.Code == jsonrpc2.CodeMethodNotFound {
			return usageError("%s", msg)
		}
		return errors.New(msg)
	}
	if err := json.Unmarshal(res.Result, &result); err != nil {
		return fmt.Errorf("decode tool result: %w", err)
	}
	if *asJSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, res.Result, "", "  "); err != nil {
			return err
		}
		fmt.Fprintln(stdout, buf.String())
	} else {
		for i, c := range result.Content {
			printMessage(stdout, i, c)
		}
	}
	if result.IsError {
		return &exitError{code: 1}
	}
	return nil
}

// cliToolFix names the tools flowyprompt call runs, for a name that is
// none of them.
func cliToolFix(ctx context.Context, a *app.App) string {
	tools, err := a.ListTools(ctx, nil)
	if err != nil || len(tools) == 0 {
		return ""
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return "name one of the tools, e.g. flowyprompt call " + names[0] + "; they are " + strings.Join(names, ", ")
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// procs decides how many CPUs serve runs Go code on (GOMAXPROCS): the
// --procs value; else, over stdio, half the machine's, at least one, and
// over HTTP the Go runtime's own default, every CPU. A GOMAXPROCS
// variable, the runtime's own setting, wins over the defaults (set is
// then false: nothing to change).
//
// Over stdio flowyprompt runs beside the one program it serves (the
// desktop app, the IDE) and its requests are short: on two cores, running
// on one serves 32 pipelined prompts/get with a fifth less CPU per request
// and more of them, since goroutines handing a request to each other do
// not wake a second thread. Over HTTP, each connection's goroutines in
// net/http do more per request and spread over cores: with 50 clients on
// the same two cores, two gave a fifth more requests per second and a
// lower p99 than one (docs/performance.md).
func procs(flag int, env, transport string, cpus int) (n int, set bool) {
	switch {
	case flag > 0:
		return flag, true
	case env != "", transport == "http":
		return 0, false
	}
	return max(1, cpus/2), true
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cannot write the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot start the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// cliNotFound turns a "template not found" fault's fix into command-line
// terms: the suggestions stay (explain prints them once), the fix names
// list, the command that shows the names (list, with render's own source
// flags). When the file NAME.json is there but invalid, it says so:
// render logs nothing about other files.
func cliNotFound(err error, name string, cat *templates.Catalog, list string) error {
	f := fault.As(err)
	if f == nil {
		return err
	}
	cp := *f
	cp.How = "run " + list + " to see the names; names are case-sensitive"
	for _, inv := range cat.Invalid() {
		if _, stem := templates.FormatOf(inv.Path); stem == name {
			cp.Why = fmt.Sprintf("the file %s, which may hold it, is invalid: %v", inv.Path, inv.Err)
			cp.How = fmt.Sprintf("fix %s (flowyprompt validate lists every problem of a file), or run %s to see the names", inv.Path, list)
			break
		}
	}
	return &cp
}

// listCommand is the flowyprompt list command that reads the templates
// render's flags read: flags are its flags as given, less its --arg
// values (every other flag of render says where templates come from, or
// how to log), so that a fix naming list lists the same library.
func listCommand(flags []string) string {
	cmd := []string{"flowyprompt", "list"}
	for i := 0; i < len(flags); i++ {
		switch a := flags[i]; {
		case a == "-arg" || a == "--arg":
			i++
		case strings.HasPrefix(a, "-arg=") || strings.HasPrefix(a, "--arg="):
		default:
			cmd = append(cmd, shellWord(a))
		}
	}
	return strings.Join(cmd, " ")
}

// shellWord quotes s for a POSIX shell when it holds more than letters,
// digits and the punctuation a shell leaves alone.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,@%+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unknownArgs lists arguments that name no variable, each with the
// variable it most likely meant.
func unknownArgs(unknown []string, vars []templates.Variable) string {
	names := make([]string, len(vars))
	for i, v := range vars {
		names[i] = v.Name
	}
	out := make([]string, 0, len(unknown))
	for _, u := range unknown {
		if c := suggest.Close(u, names, 1); len(c) > 0 {
			u += fmt.Sprintf(" (did you mean %q?)", c[0])
		}
		out = append(out, u)
	}
	return strings.Join(out, ", ")
}

// checkJSON reports where s stops being JSON, by line and column.
func checkJSON(s string) error {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	before := s[:min(int(se.Offset), len(s))]
	line := strings.Count(before, "\n") + 1
	col := len([]rune(before[strings.LastIndex(before, "\n")+1:]))
	return fmt.Errorf("line %d, column %d: %v", line, col, se)
}
