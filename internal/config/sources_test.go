package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const secretToken = "ghp_s3cretS3cretS3cret"

func TestSources(t *testing.T) {
	env := map[string]string{"TEAM_GITHUB_PAT": secretToken}
	team := SourceSpec{Name: "team", Kind: KindGitHub, Location: "https://github.com/acme/prompts", Ref: "main",
		TokenEnv: "TEAM_GITHUB_PAT", Token: secretToken}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []SourceSpec
	}{
		{"none", nil, nil, nil},
		{"github with a token from the environment", env,
			[]string{"--source", "name=team,github=https://github.com/acme/prompts,ref=main,token-env=TEAM_GITHUB_PAT"},
			[]SourceSpec{team}},
		{"a mix, in order", env, []string{
			"--source", "name=team, github=https://github.com/acme/prompts, ref=main, token-env=TEAM_GITHUB_PAT",
			"--source", "name=platform,github=https://ghe.example.com/ops/prompts,path=prompts,api-url=https://ghe.example.com/api/v3",
			"--source", "name=local,dir=./prompts",
			"--source", "name=examples,examples"},
			[]SourceSpec{team,
				{Name: "platform", Kind: KindGitHub, Location: "https://ghe.example.com/ops/prompts", Path: "prompts", APIURL: "https://ghe.example.com/api/v3"},
				{Name: "local", Kind: KindDir, Location: "./prompts"},
				{Name: "examples", Kind: KindExamples}}},
		{"from the environment", map[string]string{"TEAM_GITHUB_PAT": secretToken,
			SourcesEnv: "name=team,github=https://github.com/acme/prompts,ref=main,token-env=TEAM_GITHUB_PAT;\n name=ex,examples=true\n"},
			nil, []SourceSpec{team, {Name: "ex", Kind: KindExamples}}},
		{"flags win over the environment", map[string]string{SourcesEnv: "name=ex,examples"},
			[]string{"--source", "name=local,dir=p"}, []SourceSpec{{Name: "local", Kind: KindDir, Location: "p"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := registerGitHub(t, tt.env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSourcesRefused(t *testing.T) {
	env := map[string]string{"TEAM_GITHUB_PAT": secretToken, "EMPTY": "", "PLACEHOLDER": "${user_config.pat}"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"a token inline", []string{"--source", "name=team,github=https://github.com/acme/prompts,token=" + secretToken},
			nil, []string{"--source #1", "token= is refused", "visible to every user", "token-env=TEAM_GITHUB_PAT"}},
		{"a token inline, under another key", []string{"--source", "name=team,github=https://github.com/acme/prompts,pat=" + secretToken},
			nil, []string{"pat= is refused", "token-env="}},
		{"a token under an unknown key", []string{"--source", "name=team,github=https://github.com/acme/prompts,tokn=" + secretToken},
			nil, []string{`unknown key "tokn"`, "token-env"}},
		{"a token in the environment list", nil, map[string]string{SourcesEnv: "name=team,github=https://github.com/acme/prompts,token=" + secretToken},
			[]string{SourcesEnv + " entry 1", "token= is refused"}},
		{"token variable unset", []string{"--source", "name=team,github=https://github.com/a/b,token-env=NOPE"},
			nil, []string{"token-env=NOPE names an environment variable that is not set", "export NOPE"}},
		{"token variable empty", []string{"--source", "name=team,github=https://github.com/a/b,token-env=EMPTY"},
			nil, []string{"EMPTY names an environment variable that is not set"}},
		{"token variable a placeholder", []string{"--source", "name=team,github=https://github.com/a/b,token-env=PLACEHOLDER"},
			nil, []string{"unreplaced settings placeholder"}},
		{"no name", []string{"--source", "github=https://github.com/a/b"}, nil, []string{"name= is missing", "name=team"}},
		{"a bad name", []string{"--source", "name=a/b,dir=p"}, nil, []string{`name="a/b"`, "'/' is not allowed"}},
		{"no kind", []string{"--source", "name=a"}, nil, []string{"add github=URL, dir=PATH or examples"}},
		{"two kinds", []string{"--source", "name=a,dir=p,github=https://github.com/a/b"}, nil, []string{"both dir and github"}},
		{"empty dir", []string{"--source", "name=a,dir="}, nil, []string{"dir= is empty"}},
		{"ref on a folder", []string{"--source", "name=a,dir=p,ref=main"}, nil, []string{"ref= applies to GitHub sources only"}},
		{"not KEY=VALUE", []string{"--source", "name=a,dir"}, nil, []string{`"dir" is not KEY=VALUE`}},
		{"a key twice", []string{"--source", "name=a,name=b,examples"}, nil, []string{"name= is given twice"}},
		{"the same name twice", []string{"--source", "name=a,examples", "--source", "name=a,dir=p"}, nil,
			[]string{"--source #2: name=a is taken by --source #1"}},
		{"with a single source", []string{"--source", "name=a,examples", "--templates", "p"}, nil,
			[]string{"--source (a (built-in examples)) and a single source", "name=main,dir=PATH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tt.env {
				e[k] = v
			}
			c, _, err := registerGitHub(t, e, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check()
			if err == nil {
				t.Fatalf("Check accepted %v", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), secretToken) {
				t.Errorf("the error shows the token:\n%v", err)
			}
		})
	}
}

// TestSecretNeverPrinted: a spec formatted for a log or an error shows
// no token, however it is formatted.
func TestSecretNeverPrinted(t *testing.T) {
	s := SourceSpec{Name: "team", Kind: KindGitHub, Location: "https://github.com/acme/prompts", Token: secretToken}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(format, s); strings.Contains(got, secretToken) {
			t.Errorf("%s shows the token: %s", format, got)
		}
	}
}
