package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"github.com/flowyprompt/flowyprompt/templates"
)

// SourcesEnv holds the --source values when no --source flag is given:
// one SPEC per line, or separated by ';'.
const SourcesEnv = "FLOWYPROMPT_SOURCES"

// Kinds of a SourceSpec.
const (
	KindGitHub   = "github"
	KindDir      = "dir"
	KindExamples = "examples"
)

// SourceSpec is one --source: a namespace and where its templates come
// from. The order of the specs is the precedence of bare names.
type SourceSpec struct {
	Name string // the namespace: templates are served as NAME/TEMPLATE
	Kind string // KindGitHub, KindDir or KindExamples
	// Location is the repository URL or the folder.
	Location string
	// GitHub only; empty means the single-source defaults (the default
	// branch, --github-path, --github-api-url).
	Ref, Path, APIURL string
	// TokenEnv names the environment variable holding the token; Token is
	// what it held when the configuration was read.
	TokenEnv string
	Token    Secret
	// Labels are the refs a GitHub source serves by label (labels=), the
	// default first; Ref is then the default's ref.
	Labels []Label
}

// Label is one label of a GitHub source: its name and the Git ref it
// serves (a branch, a tag or a commit).
type Label struct {
	Name, Ref string
}

// Secret is a credential: it prints as [redacted], so a spec logged or
// formatted with %v never shows it.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return "[redacted]" }

// sourceKeys are the keys a SPEC may hold, for the error that names an
// unknown one.
var sourceKeys = "name, github, dir, examples, ref, labels, path, api-url, token-env"

// parseSourceSpec reads one SPEC: comma-separated key=value pairs. where
// says where it came from ("--source #2") for errors. A value is never
// echoed in an error: a mistyped key may hold a token.
func parseSourceSpec(spec, where string, env Env) (SourceSpec, error) {
	var s SourceSpec
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(where+": "+format, args...))
	}
	seen := map[string]bool{}
	for _, field := range strings.Split(spec, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		key, value, hasValue := strings.Cut(field, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if seen[key] {
			bad("%s= is given twice: give it once", key)
			continue
		}
		seen[key] = true
		if !hasValue && key != KindExamples {
			bad("%q is not KEY=VALUE: write e.g. name=team,github=https://github.com/acme/prompts", key)
			continue
		}
		switch key {
		case "name":
			s.Name = value
		case KindGitHub, KindDir:
			if s.Kind != "" {
				bad("both %s and %s are given: a --source is one of github=URL, dir=PATH or examples; use one --source for each", s.Kind, key)
				continue
			}
			s.Kind, s.Location = key, value
		case KindExamples:
			if hasValue && value != "true" {
				bad("examples takes no value: write examples alone")
				continue
			}
			if s.Kind != "" {
				bad("both %s and examples are given: use one --source for each", s.Kind)
				continue
			}
			s.Kind = KindExamples
		case "ref":
			s.Ref = value
		case "labels":
			labels, err := ParseLabels(value)
			if err != nil {
				bad("labels=: %v", err)
				continue
			}
			s.Labels = labels
		case "path":
			s.Path = value
		case "api-url":
			s.APIURL = value
		case "token-env":
			s.TokenEnv = value
		case "token", "pat", "github-token", "github_pat":
			// Command lines are visible to every user of the machine (ps,
			// /proc): a token is only ever read from the environment.
			bad("%s= is refused: a token on the command line is visible to every user of the machine; "+
				"put it in an environment variable and name that variable instead, e.g. export TEAM_GITHUB_PAT=… and token-env=TEAM_GITHUB_PAT", key)
		default:
			bad("unknown key %q: the keys are %s", key, sourceKeys)
		}
	}
	if s.Name == "" {
		bad("name= is missing: every --source needs a namespace, e.g. name=team, under which its templates are served (team/Code_Review)")
	} else if err := templates.ValidateNamespace(s.Name); err != nil {
		bad("name=%q: %v", s.Name, err)
	}
	switch s.Kind {
	case "":
		bad("the source is missing: add github=URL, dir=PATH or examples")
	case KindGitHub:
		if s.Location == "" {
			bad("github= is empty: give the repository URL, e.g. github=https://github.com/acme/prompts")
		}
	case KindDir:
		if s.Location == "" {
			bad("dir= is empty: give the template folder, e.g. dir=./prompts")
		}
	}
	if s.Kind != KindGitHub {
		for _, k := range []string{"ref", "labels", "path", "api-url", "token-env"} {
			if seen[k] {
				bad("%s= applies to GitHub sources only: remove it, or use github=URL", k)
			}
		}
	}
	if len(s.Labels) > 0 {
		if s.Ref != "" {
			bad("ref= and labels= are both given: the first label's ref is the ref served by default; remove ref=, e.g. labels=production:%s+staging:staging", s.Ref)
		}
		s.Ref = s.Labels[0].Ref
	}
	if s.TokenEnv != "" {
		v, ok := env(s.TokenEnv)
		switch {
		case !ok || v == "":
			bad("token-env=%s names an environment variable that is not set: export %s with the token, or remove token-env= for a public repository", s.TokenEnv, s.TokenEnv)
		case Unreplaced(v):
			bad("token-env=%s holds an unreplaced settings placeholder, not a token: set the token in the host's settings", s.TokenEnv)
		default:
			s.Token = Secret(v)
		}
	}
	return s, errors.Join(errs...)
}

// ParseLabels reads a labels= value, NAME:REF pairs joined by '+' (a
// SPEC's values cannot hold commas), the default first:
// production:main+staging:staging+canary:v2.3.0. Every problem is
// reported, joined.
func ParseLabels(v string) ([]Label, error) {
	var out []Label
	var errs []error
	seen := map[string]bool{}
	for i, item := range strings.Split(v, "+") {
		item = strings.TrimSpace(item)
		name, ref, ok := strings.Cut(item, ":")
		name, ref = strings.TrimSpace(name), strings.TrimSpace(ref)
		switch {
		case item == "":
			errs = append(errs, fmt.Errorf("label #%d is empty: write NAME:REF pairs joined by '+', e.g. production:main+staging:staging", i+1))
			continue
		case !ok || ref == "":
			errs = append(errs, fmt.Errorf("label %q names no ref: write NAME:REF, e.g. %s:main (a branch, tag or commit)", name, name))
			continue
		}
		if err := label.Valid(name); err != nil {
			errs = append(errs, err)
			continue
		}
		if !github.ValidRef(ref) {
			errs = append(errs, fmt.Errorf("label %s: %q is not a valid Git ref: give a branch, tag or commit, e.g. %s:main", name, ref, name))
			continue
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("label %s is given twice: give each label once", name))
			continue
		}
		seen[name] = true
		out = append(out, Label{Name: name, Ref: ref})
	}
	return out, errors.Join(errs...)
}

// parseSources reads the specs from --source flags, or from
// FLOWYPROMPT_SOURCES when no flag is given.
func parseSources(flags []string, env Env) ([]SourceSpec, error) {
	type raw struct{ spec, where string }
	var specs []raw
	if len(flags) > 0 {
		for i, f := range flags {
			specs = append(specs, raw{f, fmt.Sprintf("--source #%d", i+1)})
		}
	} else if v, _ := env(SourcesEnv); strings.TrimSpace(v) != "" {
		i := 0
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '\n' }) {
			if f = strings.TrimSpace(f); f != "" {
				i++
				specs = append(specs, raw{f, fmt.Sprintf("%s entry %d", SourcesEnv, i)})
			}
		}
	}
	var out []SourceSpec
	var errs []error
	names := map[string]string{}
	for _, r := range specs {
		s, err := parseSourceSpec(r.spec, r.where, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, dup := names[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name=%s is taken by %s: give each source its own name", r.where, s.Name, first))
			continue
		}
		names[s.Name] = r.where
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// describe names a spec's origin for messages, without its token.
func (s SourceSpec) describe() string {
	switch s.Kind {
	case KindGitHub:
		return s.Name + " (" + github.Redact(s.Location) + ")"
	case KindDir:
		return s.Name + " (" + s.Location + ")"
	}
	return s.Name + " (built-in examples)"
}

// checkLabels reads --github-labels and checks --label against the labels
// the sources name.
func (c *Config) checkLabels() []error {
	var errs []error
	if c.githubLabels != "" && c.GitHubLabels == nil {
		labels, err := ParseLabels(c.githubLabels)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--github-labels / GITHUB_LABELS: %w", err))
		case c.GitHubRepoURL == "":
			errs = append(errs, errors.New("--github-labels / GITHUB_LABELS is set without a GitHub repository: set --github-repo, or give labels= in a --source"))
		case c.GitHubRef != "":
			errs = append(errs, fmt.Errorf("--github-ref / GITHUB_REF (%s) and --github-labels are both set: the first label's ref is the ref served by default; unset GITHUB_REF", c.GitHubRef))
		default:
			c.GitHubLabels = labels
			c.GitHubRef = labels[0].Ref
		}
	}
	// The default label's library is the one served by default: each
	// source at its first label's ref. Sources whose first labels differ
	// would make a label name both the default and another library.
	var first string
	var defaults []string
	differ := false
	for _, s := range c.Sources {
		if len(s.Labels) == 0 {
			continue
		}
		defaults = append(defaults, s.Name+": "+s.Labels[0].Name)
		if first == "" {
			first = s.Labels[0].Name
		}
		differ = differ || s.Labels[0].Name != first
	}
	if differ {
		errs = append(errs, fmt.Errorf("the sources name different default labels (%s): the first label is the one served by default, so name the same label first in each, e.g. %s:REF+…",
			strings.Join(defaults, ", "), first))
	}
	if c.Label == "" {
		return errs
	}
	names := c.LabelNames()
	switch {
	case label.Valid(c.Label) != nil:
		errs = append(errs, fmt.Errorf("--label / FLOWYPROMPT_LABEL: %w", label.Valid(c.Label)))
	case len(names) == 0:
		errs = append(errs, fmt.Errorf("--label / FLOWYPROMPT_LABEL %s is set, but no source names labels: give a GitHub --source labels=, e.g. labels=production:main+%s:%s, or unset it", c.Label, c.Label, c.Label))
	case !slices.Contains(names, c.Label):
		errs = append(errs, fmt.Errorf("--label / FLOWYPROMPT_LABEL %s is not a label of the sources: the labels are %s", c.Label, strings.Join(names, ", ")))
	}
	return errs
}

// LabelNames are the labels the sources name, the default (the first
// label of the first source that names labels) first, then the others in
// the order they are given; none when no source names labels.
func (c *Config) LabelNames() []string {
	var names []string
	add := func(ls []Label) {
		for _, l := range ls {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		}
	}
	add(c.GitHubLabels)
	for _, s := range c.Sources {
		add(s.Labels)
	}
	return names
}
