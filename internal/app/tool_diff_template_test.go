package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xeipuuv/gojsonschema"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/internal/golden"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// greetingAt is a Greeting template at version, written out one member a
// line as people write them, so that its file diff reads line by line: a
// variable with a default (its example value) and the line it greets with.
func greetingAt(version, line string) []byte {
	return []byte(`{
  "metadata": {
    "name": "Greeting",
    "description": "Greets someone",
    "version": "` + version + `"
  },
  "variables": [
    {"name": "who", "type": "string", "description": "Who to greet", "default": "the team"}
  ],
  "results": [
    {"name": "Greeting", "content": "` + line + `"},
    {"name": "Sign-off", "content": "Thanks."}
  ]
}
`)
}

const greetingPath = "templates/Greeting.json"

// diffRepo is a fake repository whose Greeting went through 1.0.0
// (tagged greeting-first), 1.1.0 and 2.0.0, the one served.
func diffRepo(t *testing.T) (*fakegithub.Server, [3]string) {
	t.Helper()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	var c [3]string
	c[0] = fake.CommitFiles("Greeting 1.0.0", map[string][]byte{greetingPath: greetingAt("1.0.0", "Hello, {{who}}.")})
	fake.SetTag("greeting-first", c[0])
	c[1] = fake.CommitFiles("Greeting 1.1.0", map[string][]byte{greetingPath: greetingAt("1.1.0", "Hello, {{who}}!")})
	c[2] = fake.CommitFiles("Greeting 2.0.0", map[string][]byte{greetingPath: greetingAt("2.0.0", "Good morning, {{who}}!")})
	return fake, c
}

// proposing is a GitHub source with pull requests, each proposing files
// by path: the templates.Proposals a GitHub source offers, in the test's
// hands.
type proposing struct {
	*github.Source
	pulls map[int]map[string][]byte
}

func (p *proposing) ProposedFile(_ context.Context, number int, name string) ([]byte, string, error) {
	data, ok := p.pulls[number][name]
	if !ok {
		return nil, "", &fault.Error{Code: fault.GitHubNotFound, What: fmt.Sprintf("pull request #%d proposes no %s", number, name)}
	}
	return data, name + ".json", nil
}

var _ templates.Proposals = (*proposing)(nil)

// TestDiffTemplateGolden compares versions of a template through the diff
// tool: two metadata.versions, a tag with the served version, a version
// with itself, a version with a pull request, and the failures; in a
// GitHub library (the fake) and in a folder in a Git work tree. Each
// result, text and structuredContent, is a golden file
// (testdata/diff/NAME.golden.json), valid against the tool's output
// schema.
func TestDiffTemplateGolden(t *testing.T) {
	t.Parallel()
	fake, commits := diffRepo(t)
	gh := &proposing{Source: githubSource(t, fake), pulls: map[int]map[string][]byte{
		7: {"Greeting": greetingAt("2.1.0", "Good morning, {{who}}! Welcome back.")},
		9: {"Greeting": []byte(`{"metadata": {"name": "Greeting"`)},
	}}

	r := gittest.New(t)
	const p = "prompts/Greeting.json"
	first := r.Commit("Ada", "Greeting 1.0.0", map[string][]byte{p: greetingAt("1.0.0", "Hello, {{who}}.")})
	r.Git("tag", "v1.0.0")
	r.Commit("Ada", "Greeting 1.1.0", map[string][]byte{p: greetingAt("1.1.0", "Hello, {{who}}!")})
	dir := filepath.Join(r.Root, "prompts")
	local := folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: "prompts"}})

	tests := []struct {
		name     string
		src      templates.Source
		args     map[string]any
		wantCode string // "" for success
		changed  bool
	}{
		{"github-two-versions", gh, map[string]any{"name": "Greeting", "from": "1.0.0", "to": "1.1.0"}, "", true},
		{"github-tag-to-served", gh, map[string]any{"name": "Greeting", "from": "greeting-first"}, "", true},
		{"github-commit-to-served", gh, map[string]any{"name": "Greeting", "from": commits[1]}, "", true},
		{"github-served-unchanged", gh, map[string]any{"name": "Greeting", "from": "2.0.0"}, "", false},
		{"github-served-to-pull", gh, map[string]any{"name": "Greeting", "to": "#7"}, "", true},
		{"github-version-to-pull", gh, map[string]any{"name": "Greeting", "from": "1.1.0", "to": "pr:7"}, "", true},
		{"github-unknown-version", gh, map[string]any{"name": "Greeting", "from": "9.9.9"}, "VERSION_NOT_FOUND", false},
		{"github-unknown-pull", gh, map[string]any{"name": "Greeting", "to": "#8"}, "GITHUB_NOT_FOUND", false},
		{"github-invalid-pull", gh, map[string]any{"name": "Greeting", "to": "#9"}, "INVALID_TEMPLATE", false},
		{"github-bad-pull", gh, map[string]any{"name": "Greeting", "to": "#seven"}, "INVALID_ARGUMENT", false},
		{"github-nothing-to-compare", gh, map[string]any{"name": "Greeting"}, "INVALID_ARGUMENT", false},
		{"folder-tag-to-commit", local, map[string]any{"name": "Greeting", "from": "v1.0.0", "to": "1.1.0"}, "", true},
		{"folder-commit-to-served", local, map[string]any{"name": "Greeting", "from": first}, "", true},
		{"folder-pull", local, map[string]any{"name": "Greeting", "to": "#7"}, "VERSIONS_UNSUPPORTED", false},
	}
	engines := map[templates.Source]*mcptest.Client{}
	var schema *gojsonschema.Schema
	for _, src := range []templates.Source{gh, local} {
		e, a, _ := newEngine(t, src)
		c := mcptest.Connect(t, e)
		c.Initialize(t, mcp.LatestVersion)
		engines[src] = c
		schema = outputSchemas(t, a)["flowyprompt_diff_template"]
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, engines[tt.src], 10+i, "flowyprompt_diff_template", tt.args)
			code, _ := res.StructuredContent["code"].(string)
			if res.IsError != (tt.wantCode != "") || code != tt.wantCode {
				t.Fatalf("isError %v, code %q; want %q:\n%s", res.IsError, code, tt.wantCode, res.Content[0].Text)
			}
			if !res.IsError && res.StructuredContent["changed"] != tt.changed {
				t.Errorf("changed = %v, want %v", res.StructuredContent["changed"], tt.changed)
			}
			v, err := schema.Validate(gojsonschema.NewGoLoader(res.StructuredContent))
			if err != nil || !v.Valid() {
				t.Errorf("structuredContent does not match the output schema: %v %v", err, v.Errors())
			}
			golden.JSON(t, filepath.Join("testdata", "diff", tt.name+".golden.json"),
				map[string]any{"isError": res.IsError, "text": res.Content[0].Text, "structuredContent": res.StructuredContent})
		})
	}
}

// TestDiffTemplateBudget: two versions whose diffs are far over the
// result budget give a result within it, each diff cut at a whole line,
// saying how many lines were left out and how to see them all; the same
// diff through App.Diff (what `flowyprompt diff` prints) is whole.
func TestDiffTemplateBudget(t *testing.T) {
	t.Parallel()
	long := func(version, word string) []byte {
		var lines []string
		for i := range 3000 {
			lines = append(lines, fmt.Sprintf("%s line %d", word, i))
		}
		return greetingAt(version, strings.Join(lines, `\n`))
	}
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	fake.CommitFiles("Greeting 1.0.0", map[string][]byte{greetingPath: long("1.0.0", "old")})
	fake.CommitFiles("Greeting 2.0.0", map[string][]byte{greetingPath: long("2.0.0", "new")})
	e, a, _ := newEngine(t, githubSource(t, fake))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	res := call(t, c, 2, "flowyprompt_diff_template", map[string]any{"name": "Greeting", "from": "1.0.0"})
	text := res.Content[0].Text
	sc, _ := json.Marshal(res.StructuredContent)
	size := utf8.RuneCountInString(text) + utf8.RuneCount(sc)
	t.Logf("diff of 3,000 changed lines: result %d characters (budget %d)", size, app.ResultBudget)
	if res.IsError || size > app.ResultBudget {
		t.Fatalf("isError %v, size %d over the budget %d", res.IsError, size, app.ResultBudget)
	}
	if res.StructuredContent["truncated"] != true {
		t.Errorf("truncated is %v, want true", res.StructuredContent["truncated"])
	}
	for _, want := range []string{"more lines (", "characters) left out", "`flowyprompt diff Greeting 1.0.0` prints the whole diffs"} {
		if !strings.Contains(text, want) {
			t.Errorf("the result does not say %q:\n%.2000s", want, text[max(0, len(text)-2000):])
		}
	}
	fileDiff, _ := res.StructuredContent["file_diff"].(string)
	if !strings.HasSuffix(fileDiff, "\n") {
		t.Errorf("the file diff is not cut at the end of a line: …%q", fileDiff[max(0, len(fileDiff)-40):])
	}

	whole, err := a.Diff(context.Background(), "Greeting", "1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(whole.File, fileDiff) || !strings.Contains(whole.File, "new line 2999") || !strings.Contains(whole.Rendered, "-old line 2999") {
		t.Errorf("App.Diff is not the whole diff, of which the tool's is the start (%d and %d characters)", len(whole.File), len(fileDiff))
	}
}

// TestDiffTemplateCost counts the GitHub requests of diffs, in order: a
// side costs what get with that version costs. Two old metadata.versions
// the first time are the file's history and the file at each commit read
// until they match (4); the same diff again, and the served version, cost
// nothing; a tag is read each time (1).
func TestDiffTemplateCost(t *testing.T) {
	t.Parallel()
	fake, _ := diffRepo(t)
	e, _, _ := newEngine(t, githubSource(t, fake))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		args     map[string]any
		requests int
	}{
		{map[string]any{"name": "Greeting", "from": "1.0.0", "to": "1.1.0"}, 4},
		{map[string]any{"name": "Greeting", "from": "1.0.0", "to": "1.1.0"}, 0},
		{map[string]any{"name": "Greeting", "from": "2.0.0"}, 0},
		{map[string]any{"name": "Greeting", "from": "greeting-first"}, 1},
	}
	for i, tt := range tests {
		fake.Reset()
		if res := call(t, c, i+2, "flowyprompt_diff_template", tt.args); res.IsError {
			t.Fatalf("%v: %s", tt.args, res.Content[0].Text)
		}
		t.Logf("diff %v: %d GitHub requests", tt.args, fake.Total())
		if n := fake.Total(); n != tt.requests {
			t.Errorf("diff %v: %d GitHub requests, want %d", tt.args, n, tt.requests)
		}
	}
}

// TestDiffTemplateLabelToPull: from a label to a pull request, on a
// library with labels: the staging label's Greeting against the one a
// pull request proposes (opened through the GitHub source's own Propose,
// against the fake GitHub's refs and pulls), golden.
func TestDiffTemplateLabelToPull(t *testing.T) {
	l := newLabelled(t, "")
	src, ok := l.lib.Source().(*github.Source)
	if !ok {
		t.Fatalf("the default label's source is a %T", l.lib.Source())
	}
	p, err := src.Propose(t.Context(), []github.Change{{Name: "Greeting", Content: sourceTemplate("Greeting", "proposed text")}}, "Greeting: proposed text")
	if err != nil {
		t.Fatal(err)
	}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	for i, tt := range []struct{ name, from, to string }{
		{"label-to-pull", "staging", fmt.Sprintf("#%d", p.Number)},
		{"pull-to-label", fmt.Sprintf("pr:%d", p.Number), "production"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, c, 1+i, "flowyprompt_diff_template", map[string]any{"name": "Greeting", "from": tt.from, "to": tt.to})
			if res.IsError || res.StructuredContent["changed"] != true {
				t.Fatalf("isError %v, changed %v:\n%s", res.IsError, res.StructuredContent["changed"], res.Content[0].Text)
			}
			golden.JSON(t, filepath.Join("testdata", "diff", tt.name+".golden.json"),
				map[string]any{"isError": res.IsError, "text": res.Content[0].Text, "structuredContent": res.StructuredContent})
		})
	}
}

// TestDiffTemplateNewInPull: a template that only a pull request adds
// (opened through the GitHub source's own Propose against the fake
// GitHub's refs and pulls) is compared with a label and with the served
// version that do not have it: the whole file and prompt are added, or
// deleted the other way, the absent side's header /dev/null, golden. A
// name on neither side is TEMPLATE_NOT_FOUND, whatever from and to are.
func TestDiffTemplateNewInPull(t *testing.T) {
	l := newLabelled(t, "")
	src, ok := l.lib.Source().(*github.Source)
	if !ok {
		t.Fatalf("the default label's source is a %T", l.lib.Source())
	}
	p, err := src.Propose(t.Context(), []github.Change{{Name: "Welcome", Content: sourceTemplate("Welcome", "welcome aboard")}}, "Add Welcome")
	if err != nil {
		t.Fatal(err)
	}
	pull := fmt.Sprintf("#%d", p.Number)
	// Only is served (production) and not at staging, branched before.
	l.fake.CommitFiles("add Only", map[string][]byte{"templates/Only.json": sourceTemplate("Only", "welcome aboard")})
	if _, err := l.lib.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		golden         string // "" for none
		name, from, to string
		wantCode       string // "" for success
		absent         string // the side without the template: "from" or "to"
	}{
		{"new-label-to-pull", "Welcome", "production", pull, "", "from"},
		{"new-pull-to-served", "Welcome", pull, "", "", "to"},
		{"", "Welcome", "", pull, "", "from"},
		{"", "Welcome", "staging", "pr:" + strconv.Itoa(p.Number), "", "from"},
		{"new-nowhere", "Nowhere", "production", pull, "TEMPLATE_NOT_FOUND", ""},
		{"", "Nowhere", "staging", "", "TEMPLATE_NOT_FOUND", ""},
		{"", "Nowhere", "", "#99", "TEMPLATE_NOT_FOUND", ""},
		{"", "Welcome", "staging", "production", "TEMPLATE_NOT_FOUND", ""},
		{"", "Only", "staging", "", "", "from"},
		{"", "Only", "", "staging", "", "to"},
		{"", "Only", "staging", "staging", "TEMPLATE_NOT_FOUND", ""},
		// A version is looked for in the served template's history.
		{"", "Welcome", "1.0.0", pull, "TEMPLATE_NOT_FOUND", ""},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s_%s_to_%s", tt.name, tt.from, tt.to), func(t *testing.T) {
			res := call(t, c, 1+i, "flowyprompt_diff_template", map[string]any{"name": tt.name, "from": tt.from, "to": tt.to})
			code, _ := res.StructuredContent["code"].(string)
			if res.IsError != (tt.wantCode != "") || code != tt.wantCode {
				t.Fatalf("isError %v, code %q; want %q:\n%s", res.IsError, code, tt.wantCode, res.Content[0].Text)
			}
			if !res.IsError {
				for _, side := range []string{"from", "to"} {
					s, _ := res.StructuredContent[side].(map[string]any)
					if absent := s["absent"] == true; absent != (side == tt.absent) {
						t.Errorf("%s.absent = %v, want %v", side, absent, side == tt.absent)
					}
				}
				sign := map[string]string{"from": "+", "to": "-"}[tt.absent]
				file, _ := res.StructuredContent["file_diff"].(string)
				rendered, _ := res.StructuredContent["rendered_diff"].(string)
				for _, want := range []string{sign + `{"metadata":{"name":"` + tt.name + `"`, sign + "welcome aboard"} {
					if !strings.Contains(file+rendered, "\n"+want) {
						t.Errorf("the diffs lack the line %q:\n%s\n%s", want, file, rendered)
					}
				}
				if strings.Count(file+rendered, "/dev/null") != 2 {
					t.Errorf("the absent side is not /dev/null in both headers:\n%s\n%s", file, rendered)
				}
			}
			if tt.golden != "" {
				golden.JSON(t, filepath.Join("testdata", "diff", tt.golden+".golden.json"),
					map[string]any{"isError": res.IsError, "text": res.Content[0].Text, "structuredContent": res.StructuredContent})
			}
		})
	}
}

// TestDiffTemplateNewInPullHidden: a member whose read rules give them
// no source is told TEMPLATE_NOT_FOUND for a template a pull request
// adds, as for one that is nowhere, and the pull request is not read;
// a member who may read the source is shown it.
func TestDiffTemplateNewInPullHidden(t *testing.T) {
	p, err := auth.ParsePolicy("p.json", []byte(`{"claim": "groups",
		"read": [{"match": "readers", "sources": ["default"]}]}`), []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	l := newLabelledWith(t, app.Options{Policy: func() *auth.Policy { return p }})
	src := l.lib.Source().(*github.Source)
	pr, err := src.Propose(t.Context(), []github.Change{{Name: "Welcome", Content: sourceTemplate("Welcome", "welcome aboard")}}, "Add Welcome")
	if err != nil {
		t.Fatal(err)
	}
	reader := &auth.Member{Issuer: "https://idp", Subject: "r", Groups: []string{"readers"}, Scopes: []string{auth.ScopeRead}}
	outsider := &auth.Member{Issuer: "https://idp", Subject: "o", Scopes: []string{auth.ScopeRead}}
	c := mcptest.Connect(t, l.e)
	c.Initialize(t, mcp.LatestVersion)
	args := map[string]any{"name": "Welcome", "to": fmt.Sprintf("#%d", pr.Number)}
	for i, tt := range []struct {
		name     string
		who      *auth.Member
		wantCode string
		requests bool // whether the pull request is read
	}{
		{"outsider", outsider, "TEMPLATE_NOT_FOUND", false},
		{"reader", reader, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l.fake.Reset()
			m := c.RequestFrom(t, auth.WithMember(context.Background(), tt.who), i+1, mcp.MethodToolsCall,
				map[string]any{"name": "flowyprompt_diff_template", "arguments": args})
			var res struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
				t.Fatalf("error %+v: %s", m.Error, m.Result)
			}
			if code, _ := res.StructuredContent["code"].(string); code != tt.wantCode {
				t.Fatalf("code %q, want %q: %s", code, tt.wantCode, m.Result)
			}
			if shown := strings.Contains(string(m.Result), "welcome aboard"); shown != (tt.wantCode == "") {
				t.Errorf("the proposed text shown: %v: %s", shown, m.Result)
			}
			if read := l.fake.Total() > 0; read != tt.requests {
				t.Errorf("the pull request read: %v (%d GitHub requests), want %v", read, l.fake.Total(), tt.requests)
			}
		})
	}
}
