package config

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// registerServe registers every flag serve has and parses args.
func registerServe(t *testing.T, env map[string]string, args ...string) *Config {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := Register(fs, &c, lookup); err != nil {
		t.Fatal(err)
	}
	if err := RegisterServe(fs, &c, lookup); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return &c
}

func TestLabels(t *testing.T) {
	const repo = "https://github.com/acme/prompts"
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		sources   []SourceSpec
		single    []Label
		ref       string
		names     []string
		wantLabel string
	}{
		{name: "none", args: []string{"--source", "name=team,github=" + repo}, sources: []SourceSpec{{Name: "team", Kind: KindGitHub, Location: repo}}},
		{name: "three, the first the default",
			args: []string{"--source", "name=team,github=" + repo + ",labels=production:main+staging:staging+canary:v2.3.0"},
			sources: []SourceSpec{{Name: "team", Kind: KindGitHub, Location: repo, Ref: "main",
				Labels: []Label{{"production", "main"}, {"staging", "staging"}, {"canary", "v2.3.0"}}}},
			names: []string{"production", "staging", "canary"}},
		{name: "spaces and a commit", args: []string{"--source", "name=team,github=" + repo + ", labels= production : main + old:0123456789abcdef0123456789abcdef01234567"},
			sources: []SourceSpec{{Name: "team", Kind: KindGitHub, Location: repo, Ref: "main",
				Labels: []Label{{"production", "main"}, {"old", "0123456789abcdef0123456789abcdef01234567"}}}},
			names: []string{"production", "old"}},
		{name: "two sources: the union, the first source's default first",
			args: []string{"--source", "name=team,github=" + repo + ",labels=production:main+staging:staging",
				"--source", "name=ops,github=https://github.com/acme/ops,labels=production:main+staging:next+canary:canary", "--label", "canary"},
			sources: []SourceSpec{
				{Name: "team", Kind: KindGitHub, Location: repo, Ref: "main", Labels: []Label{{"production", "main"}, {"staging", "staging"}}},
				{Name: "ops", Kind: KindGitHub, Location: "https://github.com/acme/ops", Ref: "main", Labels: []Label{{"production", "main"}, {"staging", "next"}, {"canary", "canary"}}}},
			names: []string{"production", "staging", "canary"}, wantLabel: "canary"},
		{name: "the single source", env: map[string]string{"GITHUB_REPO_URL": repo, "FLOWYPROMPT_LABEL": "staging"},
			args:   []string{"--github-labels", "production:main+staging:staging"},
			single: []Label{{"production", "main"}, {"staging", "staging"}}, ref: "main",
			names: []string{"production", "staging"}, wantLabel: "staging"},
		{name: "the single source, from the environment", env: map[string]string{"GITHUB_REPO_URL": repo, "GITHUB_LABELS": "live:v2+next:main"},
			single: []Label{{"live", "v2"}, {"next", "main"}}, ref: "v2", names: []string{"live", "next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := registerServe(t, tt.env, tt.args...)
			if err := c.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.sources, c.Sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.single, c.GitHubLabels); diff != "" {
				t.Errorf("--github-labels (-want +got):\n%s", diff)
			}
			if c.GitHubRef != tt.ref {
				t.Errorf("GitHubRef = %q, want %q", c.GitHubRef, tt.ref)
			}
			if diff := cmp.Diff(tt.names, c.LabelNames()); diff != "" {
				t.Errorf("LabelNames (-want +got):\n%s", diff)
			}
			if c.Label != tt.wantLabel {
				t.Errorf("Label = %q, want %q", c.Label, tt.wantLabel)
			}
		})
	}
}

func TestLabelsRefused(t *testing.T) {
	const src = "name=team,github=https://github.com/acme/prompts,labels="
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"a bad name", nil, []string{"--source", src + "Prod:main"}, []string{"--source #1: labels=", `label "Prod" is not a name of lower-case letters`}},
		{"a label twice", nil, []string{"--source", src + "prod:main+prod:next"}, []string{"label prod is given twice"}},
		{"an empty ref", nil, []string{"--source", src + "prod:"}, []string{`label "prod" names no ref`, "prod:main"}},
		{"no ref at all", nil, []string{"--source", src + "prod"}, []string{`label "prod" names no ref`}},
		{"an empty label", nil, []string{"--source", src + "prod:main++next:next"}, []string{"label #2 is empty", "NAME:REF pairs joined by '+'"}},
		{"nothing", nil, []string{"--source", src}, []string{"label #1 is empty"}},
		{"a bad ref", nil, []string{"--source", src + "prod:ma..in"}, []string{`label prod: "ma..in" is not a valid Git ref`}},
		{"every problem at once", nil, []string{"--source", src + "A:main+b:+b:x+b:y"}, []string{`label "A"`, `label "b" names no ref`, "label b is given twice"}},
		{"with ref=", nil, []string{"--source", src + "prod:main,ref=main"}, []string{"ref= and labels= are both given", "remove ref="}},
		{"different defaults", nil, []string{"--source", src + "production:main+staging:staging", "--source", "name=ops,github=https://github.com/acme/ops,labels=live:main"},
			[]string{"different default labels (team: production, ops: live)", "name the same label first in each"}},
		{"on a folder", nil, []string{"--source", "name=a,dir=p,labels=prod:main"}, []string{"labels= applies to GitHub sources only"}},
		{"--label unknown", nil, []string{"--source", src + "production:main+staging:staging", "--label", "canary"},
			[]string{"--label / FLOWYPROMPT_LABEL canary is not a label of the sources: the labels are production, staging"}},
		{"--label without labels", nil, []string{"--label", "staging"}, []string{"no source names labels", "labels=production:main+staging:staging"}},
		{"--label badly named", nil, []string{"--source", src + "production:main", "--label", "Staging!"}, []string{"--label / FLOWYPROMPT_LABEL: label \"Staging!\""}},
		{"--github-labels without a repository", nil, []string{"--github-labels", "prod:main"}, []string{"without a GitHub repository"}},
		{"--github-labels with GITHUB_REF", map[string]string{"GITHUB_REPO_URL": "https://github.com/a/b", "GITHUB_REF": "main"},
			[]string{"--github-labels", "prod:main"}, []string{"GITHUB_REF (main) and --github-labels are both set"}},
		{"--github-labels badly written", map[string]string{"GITHUB_REPO_URL": "https://github.com/a/b"},
			[]string{"--github-labels", "prod=main"}, []string{"--github-labels / GITHUB_LABELS", `label "prod=main" names no ref`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := registerServe(t, tt.env, tt.args...)
			err := c.Check()
			if err == nil {
				t.Fatalf("Check accepted %v", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
