// Command mcpbench compares flowyprompt with reference servers built on the
// two best-known Go MCP libraries (mark3labs/mcp-go and the official
// modelcontextprotocol/go-sdk, in internal/bench/peers) on the same 2 KB
// templates: stdio, legacy SSE and Streamable HTTP throughput and latency
// (Streamable HTTP with sessions, and stateless at protocol 2026-07-28),
// server CPU per request, peak RSS, and memory per idle session.
// flowyprompt runs at its defaults, as a user runs it, the audit log's
// line per request included; flowyprompt-quiet is the same binary with
// --log-level error, for what the log costs; httpfloor is net/http alone
// (cmd/httpfloor), in the Streamable HTTP request scenario. The report
// checks flowyprompt's goals against mcp-go and httpfloor (goals.go).
//
// It builds every server, checks they render the same text, then runs each
// scenario on each server in turn within every repetition (rotating which
// server goes first), so slow drifts of a shared machine spread over all of
// them, and prints medians with min–max and the ratio to mcp-go. It lives
// in the harness module (internal/bench) and runs from there:
//
//	cd internal/bench
//	go run ./cmd/mcpbench                        # the full comparison, ~13 minutes
//	go run ./cmd/mcpbench -reps 1 -scale 0.2     # a quick look
//	go run ./cmd/mcpbench -markdown ../../docs/performance.md
//
// flowyprompt is built from the repository root by path (found upwards
// from the current folder, or -root), never imported, so the harness
// module does not require the product's. Everything runs on loopback; the
// load generator is internal/bench/loadgen.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

type options struct {
	root       string
	bin        string
	reps       int
	scale      float64
	only       []string // scenario ids; empty = all
	servers    []string
	markdown   string
	raw        string
	skipBuild  bool
	skipCheck  bool
	checkOnly  bool
	timeout    time.Duration
	runTimeout time.Duration
	settle     time.Duration
	caveat     string
	cpuprofile string
	fpArgs     []string
	before     string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("mcpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var only, srvs string
	fs.StringVar(&o.root, "root", "", "repository root (default: found from the current folder)")
	fs.StringVar(&o.bin, "bin", "bin", "folder for the built servers, relative to the root")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of every scenario on every server")
	fs.Float64Var(&o.scale, "scale", 1, "multiply request counts (0.2 for a quick look); idle session counts are fixed")
	fs.StringVar(&only, "scenarios", "", "comma-separated scenario ids to run (default all): "+strings.Join(scenarioIDs(), ", "))
	fs.StringVar(&srvs, "servers", strings.Join(defaultServers, ","), "comma-separated servers to run")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into this markdown file, between mcpbench markers (e.g. ../../docs/performance.md)")
	fs.StringVar(&o.raw, "raw", "", "append every run's figures as JSON lines to this file")
	fs.BoolVar(&o.skipBuild, "skip-build", false, "use the binaries already in -bin")
	fs.BoolVar(&o.skipCheck, "skip-check", false, "skip checking that all servers render the same text")
	fs.BoolVar(&o.checkOnly, "check-only", false, "build and check rendering, then stop")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "stop the whole comparison after this long")
	fs.DurationVar(&o.runTimeout, "run-timeout", 2*time.Minute, "stop one run after this long")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "idle sessions: wait before and after opening them")
	fs.StringVar(&o.caveat, "caveat", "", "a note for the report, e.g. that the machine was busy")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write the load generator's own CPU profile here (it shares the machine with the servers, so its cost matters)")
	fs.StringVar(&o.before, "before", "", "another flowyprompt binary (absolute path), run as server flowyprompt-before in the same runs, to measure a change")
	fs.Func("flowyprompt-args", "extra `arguments` for flowyprompt serve, space-separated (e.g. '--cpuprofile /tmp/fp.pprof' with one scenario and -reps 1)", func(v string) error {
		o.fpArgs = strings.Fields(v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if o.reps < 1 || o.scale <= 0 {
		return o, fmt.Errorf("%w: -reps must be at least 1 and -scale above 0", errUsage)
	}
	if only != "" {
		o.only = strings.Split(only, ",")
		for _, id := range o.only {
			if !slices.Contains(scenarioIDs(), id) {
				return o, fmt.Errorf("%w: unknown scenario %q (have %s)", errUsage, id, strings.Join(scenarioIDs(), ", "))
			}
		}
	}
	known := slices.Clone(defaultServers)
	if o.before != "" {
		known = append(known, flowypromptBefore)
		if !filepath.IsAbs(o.before) {
			return o, fmt.Errorf("%w: -before wants an absolute path, got %q", errUsage, o.before)
		}
	}
	for _, s := range strings.Split(srvs, ",") {
		if !slices.Contains(known, s) {
			return o, fmt.Errorf("%w: unknown server %q (have %s)", errUsage, s, strings.Join(known, ", "))
		}
		o.servers = append(o.servers, s)
	}
	return o, nil
}

func scenarioIDs() []string {
	var ids []string
	for _, s := range scenarios(1) {
		ids = append(ids, s.id)
	}
	return ids
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	root, err := findRoot(o.root)
	if err != nil {
		return err
	}
	bin := o.bin
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(root, bin)
	}
	harness := filepath.Join(root, "internal", "bench")
	dir := filepath.Join(harness, "templates")
	// The report names the library versions measured; read them now, so a
	// missing go.mod fails before the runs rather than after.
	gomod, err := os.ReadFile(filepath.Join(harness, "go.mod"))
	if err != nil {
		return fmt.Errorf("library versions: %w", err)
	}

	if !o.skipBuild {
		if err := build(ctx, log, root, harness, bin); err != nil {
			return err
		}
	}
	all := servers(bin, dir, o.fpArgs, o.before)
	var chosen []*server
	for _, s := range all {
		if slices.Contains(o.servers, s.name) {
			chosen = append(chosen, s)
		}
	}
	if !o.skipCheck {
		log.Info("checking that every server renders the same text")
		// flowyprompt first: the others are compared with it.
		check := slices.DeleteFunc(slices.Clone(chosen), func(s *server) bool { return s.floor })
		slices.SortStableFunc(check, func(a, b *server) int {
			return boolInt(a.name != flowyprompt) - boolInt(b.name != flowyprompt)
		})
		if err := checkRendering(ctx, check, dir); err != nil {
			return err
		}
		log.Info("rendering check passed", "servers", len(check))
	}
	if o.checkOnly {
		return nil
	}

	var scs []scenario
	for _, s := range scenarios(o.scale) {
		if len(o.only) == 0 || slices.Contains(o.only, s.id) {
			scs = append(scs, s)
		}
	}
	rep := &report{scenarios: scs}
	for _, s := range chosen {
		rep.servers = append(rep.servers, s.name)
	}
	var rawOut *json.Encoder
	if o.raw != "" {
		f, err := os.OpenFile(o.raw, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open raw output: %w", err)
		}
		defer f.Close()
		rawOut = json.NewEncoder(f)
	}

	r := &runner{serverWait: 15 * time.Second, settle: o.settle, unavailable: map[string]string{}}
	began := time.Now()
	for i := range o.reps {
		for _, sc := range scs {
			for _, srv := range rotate(chosen, i) {
				if !srv.runs(sc) {
					continue
				}
				if ctx.Err() != nil {
					return fmt.Errorf("stopped after %s: %w", time.Since(began).Round(time.Second), ctx.Err())
				}
				res := result{Rep: i + 1, Scenario: sc.id, Server: srv.name, Start: time.Now()}
				rctx, rcancel := context.WithTimeout(ctx, o.runTimeout)
				m, err := r.run(rctx, sc, srv)
				rcancel()
				// The whole run's wall time (start, warmup, measure, stop)
				// makes a stall outside the measured phase visible.
				res.Wall = time.Since(res.Start).Seconds()
				switch {
				case errors.Is(err, errUnavailable):
					res.Skipped = strings.TrimPrefix(err.Error(), errUnavailable.Error()+": ")
					log.Info("not available", "rep", i+1, "scenario", sc.id, "server", srv.name, "why", oneLine(res.Skipped))
				case err != nil:
					res.Error = err.Error()
					log.Warn("run failed", "rep", i+1, "scenario", sc.id, "server", srv.name, "err", oneLine(err.Error()))
				case m[mErrors] > 0:
					res.Metrics = m
					res.Error = fmt.Sprintf("%.0f of %.0f responses failed", m[mErrors], m[mRequests])
					log.Warn("responses failed", "rep", i+1, "scenario", sc.id, "server", srv.name, "errors", m[mErrors])
				default:
					res.Metrics = m
					log.Info("run", append([]any{"rep", i + 1, "scenario", sc.id, "server", srv.name}, append(headline(sc, m), "wall_s", format(res.Wall))...)...)
				}
				rep.results = append(rep.results, res)
				if rawOut != nil {
					if err := rawOut.Encode(res); err != nil {
						return fmt.Errorf("write raw output: %w", err)
					}
				}
			}
		}
	}
	elapsed := time.Since(began)

	fmt.Fprintln(stdout, rep.markdown())
	if o.markdown != "" {
		// The command is recorded as run from the repository root, so it
		// can be pasted back from where the README's commands run.
		info := runInfo{
			date: began, machine: machine(), command: strings.Join(append([]string{"cd", "internal/bench", "&&", "go", "run", "./cmd/mcpbench"}, quoteArgs(args)...), " "),
			versions: libraryVersions(gomod), reps: o.reps, elapsed: elapsed, caveat: o.caveat,
			settings: settings(scs, o.scale),
		}
		// Relative to the working folder, like -raw and -cpuprofile.
		path := o.markdown
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(path, []byte(replaceSection(string(old), rep.section(info))), 0o644); err != nil {
			return fmt.Errorf("write markdown: %w", err)
		}
		log.Info("results written", "file", path)
	}
	return nil
}

// quoteArgs quotes arguments a shell would split, so the command in the
// report can be pasted back.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\;&|<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rotate returns s starting at element i mod len(s), so each repetition
// starts with a different server.
func rotate[T any](s []T, i int) []T {
	if len(s) == 0 {
		return s
	}
	k := i % len(s)
	return append(slices.Clone(s[k:]), s[:k]...)
}

func headline(sc scenario, m map[string]float64) []any {
	if sc.idle() {
		return []any{"kb_per_session", format(m[mPerSession]), "opens_per_s", format(m[mOpenRate])}
	}
	lat := mP50
	if sc.latency == "p99" {
		lat = mP99
	}
	return []any{"rps", format(m[mRPS]), sc.latency + "_us", format(m[lat]), "cpu_us_per_req", format(m[mCPUPerReq])}
}

func settings(scs []scenario, scale float64) string {
	var parts []string
	for _, s := range scs {
		switch {
		case s.idle():
			parts = append(parts, fmt.Sprintf("%s %d sessions, %d at a time", s.id, s.requests, s.concurrency))
		case s.kind == kindStdio:
			parts = append(parts, fmt.Sprintf("%s %d requests after %d warmup", s.id, s.requests, s.warmup))
		default:
			parts = append(parts, fmt.Sprintf("%s %d×%d requests after %d warmup each", s.id, s.concurrency, s.requests, s.warmup))
		}
	}
	out := strings.Join(parts, "; ")
	if scale != 1 {
		out += fmt.Sprintf(" (scale %g)", scale)
	}
	return out
}

// findRoot returns dir, or the nearest folder upwards from the working
// directory whose go.mod is flowyprompt's: the harness's own go.mod on the
// way (module .../internal/bench) is passed by, as it does not build the
// product.
func findRoot(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/flowyprompt/flowyprompt\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no flowyprompt go.mod above %s: run from the repository or pass -root", wd)
		}
	}
}

// build compiles flowyprompt from the root and the peers from the harness
// module, each in its own module, so the product never depends on the
// libraries it is compared with; GOWORK=off keeps a stray go.work from
// joining the two.
func build(ctx context.Context, log *slog.Logger, root, harness, bin string) error {
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	steps := []struct {
		dir  string
		args []string
	}{
		{root, []string{"build", "-o", filepath.Join(bin, "flowyprompt"), "./cmd/flowyprompt"}},
		{harness, []string{"build", "-o", filepath.Join(bin, "peer-mcpgo"), "./peers/mcpgo"}},
		{harness, []string{"build", "-o", filepath.Join(bin, "peer-gosdk"), "./peers/gosdk"}},
		{harness, []string{"build", "-o", filepath.Join(bin, "httpfloor"), "./cmd/httpfloor"}},
	}
	for _, s := range steps {
		log.Info("building", "dir", s.dir, "cmd", "go "+strings.Join(s.args, " "))
		cmd := exec.CommandContext(ctx, "go", s.args...)
		cmd.Dir = s.dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(s.args, " "), s.dir, err, out)
		}
	}
	return nil
}
