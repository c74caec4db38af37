package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestOpenLabel: a label's library serves each GitHub source that names
// the label at the label's ref and every other source at its default; a
// label whose ref does not exist fails to open, and the next request
// tries again.
func TestOpenLabel(t *testing.T) {
	team := fakegithub.New("acme", "prompts")
	t.Cleanup(team.Close)
	stag := team.CommitFiles("staging", map[string][]byte{"templates/Hello.json": fakegithub.ValidTemplate("Hello", "team staging {{subject}}")})
	team.SetBranch("staging", stag)
	team.CommitFiles("production", map[string][]byte{"templates/Hello.json": fakegithub.ValidTemplate("Hello", "team production {{subject}}")})
	ops := fakegithub.New("ops", "prompts")
	t.Cleanup(ops.Close)
	ops.PutFile("templates/Runbook.json", fakegithub.ValidTemplate("Runbook", "ops main {{subject}}"))

	cfg := config.Config{GitHubPath: "templates", CacheDir: t.TempDir(), CacheTTL: time.Hour, MaxFileSize: 102400,
		Sources: []config.SourceSpec{
			{Name: "team", Kind: config.KindGitHub, Location: team.RepoURL(), APIURL: team.URL(), Ref: "main",
				Labels: []config.Label{{Name: "production", Ref: "main"}, {Name: "staging", Ref: "staging"}, {Name: "canary", Ref: "canary"}}},
			{Name: "ops", Kind: config.KindGitHub, Location: ops.RepoURL(), APIURL: ops.URL()},
		}}
	shareBlobs(&cfg)
	if cfg.Blobs == nil {
		t.Fatal("no blob pool for a configuration with labels")
	}
	log := slog.New(slog.DiscardHandler)
	src, err := openSource(&cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := templates.NewLibrary(src, log)
	if err := def.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	set := labelsOf(&cfg, def, log, nil)
	t.Cleanup(set.Close)

	text := func(lib *templates.Library, name string) string {
		e, ok := lib.Catalog().Lookup(name)
		if !ok {
			t.Fatalf("%s not served", name)
		}
		return e.Template.Results[0].Content
	}
	lib, err := set.Library(context.Background(), "staging")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		lib        *templates.Library
		name, want string
	}{
		{def, "team/Hello", "team production"},
		{lib, "team/Hello", "team staging"},
		{lib, "ops/Runbook", "ops main"}, // ops names no staging: its default
	} {
		if got := text(tt.lib, tt.name); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: %q, want %q…", tt.name, got, tt.want)
		}
	}

	if _, err := set.Library(context.Background(), "canary"); err == nil {
		t.Fatalf("a label at a missing ref opened: %v", err)
	}
	team.SetTag("canary", stag)
	if lib, err := set.Library(context.Background(), "canary"); err != nil || !strings.HasPrefix(text(lib, "team/Hello"), "team staging") {
		t.Fatalf("canary once its tag exists: %v", err)
	}
}
