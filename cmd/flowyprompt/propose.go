package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/templates"
)

// proposer is a source that proposes templates as a pull request: the
// GitHub source.
type proposer interface {
	Propose(ctx context.Context, changes []github.Change, message string) (templates.Proposal, error)
}

var _ proposer = (*github.Source)(nil)

// cmdPropose validates template files, runs their tests, and proposes
// them to a GitHub library as one pull request (opened, or updated when
// this token's open one for the same templates exists), printing its URL.
func cmdPropose(ctx context.Context, args []string, stdout, stderr io.Writer, lookup env) error {
	fs := newFlagSet("propose", "propose FILE... [--source NS] [--message TEXT] [flags]", stderr)
	message := fs.String("message", "", "the pull request's title and the commits' message (default: \"Add NAME\" or \"Update NAME\")")
	var cfg config.Config
	envErr := config.RegisterSource(fs, &cfg, config.Env(lookup))
	oneShotHelp(fs, "warn", lookup)
	ns, args := sourcePick(args)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := errors.Join(envErr, cfg.Check()); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("bad configuration:\n%w", err)}
	}
	if len(files) == 0 {
		return cmdUsageError("propose", "propose needs at least one template file")
	}
	if _, fromEnv := lookup("LOG_LEVEL"); !fromEnv && !flagSet(fs, "log-level") {
		cfg.LogLevel = "warn"
	}
	log := cfg.Logger(stderr)

	// Check every file before anything is sent: a reviewer should never
	// get an invalid template or one whose tests fail.
	var changes []github.Change
	bad := false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("cannot read %s: %w", f, err)}
		}
		t, warns, err := templates.Parse(data, templates.ParseOptions{MaxFileSize: cfg.MaxFileSize})
		if err != nil {
			fmt.Fprintf(stdout, "INVALID %s: %s\n", f, invalidReason(err))
			bad = true
			continue
		}
		fmt.Fprintf(stdout, "valid %s: %s v%s\n", f, t.Metadata.Name, t.Metadata.Version)
		for _, w := range warns {
			fmt.Fprintf(stdout, "  warning: %s\n", w)
		}
		for _, r := range testrun.Run(t) {
			fmt.Fprintln(stdout, "  "+r.Line())
			bad = bad || r.Status == testrun.Fail
		}
		changes = append(changes, github.Change{Name: t.Metadata.Name, Content: data})
	}
	if bad {
		return &exitError{code: 1, err: errors.New("nothing proposed: fix the invalid files and failing tests above, then propose again")}
	}

	src, err := openSource(&cfg, log, nil)
	if err != nil {
		return namedAsGiven(err, fs)
	}
	p, err := proposerFor(src, &cfg, ns)
	if err != nil {
		return err
	}
	pr, err := p.Propose(ctx, changes, *message)
	if err != nil {
		return namedAsGiven(explainSources(err, &cfg), fs)
	}
	verb := "Opened"
	if pr.Updated {
		verb = "Updated"
	}
	fmt.Fprintf(stdout, "%s pull request #%d (branch %s):\n%s\n", verb, pr.Number, pr.Branch, pr.URL)
	return nil
}

// proposerFor is the GitHub source to propose to: the --source named ns,
// else the one GitHub source configured.
func proposerFor(src templates.Source, cfg *config.Config, ns string) (proposer, error) {
	var githubs []string
	for _, s := range cfg.Sources {
		if s.Kind == config.KindGitHub {
			githubs = append(githubs, s.Name)
		}
	}
	c, isComposite := src.(*templates.Composite)
	switch {
	case !isComposite && ns != "":
		return nil, cmdUsageError("propose", "--source %s names a source, but none is configured: give the sources as --source SPEC or FLOWYPROMPT_SOURCES", ns)
	case !isComposite:
		if p, ok := src.(proposer); ok {
			return p, nil
		}
		return nil, cmdUsageError("propose", "propose needs a GitHub library: set GITHUB_REPO_URL (or --github-repo) and GITHUB_PAT, or name a GitHub --source")
	case ns == "" && len(githubs) == 1:
		ns = githubs[0]
	case ns == "":
		return nil, cmdUsageError("propose", "name the GitHub source to propose to with --source NS, one of: %s", strings.Join(githubs, ", "))
	}
	for _, m := range c.Members() {
		if m.Namespace != ns {
			continue
		}
		if p, ok := m.Source.(proposer); ok {
			return p, nil
		}
		return nil, cmdUsageError("propose", "source %s is not a GitHub repository: only a GitHub source takes proposals (GitHub sources: %s)", ns, strings.Join(githubs, ", "))
	}
	return nil, cmdUsageError("propose", "no source is named %s (GitHub sources: %s)", ns, strings.Join(githubs, ", "))
}

// sourcePick takes out of args the --source whose value is a bare
// namespace (no '='): which of the configured sources to propose to. A
// --source SPEC (name=…,github=…) stays, for the configuration.
func sourcePick(args []string) (ns string, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ns, append(rest, args[i:]...)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "source" {
			rest = append(rest, a)
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
			if !strings.Contains(value, "=") {
				ns, i = value, i+1
				continue
			}
		}
		if hasValue && !strings.Contains(value, "=") {
			ns = value
			continue
		}
		rest = append(rest, a)
	}
	return ns, rest
}
