package app_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
	"github.com/google/go-cmp/cmp"
)

func versionedTemplate(version, text string) []byte {
	return testTemplate("Greeting", version, text)
}

// versionsRepo is a fake repository whose Greeting template went through
// 1.0.0, 1.1.0 and 2.0.0, with a commit between that changed another file
// only, and a tag on 1.0.0. It returns the commits of the three versions.
func versionsRepo(t *testing.T) (*fakegithub.Server, [3]string) {
	t.Helper()
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	const p = "templates/Greeting.json"
	var c [3]string
	c[0] = fake.CommitFiles("Greeting 1.0.0\n\nThe first greeting.", map[string][]byte{p: versionedTemplate("1.0.0", "hello one")})
	fake.SetTag("greeting-first", c[0])
	c[1] = fake.CommitFiles("Greeting 1.1.0", map[string][]byte{p: versionedTemplate("1.1.0", "hello one-one")})
	fake.CommitFiles("Other", map[string][]byte{"templates/Other.json": sourceTemplate("Other", "other")})
	c[2] = fake.CommitFiles("Greeting 2.0.0", map[string][]byte{p: versionedTemplate("2.0.0", "hello two")})
	return fake, c
}

func githubSource(t *testing.T, fake *fakegithub.Server) *github.Source {
	t.Helper()
	return fakeRepoSource(t, fake, t.TempDir())
}

// TestTemplateVersions reads earlier versions of a GitHub template
// through go-github against the fake, and counts what each call costs.
// The first history is 1 request; asking for an old metadata.version reads
// the file at each commit, newest first, until it matches (here 3 reads),
// once: afterwards the history of the served commit is remembered, and a
// version read or a commit SHA costs nothing; a tag is read each time.
func TestTemplateVersions(t *testing.T) {
	t.Parallel()
	fake, commits := versionsRepo(t)
	e, _, _ := newEngine(t, githubSource(t, fake))
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		want     []string // in the text
		wantCode string   // the error's code, "" for success
		versions []string // the history's versions, in order
		// Requests: to the commits list (and how many of them were
		// answered 304), to file contents, in all.
		list, notModified, contents, total int
	}{
		{name: "history, first call", tool: "flowyprompt_template_history", args: map[string]any{"name": "Greeting"},
			want: []string{"3 commits changed **Greeting**", "Greeting 2.0.0", "Greeting 1.1.0", "Greeting 1.0.0", fakegithub.CommitAuthor,
				// The served commit's file is read for its version.
				shortSHA12(commits[2]) + " ", "v2.0.0 (served now) by", "v? by", "v? is a version not read yet"},
			versions: []string{"2.0.0", "", ""}, list: 1, contents: 1, total: 2},
		{name: "history again", tool: "flowyprompt_template_history", args: map[string]any{"name": "Greeting"},
			versions: []string{"2.0.0", "", ""}},
		{name: "render an old metadata.version", tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "1.0.0"},
			want: []string{"hello one", "Version 1.0.0", shortID(commits[0])}, contents: 2, total: 2},
		{name: "render it again", tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "1.0.0"},
			want: []string{"hello one"}},
		{name: "history with the versions read", tool: "flowyprompt_template_history", args: map[string]any{"name": "Greeting"},
			versions: []string{"2.0.0", "1.1.0", "1.0.0"}},
		{name: "get at a tag", tool: "flowyprompt_get_template", args: map[string]any{"name": "Greeting", "version": "greeting-first"},
			want: []string{"Version 1.0.0", `asked for "greeting-first"`}, contents: 1, total: 1},
		{name: "render at a commit SHA", tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": commits[1]},
			want: []string{"hello one-one", "Version 1.1.0"}},
		{name: "an unknown version", tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "9.9.9"},
			wantCode: "VERSION_NOT_FOUND", want: []string{"2.0.0 (", "1.1.0 (", "1.0.0 ("}, contents: 1, total: 1},
		{name: "the current version", tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting"},
			want: []string{"hello two"}},
		{name: "the current metadata.version", tool: "flowyprompt_get_template", args: map[string]any{"name": "Greeting", "version": "2.0.0"},
			want: []string{"Version 2.0.0", "the current one"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake.Reset()
			res := call(t, c, i+10, tt.tool, tt.args)
			checkVersionsResult(t, res, tt.wantCode, tt.want, tt.versions)
			notModified := 0
			for _, r := range fake.Requests() {
				if r.Pattern == fakegithub.RouteCommits && r.Status == 304 {
					notModified++
				}
			}
			list, contents := fake.Count(fakegithub.RouteCommits), fake.Count(fakegithub.RouteContents)
			t.Logf("%s: %d GitHub requests (commits list %d, of which 304 %d; contents %d)", tt.name, fake.Total(), list, notModified, contents)
			if list != tt.list || notModified != tt.notModified || contents != tt.contents || fake.Total() != tt.total {
				t.Errorf("requests: list %d (304: %d), contents %d, total %d; want %d (%d), %d, %d",
					list, notModified, contents, fake.Total(), tt.list, tt.notModified, tt.contents, tt.total)
			}
		})
	}

	// Prompts stay the current version.
	m := c.Request(t, 99, mcp.MethodPromptsGet, map[string]any{"name": "Greeting"})
	if m.Error != nil || !strings.Contains(string(m.Raw), "hello two") {
		t.Errorf("prompts/get is not the current version: %s", m.Raw)
	}
}

// TestVersionsNeedGitHub: a folder in no Git work tree, the built-in
// examples, and such a folder as a member of several sources have no
// versions, and say so; a GitHub member of several sources has them under
// its namespace. The current version of a folder's template needs no
// history.
func TestVersionsNeedGitHub(t *testing.T) {
	dir := t.TempDir()
	// Git must not find a repository above the temporary folder.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	writeTemplate(t, dir, "Local_Note", string(sourceTemplate("Local_Note", "local note")))
	local := folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})
	fake, _ := versionsRepo(t)
	composite, err := templates.NewComposite([]templates.Member{{Namespace: "team", Source: githubSource(t, fake)},
		{Namespace: "local", Source: folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})}},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		src      templates.Source
		tool     string
		args     map[string]any
		wantCode string
		want     string
	}{
		{"folder, history", local, "flowyprompt_template_history", map[string]any{"name": "Local_Note"}, "VERSIONS_UNSUPPORTED",
			"versions need a GitHub library or a folder in a Git work tree: this template comes from a folder that is not in a Git work tree"},
		{"folder, render", local, "flowyprompt_render_template", map[string]any{"name": "Local_Note", "version": "0.9.0"}, "VERSIONS_UNSUPPORTED", "not in a Git work tree"},
		{"folder, get", local, "flowyprompt_get_template", map[string]any{"name": "Local_Note", "version": "0.9.0"}, "VERSIONS_UNSUPPORTED", "git init, then commit the templates"},
		{"folder, the current version", local, "flowyprompt_get_template", map[string]any{"name": "Local_Note", "version": "1.0.0"}, "", "the current one"},
		{"built-in examples", templates.Embedded(), "flowyprompt_template_history", map[string]any{"name": "Code_Review"}, "VERSIONS_UNSUPPORTED", "the built-in examples"},
		{"several sources, folder member", composite, "flowyprompt_template_history", map[string]any{"name": "local/Local_Note"}, "VERSIONS_UNSUPPORTED", "not in a Git work tree"},
		{"several sources, GitHub member", composite, "flowyprompt_render_template", map[string]any{"name": "team/Greeting", "version": "1.1.0"}, "", "hello one-one"},
		{"several sources, bare name", composite, "flowyprompt_template_history", map[string]any{"name": "Greeting"}, "", "3 commits changed **team/Greeting**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _ := newEngine(t, tt.src)
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			res := call(t, c, 2, tt.tool, tt.args)
			text := res.Content[0].Text
			if code, _ := res.StructuredContent["code"].(string); res.IsError != (tt.wantCode != "") || code != tt.wantCode {
				t.Fatalf("isError %v, code %q; want %q: %s", res.IsError, code, tt.wantCode, text)
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("result lacks %q:\n%s", tt.want, text)
			}
		})
	}
}

func shortID(sha string) string { return sha[:7] }

func shortSHA12(sha string) string { return sha[:12] }

// checkVersionsResult checks a versions tool result: failed with wantCode
// ("" for success), its text holding each of want, and, when versions is
// not nil, a history listing exactly those versions.
func checkVersionsResult(t *testing.T, res toolResult, wantCode string, want, versions []string) {
	t.Helper()
	text := res.Content[0].Text
	if code, _ := res.StructuredContent["code"].(string); res.IsError != (wantCode != "") || code != wantCode {
		t.Fatalf("isError %v, code %q; want code %q: %s", res.IsError, code, wantCode, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("result lacks %q:\n%s", w, text)
		}
	}
	if versions == nil {
		return
	}
	var got []string
	revs, _ := res.StructuredContent["revisions"].([]any)
	for _, r := range revs {
		v, _ := r.(map[string]any)["version"].(string)
		got = append(got, v)
	}
	if d := cmp.Diff(versions, got); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
}

// TestFolderVersions reads earlier versions of a template from the Git
// repository its folder (prompts/, a subfolder) is in, alone and as a
// member of several sources: by metadata.version, tag and commit SHA.
func TestFolderVersions(t *testing.T) {
	t.Parallel()
	r := gittest.New(t)
	const p = "prompts/Greeting.json"
	var commits [3]string
	commits[0] = r.Commit("Ada", "Greeting 1.0.0\n\nThe first greeting.", map[string][]byte{p: versionedTemplate("1.0.0", "hello one")})
	r.Git("tag", "v1.0.0")
	commits[1] = r.Commit("Ada", "Greeting 1.1.0", map[string][]byte{p: versionedTemplate("1.1.0", "hello one-one")})
	r.Commit("Ada", "Other", map[string][]byte{"prompts/Other.json": sourceTemplate("Other", "other")})
	commits[2] = r.Commit("Ada", "Greeting 2.0.0", map[string][]byte{p: versionedTemplate("2.0.0", "hello two")})
	dir := filepath.Join(r.Root, "prompts")
	src := folder.New(dir, templates.BuildOptions{Info: templates.SourceInfo{Kind: "directory", Location: dir}})
	composite, err := templates.NewComposite([]templates.Member{{Namespace: "local", Source: folder.New(dir, templates.BuildOptions{})},
		{Namespace: "builtin", Source: templates.Embedded()}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		src      templates.Source
		tool     string
		args     map[string]any
		want     []string // in the text
		wantCode string   // the error's code, "" for success
		versions []string // the history's versions, in order
	}{
		{name: "history", src: src, tool: "flowyprompt_template_history", args: map[string]any{"name": "Greeting"},
			want:     []string{"3 commits changed **Greeting** (Greeting.json)", commits[2][:12] + " 2024-01-06T10:00:00Z v2.0.0 (served now) by Ada: Greeting 2.0.0", "v1.1.0", "v1.0.0 by Ada: Greeting 1.0.0\n"},
			versions: []string{"2.0.0", "1.1.0", "1.0.0"}},
		{name: "render an old metadata.version", src: src, tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "1.0.0"},
			want: []string{"hello one", "Version 1.0.0", shortID(commits[0])}},
		{name: "render at a tag", src: src, tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "v1.0.0"},
			want: []string{"hello one", "Version 1.0.0", `asked for "v1.0.0"`}},
		{name: "get at a commit SHA", src: src, tool: "flowyprompt_get_template", args: map[string]any{"name": "Greeting", "version": commits[1]},
			want: []string{"Version 1.1.0", shortID(commits[1])}},
		{name: "an unknown version", src: src, tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "9.9.9"},
			wantCode: "VERSION_NOT_FOUND", want: []string{"2.0.0 (" + commits[2][:12] + ")", "1.1.0 (", "1.0.0 ("}},
		{name: "an option as version", src: src, tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting", "version": "--output=x"},
			wantCode: "INVALID_ARGUMENT", want: []string{"starts with '-'"}},
		{name: "the current version", src: src, tool: "flowyprompt_render_template", args: map[string]any{"name": "Greeting"},
			want: []string{"hello two"}},
		{name: "several sources, history", src: composite, tool: "flowyprompt_template_history", args: map[string]any{"name": "local/Greeting"},
			want: []string{"3 commits changed **local/Greeting**"}, versions: []string{"2.0.0", "1.1.0", "1.0.0"}},
		{name: "several sources, render", src: composite, tool: "flowyprompt_render_template", args: map[string]any{"name": "local/Greeting", "version": "1.1.0"},
			want: []string{"hello one-one", "Version 1.1.0"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _ := newEngine(t, tt.src)
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			res := call(t, c, i+10, tt.tool, tt.args)
			checkVersionsResult(t, res, tt.wantCode, tt.want, tt.versions)
		})
	}
}

// TestVersionLookupBudget: random versions cannot spend the GitHub
// token's budget. 50 get_template calls with versions no commit declares
// make at most the budget of GitHub requests (the clock stands still, so
// none is refilled); once it is spent the answer is RATE_LIMITED, retryable,
// with a retry time; and a version already found missing costs nothing.
func TestVersionLookupBudget(t *testing.T) {
	t.Parallel()
	fake, _ := versionsRepo(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src, err := github.NewSource(github.Config{RepoURL: fake.RepoURL(), Ref: "main", APIURL: fake.URL(), TTL: time.Hour,
		CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := newEngine(t, src)
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)

	get := func(id int, version string) toolResult {
		return call(t, c, id, "flowyprompt_get_template", map[string]any{"name": "Greeting", "version": version})
	}
	// A version asked twice: the second time costs no request.
	if res := get(2, "0.0.1-missing"); res.StructuredContent["code"] != "VERSION_NOT_FOUND" {
		t.Fatalf("unknown version: %v", res.StructuredContent)
	}
	fake.Reset()
	if res := get(3, "0.0.1-missing"); res.StructuredContent["code"] != "VERSION_NOT_FOUND" {
		t.Fatalf("unknown version again: %v", res.StructuredContent)
	}
	if n := fake.Total(); n != 0 {
		t.Errorf("a version known missing cost %d GitHub requests, want 0", n)
	}

	fake.Reset()
	codes := map[string]int{}
	var limited toolResult
	for i := range 50 {
		res := get(10+i, fmt.Sprintf("9.%d.%d-random", i, i*7))
		code, _ := res.StructuredContent["code"].(string)
		codes[code]++
		if code == "RATE_LIMITED" && limited.Content == nil {
			limited = res
		}
		if code == "VERSION_NOT_FOUND" && codes["RATE_LIMITED"] > 0 {
			t.Fatalf("call %d found its version missing after the budget was spent", i)
		}
	}
	t.Logf("50 random versions: %d GitHub requests; answers %v", fake.Total(), codes)
	if n := fake.Total(); n > github.DefaultVersionLookups {
		t.Errorf("50 random versions cost %d GitHub requests, want at most %d", n, github.DefaultVersionLookups)
	}
	if codes["RATE_LIMITED"] == 0 || codes["VERSION_NOT_FOUND"]+codes["RATE_LIMITED"] != 50 {
		t.Fatalf("answers %v; want VERSION_NOT_FOUND until the budget is spent, then RATE_LIMITED", codes)
	}
	sc := limited.StructuredContent
	if sc["retryable"] != true || sc["retry_after"] == nil || sc["retry_after"].(float64) < 1 {
		t.Errorf("RATE_LIMITED answer lacks retryable and retry_after: %v", sc)
	}
	for _, w := range []string{"20 GitHub requests a minute", "--github-version-lookups", "GITHUB_VERSION_LOOKUPS"} {
		if !strings.Contains(limited.Content[0].Text, w) {
			t.Errorf("RATE_LIMITED answer lacks %q:\n%s", w, limited.Content[0].Text)
		}
	}
}
