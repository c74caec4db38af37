package export

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
)

// served is what prompts/get sends for t: one user message with
// render.Prompt's text for a template without messages, else
// render.Conversation's messages.
func served(t *testing.T, tpl *templates.Template, args map[string]string) []render.Message {
	t.Helper()
	if len(tpl.Messages) == 0 {
		text, err := render.Prompt(tpl, args)
		if err != nil {
			t.Fatalf("render.Prompt: %v", err)
		}
		return []render.Message{{Role: templates.RoleUser, Text: text}}
	}
	msgs, err := render.Conversation(tpl, args)
	if err != nil {
		t.Fatalf("render.Conversation: %v", err)
	}
	return msgs
}

// argumentSets are the arguments a round trip renders t with: its own
// tests' arguments, a value for every variable, and for dotprompt (which
// keeps defaults and optional inputs) the required variables alone. A
// .prompt.yml file declares no inputs, so neither defaults nor types: its
// sets give every variable with a default that default, as a client
// filling the exported prompt's form would, and flags only as true.
func argumentSets(tpl *templates.Template, format string) map[string]map[string]string {
	defaults := map[string]string{}
	if format == PromptYML {
		for _, v := range tpl.Variables {
			if v.Default != nil {
				defaults[v.Name] = *v.Default
			}
		}
	}
	sets := map[string]map[string]string{}
	for _, test := range tpl.Tests {
		args := maps.Clone(defaults)
		maps.Copy(args, test.Arguments)
		sets["test "+test.Name] = args
	}
	all, required := map[string]string{}, map[string]string{}
	for _, v := range tpl.Variables {
		val := "value of " + v.Name + " with {{" + v.Name + "}} in it"
		switch {
		case len(v.Enum) > 0:
			val = v.Enum[len(v.Enum)-1]
		case len(v.Examples) > 0:
			val = v.Examples[0]
		case v.Type == templates.TypeBoolean:
			val = "true"
		case v.Type == templates.TypeNumber, v.Type == templates.TypeInteger:
			val = "3"
		case v.Type == templates.TypeArray:
			val = `["first", "second with {{` + v.Name + `}} in it"]`
		}
		all[v.Name] = val
		if v.Required {
			required[v.Name] = val
		}
	}
	sets["every variable"] = all
	if format == Dotprompt {
		sets["required variables"] = required
		// Picoschema keeps a flag's type: false renders as false.
		for _, v := range tpl.Variables {
			if v.Type == templates.TypeBoolean {
				off := maps.Clone(all)
				off[v.Name] = "false"
				sets[v.Name+" false"] = off
			}
		}
	}
	return sets
}

// Every built-in example, exported to dotprompt and to .prompt.yml and
// read back, renders what the original renders.
func TestRoundTripBuiltIns(t *testing.T) {
	cat, err := templates.Embedded().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cat.Len() < 16 {
		t.Fatalf("%d built-in templates", cat.Len())
	}
	for _, format := range []string{Dotprompt, PromptYML} {
		files, err := Library(cat, format)
		if err != nil {
			t.Fatal(err)
		}
		// A file a template, then one a partial (Refactoring_Plan's
		// answer_style).
		if len(files) != cat.Len()+len(cat.Partials()) || len(cat.Partials()) == 0 {
			t.Fatalf("%s: %d files for %d templates and %d partials", format, len(files), cat.Len(), len(cat.Partials()))
		}
		back := templates.Build(toFiles(files), templates.BuildOptions{})
		if inv := back.Invalid(); len(inv) > 0 {
			t.Fatalf("%s: exported files invalid: %v", format, inv)
		}
		for _, e := range cat.Templates() {
			orig := e.Template
			t.Run(format+"/"+orig.Metadata.Name, func(t *testing.T) {
				got, ok := back.Lookup(orig.Metadata.Name)
				if !ok {
					t.Fatalf("not read back")
				}
				if got.Template.Metadata.Description != orig.Metadata.Description {
					t.Errorf("description %q, want %q", got.Template.Metadata.Description, orig.Metadata.Description)
				}
				if diff := cmp.Diff(orig.Model, got.Template.Model); diff != "" {
					t.Errorf("model (-orig +back):\n%s", diff)
				}
				if len(got.Warnings) > 0 {
					t.Errorf("warnings: %v", got.Warnings)
				}
				for name, args := range argumentSets(orig, format) {
					want := served(t, orig, args)
					if diff := cmp.Diff(want, served(t, got.Template, args)); diff != "" {
						t.Errorf("%s: rendered (-orig +back):\n%s", name, diff)
					}
				}
			})
		}
	}
}

func toFiles(fs []File) []templates.File {
	out := make([]templates.File, len(fs))
	for i, f := range fs {
		out[i] = templates.File{Path: f.Path, Data: f.Data}
	}
	return out
}

func TestSkill(t *testing.T) {
	cat, err := templates.Embedded().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	files, err := Library(cat, Skill)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = string(f.Data)
	}
	md, ok := byPath["commit-message/SKILL.md"]
	if !ok || len(files) != cat.Len() {
		t.Fatalf("%d skills: %v", len(files), keys(byPath))
	}
	front, body, ok := strings.Cut(strings.TrimPrefix(md, "---\n"), "\n---\n")
	if !ok {
		t.Fatalf("no front matter:\n%s", md)
	}
	var fm map[string]string
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		t.Fatal(err)
	}
	commit, _ := cat.Lookup("Commit_Message")
	if fm["name"] != "commit-message" || fm["description"] != commit.Template.Metadata.Description || len(fm) != 2 {
		t.Errorf("front matter %v", fm)
	}
	for _, want := range []string{
		"## What to ask the user for",
		"- **diff** (required): The staged change",
		"- **style** (optional; if not given, use \"conventional\"): Message style",
		"One of: conventional, plain.",
		"## Instructions\n\n# Commit_Message\n",
		"```diff\n{{diff}}\n```",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("SKILL.md lacks %q:\n%s", want, body)
		}
	}
	// A conversation keeps its turns under their roles.
	if s := byPath["explain-code/SKILL.md"]; !strings.Contains(s, "## User\n\nYou explain code to a reader at the {{level}} level.") {
		t.Errorf("explain-code:\n%s", s)
	}
}

func TestSkillName(t *testing.T) {
	for in, want := range map[string]string{
		"Code_Review": "code-review", "API__Design--Review_": "api-design-review", "_x": "x", "한국어": "prompt",
		strings.Repeat("ab_", 40): strings.TrimRight(strings.Repeat("ab-", 40)[:64], "-"),
	} {
		if got := SkillName(in); got != want {
			t.Errorf("SkillName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := Template(&templates.Template{}, "markdown"); err == nil || !strings.Contains(err.Error(), "dotprompt, prompt-yml, skill") {
		t.Errorf("err = %v", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
