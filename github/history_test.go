package github

import (
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

func historyTemplate(version string) []byte {
	return fakegithub.ValidTemplate("Greeting", "hello "+version)
}

// TestFileHistory follows a template's history across a restart and a
// push, counting requests: what was read is kept on disk (a version is
// downloaded once), the list is read once per commit (after a restart,
// revalidated with its ETag), and a push gives a new list.
func TestFileHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{})
	const p = "templates/Greeting.json"
	first := h.fake.CommitFiles("one", map[string][]byte{p: historyTemplate("a")})
	h.fake.CommitFiles("two\n\nbody", map[string][]byte{p: setVersion(historyTemplate("b"), "2.0.0")})
	s := h.source()
	ctx := ctxT(t)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name                         string
		run                          func(s *Source) (string, error)
		want                         string
		commits, contents, status304 int
	}{
		{"history", func(s *Source) (string, error) {
			r, err := s.FileHistory(ctx, p)
			return revisionsString(r.Revisions), err
		}, "two@,one@", 1, 0, 0},
		{"the file at the first commit", func(s *Source) (string, error) {
			b, err := s.FileAt(ctx, p, first)
			return string(b), err
		}, "hello a", 0, 1, 0},
		{"history names the version read", func(s *Source) (string, error) {
			r, err := s.FileHistory(ctx, p)
			return revisionsString(r.Revisions), err
		}, "two@,one@1.0.0", 0, 0, 0}, // the history at this commit is remembered
		{"a tag is read each time", func(s *Source) (string, error) {
			h.fake.SetTag("v1", first)
			b, err := s.FileAt(ctx, p, "v1")
			return string(b), err
		}, "hello a", 0, 1, 0},
	}
	run := func(s *Source) {
		for _, st := range steps {
			h.fake.Reset()
			got, err := st.run(s)
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			c := h.costs()
			t.Logf("%s: %s", st.name, c)
			if !strings.Contains(got, st.want) || c.ByRoute["commits"] != st.commits || c.ByRoute["contents"] != st.contents || c.Status[304] != st.status304 {
				t.Errorf("%s: %q, %s; want %q, commits %d, contents %d, 304s %d", st.name, got, c, st.want, st.commits, st.contents, st.status304)
			}
		}
	}
	run(s)

	// A restart on the same disk cache: the first commit's file is known,
	// so its version is named without reading it, and the list is a 304.
	h.fake.Reset()
	s2 := h.source()
	r, err := s2.FileHistory(ctx, p)
	if got := revisionsString(r.Revisions); err != nil || got != "two@,one@1.0.0" {
		t.Errorf("after a restart: %q, %v", got, err)
	}
	if b, err := s2.FileAt(ctx, p, first); err != nil || !strings.Contains(string(b), "hello a") {
		t.Errorf("after a restart, the file at the first commit: %q, %v", b, err)
	}
	if c := h.costs(); c.Total != 1 || c.Status[304] != 1 {
		t.Errorf("after a restart: %s; want 1 request, answered 304", c)
	}

	// A push: the catalog's new commit has a new list.
	h.fake.CommitFiles("three", map[string][]byte{p: setVersion(historyTemplate("c"), "3.0.0")})
	if _, err := s2.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h.fake.Reset()
	r, err = s2.FileHistory(ctx, p)
	if got := revisionsString(r.Revisions); err != nil || got != "three@,two@,one@1.0.0" {
		t.Errorf("after a push: %q, %v", got, err)
	}
	if c := h.costs(); c.Total != 1 || c.Status[200] != 1 {
		t.Errorf("after a push: %s; want 1 request, answered 200", c)
	}
}

// TestFileHistoryErrors: a path outside the template folder is refused
// before any request, and a missing file or ref names what to do, without
// the token.
func TestFileHistoryErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakegithub.Library{})
	h.fake.CommitFiles("one", map[string][]byte{"templates/Greeting.json": historyTemplate("a")})
	s := h.source()
	ctx := ctxT(t)
	tests := []struct {
		name, path, rev, code string
		requests              int
	}{
		{"outside the folder", "README.md", "main", fault.InvalidArgument, 0},
		{"leaving the repository", "templates/../../x.json", "main", fault.InvalidArgument, 0},
		{"no such ref", "templates/Greeting.json", "nope", fault.GitHubNotFound, 1},
		{"no such file", "templates/Gone.json", "main", fault.GitHubNotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.fake.Reset()
			_, err := s.FileAt(ctx, tt.path, tt.rev)
			f := fault.As(err)
			if f == nil || f.Code != tt.code || f.How == "" {
				t.Fatalf("error %v, want code %s with how", err, tt.code)
			}
			if strings.Contains(err.Error(), testToken) || strings.Contains(f.How, testToken) {
				t.Errorf("the token leaked: %v", err)
			}
			if n := h.costs().Total; n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

func setVersion(b []byte, v string) []byte {
	return []byte(strings.Replace(string(b), `"version":"1.0.0"`, `"version":"`+v+`"`, 1))
}

func revisionsString(revs []templates.Revision) string {
	var parts []string
	for _, r := range revs {
		parts = append(parts, r.Message+"@"+r.Version)
	}
	return strings.Join(parts, ",")
}

// TestTokenVarNamed: a source whose token comes from a variable of its
// own (a --source repository's token-env=) names that variable when its
// token is refused on a refresh, long after start-up, never GITHUB_PAT.
func TestTokenVarNamed(t *testing.T) {
	h := newHarness(t, fakegithub.Library{})
	h.fake.CommitFiles("one", map[string][]byte{"templates/Greeting.json": historyTemplate("a")})
	s := h.source(func(c *Config) { c.TokenVar = "TEAM_PAT" })
	ctx := ctxT(t)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	h.fake.SetToken("ghp_someoneElsesToken000000000000000000")
	_, err := s.Refresh(ctx)
	f := fault.As(err)
	if f == nil || f.Code != fault.GitHubAuthFailed {
		t.Fatalf("refresh with a revoked token: %v, want GITHUB_AUTH_FAILED", err)
	}
	if !strings.Contains(f.How, "check TEAM_PAT") || strings.Contains(f.How+f.Why+f.What, "GITHUB_PAT") {
		t.Errorf("the error names the wrong variable: %s / %s", f.Why, f.How)
	}
}
