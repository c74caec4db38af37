package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/github"
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
}

// Secret is a credential: it prints as [redacted], so a spec logged or
// formatted with %v never shows it.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return "[redacted]" }

// sourceKeys are the keys a SPEC may hold, for the error that names an
// unknown one.
var sourceKeys = "name, github, dir, examples, ref, path, api-url, token-env"

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
		for _, k := range []string{"ref", "path", "api-url", "token-env"} {
			if seen[k] {
				bad("%s= applies to GitHub sources only: remove it, or use github=URL", k)
			}
		}
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
