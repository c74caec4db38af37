package app_test

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// TestVersionsUnsupportedSuggestsWhatParses: each way VERSIONS_UNSUPPORTED
// suggests to serve a GitHub library is one the command line accepts, and
// names a repository URL the GitHub source takes.
func TestVersionsUnsupportedSuggestsWhatParses(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t, templates.Embedded())
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	res := call(t, c, 1, "flowyprompt_template_history", map[string]any{"name": "Code_Review"})
	how, _ := res.StructuredContent["how"].(string)
	if !res.IsError || res.StructuredContent["code"] != "VERSIONS_UNSUPPORTED" {
		t.Fatalf("got %v, want VERSIONS_UNSUPPORTED", res.StructuredContent)
	}
	forms := []struct {
		name string
		re   *regexp.Regexp
		args func(v string) ([]string, map[string]string)
		repo func(c *config.Config) string
	}{
		{"the environment", regexp.MustCompile(`GITHUB_REPO_URL=([^\s,)]+)`),
			func(v string) ([]string, map[string]string) { return nil, map[string]string{"GITHUB_REPO_URL": v} },
			func(c *config.Config) string { return c.GitHubRepoURL }},
		{"--github-repo", regexp.MustCompile(`--github-repo ([^\s,)]+)`),
			func(v string) ([]string, map[string]string) { return []string{"--github-repo", v}, nil },
			func(c *config.Config) string { return c.GitHubRepoURL }},
		{"--source", regexp.MustCompile(`--source ([^\s)]+)`),
			func(v string) ([]string, map[string]string) { return []string{"--source", v}, nil },
			func(c *config.Config) string {
				if len(c.Sources) != 1 || c.Sources[0].Kind != config.KindGitHub {
					return ""
				}
				return c.Sources[0].Location
			}},
	}
	for _, f := range forms {
		m := f.re.FindStringSubmatch(how)
		if m == nil {
			t.Errorf("%s: not suggested in %q", f.name, how)
			continue
		}
		args, env := f.args(m[1])
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var cfg config.Config
		err := config.RegisterSource(fs, &cfg, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err == nil {
			err = fs.Parse(args)
		}
		if err == nil {
			err = cfg.Check()
		}
		if err != nil {
			t.Errorf("%s: %q is refused: %v", f.name, m[0], err)
			continue
		}
		repo := f.repo(&cfg)
		if repo == "" {
			t.Errorf("%s: %q names no GitHub repository", f.name, m[0])
			continue
		}
		if _, err := github.NewSource(github.Config{RepoURL: repo, TTL: time.Hour, CacheDir: t.TempDir(),
			Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Errorf("%s: the GitHub source refuses %q: %v", f.name, repo, err)
		}
	}
}

// TestHistoryOfAnUncommittedEdit: a folder serves its work tree, so an edit
// not committed yet is none of the listed commits; the history says so
// instead of marking the newest commit as the one served.
func TestHistoryOfAnUncommittedEdit(t *testing.T) {
	t.Parallel()
	r := gittest.New(t)
	const p = "prompts/Greeting.json"
	r.Commit("Ada", "Greeting 1.0.0", map[string][]byte{p: versionedTemplate("1.0.0", "hello one")})
	r.Commit("Ada", "Greeting 2.0.0", map[string][]byte{p: versionedTemplate("2.0.0", "hello two")})
	dir := filepath.Join(r.Root, "prompts")
	if err := os.WriteFile(filepath.Join(dir, "Greeting.json"), versionedTemplate("2.1.0", "hello edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _, _ := newEngine(t, folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}}))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	res := call(t, c, 1, "flowyprompt_template_history", map[string]any{"name": "Greeting"})
	text := res.Content[0].Text
	if res.IsError || !strings.Contains(text, "The file served now (v2.1.0) is none of these commits'") || strings.Contains(text, "(served now)") {
		t.Fatalf("history of an uncommitted edit:\n%s", text)
	}
	if strings.Contains(text, "v?") {
		t.Errorf("a folder reads every version, yet the history shows v?:\n%s", text)
	}
}
