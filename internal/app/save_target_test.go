package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// severalEngine serves the folders team and ops and the built-in
// examples (team, examples, ops) with --allow-write, under policy when
// it is not empty; team and ops both have Shared, each one template of
// its own. It returns the folders.
func severalEngine(t *testing.T, policy string) (e *mcp.Engine, team, ops string) {
	t.Helper()
	team, ops = t.TempDir(), t.TempDir()
	writeTemplate(t, team, "Shared", string(sourceTemplate("Shared", "team shared")))
	writeTemplate(t, team, "Team_Only", string(sourceTemplate("Team_Only", "team only")))
	writeTemplate(t, ops, "Shared", string(sourceTemplate("Shared", "ops shared")))
	writeTemplate(t, ops, "Ops_Only", string(sourceTemplate("Ops_Only", "ops only")))
	quiet := slog.New(slog.DiscardHandler)
	src, err := templates.NewComposite([]templates.Member{
		{Namespace: "team", Source: folder.New(team, templates.BuildOptions{Logger: quiet})},
		{Namespace: "examples", Source: templates.Embedded()},
		{Namespace: "ops", Source: folder.New(ops, templates.BuildOptions{Logger: quiet})}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	opts := app.Options{AllowWrite: true, Writer: src}
	if policy != "" {
		p, err := auth.ParsePolicy("policy.json", []byte(policy), app.SourceNames(src))
		if err != nil {
			t.Fatal(err)
		}
		opts.Policy = func() *auth.Policy { return p }
	}
	opts.Library = templates.NewLibrary(src, quiet)
	if err := opts.Library.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	e = mcp.NewEngine(app.New(opts).Server(), mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e, team, ops
}

// TestSaveToSeveralSources: with several sources a save goes to the one
// its source argument names, or, without one, to the one source that has
// the name; the file keeps the bare metadata.name, and expected_version
// is checked against SOURCE/NAME. An ambiguous or new bare name, an
// unknown source and a source that cannot save are refused, saying which
// sources can.
func TestSaveToSeveralSources(t *testing.T) {
	t.Parallel()
	v11 := func(name string) string { return string(testTemplate(name, "1.1.0", "new text")) }
	tests := []struct {
		name     string
		args     map[string]string
		isErr    bool
		contains []string
		file     string // written, in the folder named: "team/NAME" or "ops/NAME"
	}{
		{"new, source named", map[string]string{"template": string(sourceTemplate("Fresh", "fresh")), "source": "ops"},
			false, []string{"Created template ops/Fresh", `source="ops"`}, "ops/Fresh"},
		{"update, bare name in one source", map[string]string{"template": v11("Team_Only"), "expected_version": "1.0.0"},
			false, []string{"Updated template team/Team_Only v1.1.0 (replaced v1.0.0)"}, "team/Team_Only"},
		{"update, source named where two have it", map[string]string{"template": v11("Shared"), "source": "ops", "expected_version": "1.0.0"},
			false, []string{"Updated template ops/Shared v1.1.0"}, "ops/Shared"},
		{"update looked up in the source named", map[string]string{"template": v11("Shared"), "source": "team"},
			true, []string{"WRITE_CONFLICT", "team/Shared exists (v1.0.0)"}, ""},
		{"bare name in two sources", map[string]string{"template": v11("Shared"), "expected_version": "1.0.0"},
			true, []string{"INVALID_ARGUMENT", "team, ops each have", "give source, one of: team, ops"}, ""},
		{"new bare name", map[string]string{"template": string(sourceTemplate("Fresh", "fresh"))},
			true, []string{"INVALID_ARGUMENT", "no source has a template called Fresh", "one of: team, ops"}, ""},
		{"unknown source", map[string]string{"template": string(sourceTemplate("Fresh", "fresh")), "source": "opps"},
			true, []string{"INVALID_ARGUMENT", `no source is named "opps"`, "ops"}, ""},
		{"source that cannot save", map[string]string{"template": string(sourceTemplate("Fresh", "fresh")), "source": "examples"},
			true, []string{"WRITE_DISABLED", "source examples cannot save", "team, ops"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, team, ops := severalEngine(t, "")
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			tt.args["message"] = "m"
			text, isErr := callText(t, c, 1, "flowyprompt_save_template", tt.args)
			if isErr != tt.isErr {
				t.Fatalf("isError = %v: %s", isErr, text)
			}
			for _, want := range tt.contains {
				if !strings.Contains(text, want) {
					t.Errorf("answer does not say %q:\n%s", want, text)
				}
			}
			dirs := map[string]string{"team": team, "ops": ops}
			if tt.file != "" {
				ns, bare, _ := strings.Cut(tt.file, "/")
				data, err := os.ReadFile(filepath.Join(dirs[ns], bare+".json"))
				if err != nil || string(data) != tt.args["template"] {
					t.Errorf("%s: %q, %v; want the template as sent, its name bare", tt.file, data, err)
				}
			}
			for ns, dir := range dirs {
				if _, err := os.Stat(filepath.Join(dir, "Fresh.json")); err == nil && tt.file != ns+"/Fresh" {
					t.Errorf("Fresh.json was written to %s", ns)
				}
			}
		})
	}
}

// TestSaveToSeveralSourcesPolicy: under an access policy a member saves
// to the sources a write rule of theirs names, and a bare name is
// resolved among the sources they may see; the error lists only the
// sources they may write.
func TestSaveToSeveralSourcesPolicy(t *testing.T) {
	t.Parallel()
	const policy = `{"claim": "groups",
		"read":  [ {"match": "sre", "sources": ["ops", "team"]}, {"match": "*", "sources": ["team"]} ],
		"write": [ {"match": "sre", "sources": ["team"]} ]}`
	write := []string{auth.ScopeRead, auth.ScopeWrite}
	alice := &auth.Member{Subject: "alice", Groups: []string{"sre"}, Scopes: write}
	bob := &auth.Member{Subject: "bob", Scopes: write}
	fresh := string(sourceTemplate("Fresh", "fresh"))
	tests := []struct {
		name     string
		m        *auth.Member
		args     map[string]string
		contains []string
		written  string // "team" or "ops" when Fresh.json is written there
	}{
		{"write rule on team", alice, map[string]string{"template": fresh, "source": "team"}, []string{"Created template team/Fresh"}, "team"},
		{"no write rule on ops", alice, map[string]string{"template": fresh, "source": "ops"},
			[]string{"PERMISSION_DENIED", "source ops", "no write rule"}, ""},
		{"bare name of ops alone", alice, map[string]string{"template": string(testTemplate("Ops_Only", "1.1.0", "x")), "expected_version": "1.0.0"},
			[]string{"PERMISSION_DENIED", "source ops"}, ""},
		{"ambiguous: the sources written", alice, map[string]string{"template": string(testTemplate("Shared", "1.1.0", "x")), "expected_version": "1.0.0"},
			[]string{"INVALID_ARGUMENT", "give source, one of: team\n"}, ""},
		{"bare name among the sources seen", bob, map[string]string{"template": string(testTemplate("Shared", "1.1.0", "x")), "expected_version": "1.0.0"},
			[]string{"PERMISSION_DENIED", "source team"}, ""},
		{"a source not seen is unknown", bob, map[string]string{"template": fresh, "source": "ops"},
			[]string{"INVALID_ARGUMENT", `no source is named "ops"`, "you may read are team", "none of this server's sources"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, team, ops := severalEngine(t, policy)
			c := mcptest.ConnectAs(t, e, as(tt.m))
			c.Initialize(t, mcp.LatestVersion)
			tt.args["message"] = "m"
			text, isErr := callText(t, c, 1, "flowyprompt_save_template", tt.args)
			if isErr != (tt.written == "") {
				t.Fatalf("isError = %v: %s", isErr, text)
			}
			for _, want := range tt.contains {
				if !strings.Contains(text+"\n", want) {
					t.Errorf("answer does not say %q:\n%s", want, text)
				}
			}
			for ns, dir := range map[string]string{"team": team, "ops": ops} {
				_, err := os.Stat(filepath.Join(dir, "Fresh.json"))
				if written := err == nil; written != (tt.written == ns) {
					t.Errorf("Fresh.json written to %s: %v", ns, written)
				}
			}
		})
	}
}

// TestSaveToolSourceArgument: the save tool's source argument names the
// sources that can save: a Composite's folders, not its built-in
// examples; with one source there is no source argument.
func TestSaveToolSourceArgument(t *testing.T) {
	t.Parallel()
	several, _, _ := severalEngine(t, "")
	single := func() *mcp.Engine {
		src := folder.New(t.TempDir(), templates.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
		lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
		if err := lib.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := mcp.NewEngine(app.New(app.Options{Library: lib, AllowWrite: true, Writer: src}).Server(), mcp.EngineOptions{})
		t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
		return e
	}()
	for _, tt := range []struct {
		name string
		e    *mcp.Engine
		want string
	}{
		{"several", several, "one of team, ops."},
		{"one", single, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mcptest.Connect(t, tt.e)
			c.Initialize(t, mcp.LatestVersion)
			var res struct {
				Tools []struct {
					Name        string
					Annotations map[string]any `json:"annotations"`
					InputSchema struct {
						Properties map[string]struct {
							Description string `json:"description"`
						} `json:"properties"`
					} `json:"inputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(c.Request(t, 1, "tools/list", nil).Result, &res); err != nil {
				t.Fatal(err)
			}
			for _, tool := range res.Tools {
				if tool.Name != "flowyprompt_save_template" {
					continue
				}
				p, ok := tool.InputSchema.Properties["source"]
				if ok != (tt.want != "") || !strings.Contains(p.Description, tt.want) {
					t.Errorf("source argument: %v %q, want it to say %q", ok, p.Description, tt.want)
				}
				if tool.Annotations["destructiveHint"] != true {
					t.Errorf("folders are written: destructiveHint = %v, want true", tool.Annotations["destructiveHint"])
				}
				return
			}
			t.Fatal("save tool not listed")
		})
	}
}

// proposingFolder is a folder source whose saves are proposals, as a
// GitHub source's are.
type proposingFolder struct {
	*folder.Source
	p proposer
}

func (s *proposingFolder) SaveTemplate(ctx context.Context, name string, data []byte, message string) (templates.Saved, error) {
	return s.p.SaveTemplate(ctx, name, data, message)
}

func (s *proposingFolder) ProposedFile(ctx context.Context, number int, name string) ([]byte, string, error) {
	return s.p.ProposedFile(ctx, number, name)
}

// TestSaveToolProposesPerSource: with several sources the save tool is a
// proposal, not destructive, only when every source that can save
// proposes; a proposal's next save names its source.
func TestSaveToolProposesPerSource(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	proposing := func() templates.Source {
		return &proposingFolder{Source: folder.New(t.TempDir(), templates.BuildOptions{Logger: quiet})}
	}
	for _, tt := range []struct {
		name        string
		members     []templates.Member
		title       string
		destructive bool
	}{
		{"GitHub and examples", []templates.Member{{Namespace: "team", Source: proposing()}, {Namespace: "ex", Source: templates.Embedded()}},
			"Propose a template (pull request)", false},
		{"GitHub and a folder", []templates.Member{{Namespace: "team", Source: proposing()},
			{Namespace: "local", Source: folder.New(t.TempDir(), templates.BuildOptions{Logger: quiet})}}, "Save a template", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := templates.NewComposite(tt.members, quiet)
			if err != nil {
				t.Fatal(err)
			}
			lib := templates.NewLibrary(src, quiet)
			if err := lib.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			e := mcp.NewEngine(app.New(app.Options{Library: lib, AllowWrite: true, Writer: src}).Server(), mcp.EngineOptions{})
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			var list struct {
				Tools []struct {
					Name, Title string
					Annotations map[string]any `json:"annotations"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(c.Request(t, 1, "tools/list", nil).Result, &list); err != nil {
				t.Fatal(err)
			}
			for _, tool := range list.Tools {
				if tool.Name == "flowyprompt_save_template" && (tool.Title != tt.title || tool.Annotations["destructiveHint"] != tt.destructive) {
					t.Errorf("title %q, destructiveHint %v; want %q, %v", tool.Title, tool.Annotations["destructiveHint"], tt.title, tt.destructive)
				}
			}
			text, isErr := callText(t, c, 2, "flowyprompt_save_template", map[string]string{"template": saveTemplate, "message": "add", "source": "team"})
			if isErr || !strings.Contains(text, "Opened pull request #7 proposing template team/team_hello") || !strings.Contains(text, `message=..., source="team")`) {
				t.Errorf("save to team: %s", text)
			}
		})
	}
}
