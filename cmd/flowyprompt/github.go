package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// githubSource builds the GitHub source from the configuration, refusing
// bad settings with what / why / how before any request is made. With a
// link (serve --nats), the replicas share one catalog and one
// revalidation per TTL through the cluster.
func githubSource(cfg *config.Config, log *slog.Logger, link replicas) (*github.Source, error) {
	gc := github.Config{
		RepoURL: cfg.GitHubRepoURL, Token: cfg.GitHubToken, Ref: cfg.GitHubRef, Path: cfg.GitHubPath,
		APIURL: cfg.GitHubAPIURL, TTL: cfg.CacheTTL, MaxFileSize: cfg.MaxFileSize, CacheDir: cfg.CacheDir, Logger: log,
		VersionLookups: cfg.VersionLookups, TokenVar: cfg.GitHubTokenVar, Blobs: cfg.Blobs,
	}
	if link != nil {
		gc.Shared, gc.Replica = link.shared()
	}
	// NewSource validates gc (every problem, joined) before it does
	// anything else, and that is its only failure.
	src, err := github.NewSource(gc)
	if err != nil {
		return nil, badConfig("bad GitHub configuration", err)
	}
	return src, nil
}

// compositeSource builds the sources of --source, each under its
// namespace, in their order. Each GitHub source is a github.Source of its
// own: its disk cache files and its shared catalog in the cluster are
// keyed by repository, ref and path, so they never mix.
func compositeSource(cfg *config.Config, log *slog.Logger, link replicas) (templates.Source, error) {
	var members []templates.Member
	var errs []error
	for _, spec := range cfg.Sources {
		// Each member is opened as the one source of a configuration
		// that names only it.
		one := *cfg
		one.Sources, one.GitHubRepoURL, one.TemplatesDir = nil, "", ""
		switch spec.Kind {
		case config.KindGitHub:
			one.GitHubRepoURL, one.GitHubRef, one.GitHubToken = spec.Location, spec.Ref, string(spec.Token)
			// Its messages name its own variable, also when a refresh
			// fails long after start-up.
			one.GitHubTokenVar = spec.TokenEnv + " (token-env= of --source " + spec.Name + ")"
			if spec.TokenEnv == "" {
				one.GitHubTokenVar = "a token variable named by token-env= in --source " + spec.Name
			}
			if spec.Path != "" {
				one.GitHubPath = spec.Path
			}
			if spec.APIURL != "" {
				one.GitHubAPIURL = spec.APIURL
			}
		case config.KindDir:
			one.TemplatesDir = spec.Location
		}
		src, err := openSource(&one, log.With("source", spec.Name), link)
		if err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", spec.Name, err))
			continue
		}
		members = append(members, templates.Member{Namespace: spec.Name, Source: src})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c, err := templates.NewComposite(members, log)
	if err != nil {
		return nil, badConfig("bad --source configuration", err)
	}
	return c, nil
}

// explainSources explains each source's failure of a --source library,
// naming the source. The GitHub source's fixes name the single-source
// settings (GITHUB_PAT, GITHUB_REPO_URL, GITHUB_REF); for a --source
// repository they are its token-env=, github= and ref=, so they are
// named that way.
func explainSources(err error, cfg *config.Config) error {
	if len(cfg.Sources) == 0 {
		return explain(err)
	}
	var parts []string
	for _, e := range leaves(err) {
		var me *templates.MemberError
		if !errors.As(e, &me) {
			parts = append(parts, explain(e).Error())
			continue
		}
		text := explain(me.Err).Error()
		for _, spec := range cfg.Sources {
			if spec.Name != me.Namespace || spec.Kind != config.KindGitHub {
				continue
			}
			token := "the variable token-env= names in --source " + spec.Name
			if spec.TokenEnv != "" {
				token = spec.TokenEnv + " (token-env= of --source " + spec.Name + ")"
			}
			text = strings.NewReplacer("GITHUB_PAT", token,
				"GITHUB_REPO_URL", "github= of --source "+spec.Name,
				"GITHUB_REF", "ref= of --source "+spec.Name).Replace(text)
		}
		parts = append(parts, "source "+me.Namespace+": "+text)
	}
	return &exitError{code: 1, err: errors.New(strings.Join(parts, "\n"))}
}

// githubFlags are the flags of the GitHub settings, by the variable the
// GitHub source's messages name.
var githubFlags = [][2]string{{"GITHUB_REPO_URL", "github-repo"}, {"GITHUB_REF", "github-ref"},
	{"GITHUB_TEMPLATES_PATH", "github-path"}, {"GITHUB_API_URL", "github-api-url"}}

// namedAsGiven makes the GitHub source's messages, which name its
// settings by their variables, name the flag instead where the command
// line gave one: a flag wins over its variable, so "set GITHUB_REPO_URL
// to …" would fix nothing after --github-repo. Only for the single
// source: a --source repository's settings are named by explainSources.
func namedAsGiven(err error, fs *flag.FlagSet) error {
	var pairs []string
	for _, vf := range githubFlags {
		if flagSet(fs, vf[1]) {
			pairs = append(pairs, vf[0], "--"+vf[1])
		}
	}
	if err == nil || len(pairs) == 0 {
		return err
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	return &exitError{code: code, err: &explained{text: strings.NewReplacer(pairs...).Replace(err.Error()), err: err}}
}

// badConfig is a configuration refused at startup: exit status 2, and a
// message giving what, why and how to fix each problem, since
// fault.Error.Error() leaves out the fix and a user at a terminal needs it
// most. The problems stay wrapped for errors.As.
func badConfig(title string, err error) error {
	var b strings.Builder
	b.WriteString(title + ":")
	for _, e := range leaves(err) {
		text := e.Error()
		if fault.As(e) != nil {
			text = explain(e).Error() // code, what, why, and the fix
		}
		b.WriteString("\n  " + strings.ReplaceAll(text, "\n", "\n  "))
	}
	return &exitError{code: 2, err: &explained{text: b.String(), err: err}}
}

// leaves splits an errors.Join tree (Config.Validate joins one fault per
// bad setting) into its problems.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// explained is an error whose text was written for a person, over the
// error it explains.
type explained struct {
	text string
	err  error
}

func (e *explained) Error() string { return e.text }
func (e *explained) Unwrap() error { return e.err }

// writerFor returns what the save tool writes through: the GitHub
// source proposes pull requests, the folder source writes files; the
// built-in examples cannot be written.
func writerFor(src templates.Source) app.TemplateWriter {
	if w, ok := src.(app.TemplateWriter); ok {
		return w
	}
	return nil
}

// cmdCheck verifies the configuration and the connection, the way the
// seed's validateConnection() meant: repository, ref → commit, valid and
// invalid templates with reasons, rate limit.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("check", "check [--json] [flags]", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	var cfg config.Config
	envErr := config.RegisterSource(fs, &cfg, config.Env(lookup))
	oneShotHelp(fs, "error", lookup)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := errors.Join(envErr, cfg.Check()); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("bad configuration:\n%w", err)}
	}
	if _, fromEnv := lookup("LOG_LEVEL"); !fromEnv && !flagSet(fs, "log-level") {
		// check reports every problem it finds (invalid files, GitHub
		// failing) on its own, once: a warning logged as well would
		// say it twice.
		cfg.LogLevel = "error"
	}
	log := cfg.Logger(stderr)
	if cfg.GitHubRepoURL == "" {
		return checkLocal(ctx, &cfg, log, stdout, *asJSON)
	}
	src, err := githubSource(&cfg, log, nil)
	if err != nil {
		return namedAsGiven(err, fs)
	}
	rep, err := src.Check(ctx)
	if *asJSON && rep != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(rep); encErr != nil {
			return encErr
		}
	} else if rep != nil {
		// The error, with its code and fix, goes to stderr below, once.
		text := *rep
		if err != nil {
			text.Error, text.Fix = "", ""
		}
		fmt.Fprintln(stdout, text.String())
	}
	if err != nil {
		return namedAsGiven(explain(err), fs)
	}
	if len(rep.Invalid) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d template file(s) are invalid", len(rep.Invalid))}
	}
	if len(rep.MissingResources) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d file(s) listed in templates' resources cannot be served: add them to the repository or fix the paths", len(rep.MissingResources))}
	}
	return nil
}

// checkLocal reports on a folder or the built-in examples.
func checkLocal(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer, asJSON bool) error {
	src, err := openSource(cfg, log, nil)
	if err != nil {
		return err
	}
	cat, err := src.Load(ctx)
	if err != nil {
		return explainSources(err, cfg)
	}
	type invalid struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	}
	type missing struct {
		Path    string `json:"path"`
		Pointer string `json:"pointer"`
		Error   string `json:"error"`
	}
	rep := struct {
		Source  templates.SourceInfo `json:"source"`
		Valid   int                  `json:"valid"`
		Flows   []string             `json:"flows"` // the valid flows' names
		Invalid []invalid            `json:"invalid"`
		// Missing are the listed resources that cannot be read: the
		// templates are served without them.
		Missing []missing `json:"missing_resources"`
		// Conflicts are names several --source libraries define: served,
		// but a bare name may not be the template meant.
		Conflicts []templates.Conflict `json:"conflicts"`
	}{Source: cat.Info(), Valid: cat.Len(), Invalid: []invalid{}, Missing: []missing{}, Conflicts: cat.Conflicts()}
	for _, i := range cat.Invalid() {
		rep.Invalid = append(rep.Invalid, invalid{i.Path, i.Err.Error()})
	}
	rep.Flows = []string{}
	for _, fe := range cat.Flows() {
		rep.Flows = append(rep.Flows, fe.Flow.Name)
	}
	rr, _ := src.(templates.ResourceReader)
	for _, e := range cat.Templates() {
		for _, p := range resourceProblems(ctx, rr, cat, e.Template) {
			rep.Missing = append(rep.Missing, missing{e.Path, p.Pointer, p.Message})
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "source:    %s %s\ntemplates: %d valid, %d invalid\n", rep.Source.Kind, rep.Source.Location, rep.Valid, len(rep.Invalid))
		for _, i := range rep.Invalid {
			fmt.Fprintf(stdout, "  %s: %s\n", i.Path, i.Error)
		}
		if len(rep.Flows) > 0 {
			fmt.Fprintf(stdout, "flows:     %d valid: %s\n", len(rep.Flows), strings.Join(rep.Flows, ", "))
		}
		if len(rep.Conflicts) > 0 {
			fmt.Fprintf(stdout, "conflicts: %d name(s) defined by several sources (each served as NAMESPACE/NAME; the bare name by the first):\n", len(rep.Conflicts))
			for _, c := range rep.Conflicts {
				name := c.Name
				if c.Flow {
					name = "flow:" + name // as its prompt is named, so it is not read as a template's
				}
				fmt.Fprintf(stdout, "  %s: %s\n", name, strings.Join(c.Namespaces, ", "))
			}
		}
		if len(rep.Missing) > 0 {
			fmt.Fprintf(stdout, "resources: %d listed resource(s) cannot be read (the templates are served without them):\n", len(rep.Missing))
			for _, m := range rep.Missing {
				fmt.Fprintf(stdout, "  %s: %s: %s\n", m.Path, m.Pointer, m.Error)
			}
		}
	}
	if len(rep.Invalid) > 0 || len(rep.Missing) > 0 {
		return &exitError{code: 1}
	}
	return nil
}
