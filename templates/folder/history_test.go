package folder

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/gittest"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
)

func versioned(version, content string) []byte {
	return []byte(`{"metadata":{"name":"Greeting","description":"greets","version":"` + version + `"},` +
		`"variables":[],"results":[{"name":"S","content":"` + content + `"}]}`)
}

// greetingRepo is a repository whose templates folder is prompts/, a
// subfolder (so paths differ between the folder and the repository), with
// Greeting.json committed as 1.0.0 (tagged v1.0.0), 1.1.0 and 2.0.0, a
// commit of another file between, and an edit not committed. It returns
// the folder and the three commits, oldest first.
func greetingRepo(t testing.TB) (*gittest.Repo, string, [3]string) {
	t.Helper()
	r := gittest.New(t)
	var c [3]string
	c[0] = r.Commit("Ada Lovelace", "Greeting 1.0.0\n\nThe first greeting.", map[string][]byte{"prompts/Greeting.json": versioned("1.0.0", "hello one")})
	r.Git("tag", "v1.0.0")
	c[1] = r.Commit("Jörg Müller", "Greeting 1.1.0: naïve café ☕\nsecond line", map[string][]byte{"prompts/Greeting.json": versioned("1.1.0", "hello one-one")})
	r.Commit("Ada Lovelace", "Other", map[string][]byte{"prompts/Other.json": tmpl("Other", "other")})
	c[2] = r.Commit("Ada Lovelace", "Greeting 2.0.0", map[string][]byte{"prompts/Greeting.json": versioned("2.0.0", "hello two")})
	if err := os.WriteFile(filepath.Join(r.Root, "prompts", "Greeting.json"), versioned("2.1.0-draft", "not committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r, filepath.Join(r.Root, "prompts"), c
}

func day(d int) time.Time { return time.Date(2024, 1, 2+d, 10, 0, 0, 0, time.UTC) }

func TestFileHistory(t *testing.T) {
	_, dir, c := greetingRepo(t)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	got, err := src.FileHistory(context.Background(), "Greeting.json")
	if err != nil {
		t.Fatal(err)
	}
	want := templates.Revisions{Ref: c[2], Revisions: []templates.Revision{
		{Commit: c[2], Date: day(4), Author: "Ada Lovelace", Message: "Greeting 2.0.0", Version: "2.0.0"},
		{Commit: c[1], Date: day(2), Author: "Jörg Müller", Message: "Greeting 1.1.0: naïve café ☕", Version: "1.1.0"},
		{Commit: c[0], Date: day(1), Author: "Ada Lovelace", Message: "Greeting 1.0.0", Version: "1.0.0"},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}

	// A file never committed has no history, and says so without error.
	writeFile(t, filepath.Join(dir, "New.json"), tmpl("New", "new"))
	got, err = src.FileHistory(context.Background(), "New.json")
	if err != nil || len(got.Revisions) != 0 || got.Truncated {
		t.Errorf("uncommitted file: %+v, %v; want no revisions", got, err)
	}
}

// TestFileHistoryPage: one page of commits, newest first, and Truncated
// only when there are more.
func TestFileHistoryPage(t *testing.T) {
	r := gittest.New(t)
	for i := range templates.HistoryPage + 2 {
		r.Commit("A", "v"+strconv.Itoa(i), map[string][]byte{"T.json": tmpl("T", strconv.Itoa(i))})
	}
	src := New(r.Root, templates.BuildOptions{Logger: quiet})
	got, err := src.FileHistory(context.Background(), "T.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Revisions) != templates.HistoryPage || !got.Truncated || got.Revisions[0].Message != "v31" || got.Revisions[29].Message != "v2" {
		t.Errorf("got %d revisions (truncated %v), first %q, last %q; want 30, truncated, v31 to v2",
			len(got.Revisions), got.Truncated, got.Revisions[0].Message, got.Revisions[len(got.Revisions)-1].Message)
	}
}

func TestFileAt(t *testing.T) {
	r, dir, c := greetingRepo(t)
	r.Git("branch", "old", c[1])
	src := New(dir, templates.BuildOptions{Logger: quiet})
	outside := filepath.Join(t.TempDir(), "x")
	tests := []struct {
		name, path, rev string
		max             int
		want            []byte
		wantCode        string
		wantText        string // in the error
	}{
		{name: "tag", path: "Greeting.json", rev: "v1.0.0", want: versioned("1.0.0", "hello one")},
		{name: "short SHA", path: "Greeting.json", rev: c[1][:8], want: versioned("1.1.0", "hello one-one")},
		{name: "full SHA", path: "Greeting.json", rev: c[2], want: versioned("2.0.0", "hello two")},
		{name: "branch", path: "Greeting.json", rev: "old", want: versioned("1.1.0", "hello one-one")},
		{name: "unknown rev", path: "Greeting.json", rev: "9.9.9", wantCode: fault.VersionNotFound, wantText: `is named "9.9.9"`},
		{name: "file not in that commit", path: "Other.json", rev: "v1.0.0", wantCode: fault.VersionNotFound, wantText: "not in commit " + c[0][:12]},
		{name: "option", path: "Greeting.json", rev: "--output=" + outside, wantCode: fault.InvalidArgument, wantText: "starts with '-'"},
		{name: "range", path: "Greeting.json", rev: "v1.0.0..HEAD", wantCode: fault.InvalidArgument, wantText: `".."`},
		{name: "newline", path: "Greeting.json", rev: "v1.0.0\nHEAD:prompts/Other.json", wantCode: fault.InvalidArgument, wantText: "control character"},
		{name: "object, not a commit", path: "Greeting.json", rev: "HEAD:prompts/Other.json", wantCode: fault.InvalidArgument, wantText: "no tag or branch name"},
		{name: "path out of the folder", path: "../README", rev: "v1.0.0", wantCode: fault.InvalidArgument, wantText: "not a file of the template folder"},
		{name: "not a template file", path: "notes.txt", rev: "v1.0.0", wantCode: fault.InvalidArgument, wantText: "not a file of the template folder"},
		{name: "hidden file", path: ".secret.json", rev: "v1.0.0", wantCode: fault.InvalidArgument, wantText: "not a file of the template folder"},
		{name: "too large at that commit", path: "Greeting.json", rev: "v1.0.0", max: 50, wantCode: fault.TemplateTooLarge, wantText: "Greeting.json is " + strconv.Itoa(len(versioned("1.0.0", "hello one"))) + " bytes, over the 50-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := src
			if tt.max > 0 {
				s = New(dir, templates.BuildOptions{Logger: quiet, MaxFileSize: tt.max})
			}
			got, err := s.FileAt(context.Background(), tt.path, tt.rev)
			if code := fault.CodeOf(err); (err != nil || tt.wantCode != "") && code != tt.wantCode {
				t.Fatalf("error %v (%s), want code %q", err, code, tt.wantCode)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q lacks %q", err, tt.wantText)
			}
			if d := cmp.Diff(string(tt.want), string(got)); d != "" {
				t.Errorf("bytes (-want +got):\n%s", d)
			}
		})
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): git ran with --output", outside, err)
	}
}

// TestVersionsUnsupported: a folder in no work tree, or without git,
// answers VERSIONS_UNSUPPORTED saying which; an option-like rev is refused
// before any git command, so even there it is an invalid argument.
func TestVersionsUnsupported(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Greeting.json"), versioned("1.0.0", "hi"))
	// Git must not find a repository above the temporary folder.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	r, inRepo, _ := greetingRepo(t)
	noGit := t.TempDir()
	tests := []struct {
		name, dir, path string
		rev             string // "" for FileHistory
		path_           string // PATH, when set
		wantCode        string
		wantText        string
	}{
		{name: "history, not a work tree", dir: dir, wantCode: fault.VersionsUnsupported, wantText: "versions need a GitHub library or a folder in a Git work tree: this template comes from a folder that is not in a Git work tree"},
		{name: "file at, not a work tree", dir: dir, rev: "v1.0.0", wantCode: fault.VersionsUnsupported, wantText: "not in a Git work tree"},
		{name: "inside .git", dir: filepath.Join(r.Root, ".git"), wantCode: fault.VersionsUnsupported, wantText: "inside a .git folder"},
		{name: "option, not a work tree", dir: dir, rev: "--output=x", wantCode: fault.InvalidArgument, wantText: "starts with '-'"},
		{name: "no git", dir: inRepo, path_: noGit, wantCode: fault.VersionsUnsupported, wantText: "git is not installed (not on PATH)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path_ != "" {
				t.Setenv("PATH", tt.path_)
			}
			src := New(tt.dir, templates.BuildOptions{Logger: quiet})
			var err error
			if tt.rev == "" {
				_, err = src.FileHistory(context.Background(), "Greeting.json")
			} else {
				_, err = src.FileAt(context.Background(), "Greeting.json", tt.rev)
			}
			f := fault.As(err)
			if f == nil || f.Code != tt.wantCode {
				t.Fatalf("error %v, want code %s", err, tt.wantCode)
			}
			if !strings.Contains(f.Why+f.What, tt.wantText) || f.How == "" {
				t.Errorf("fault %+v lacks %q or a how", f, tt.wantText)
			}
		})
	}
}

// TestGitEnv: variables that would choose another repository are not
// passed to git.
func TestGitEnv(t *testing.T) {
	r, dir, c := greetingRepo(t)
	other := gittest.New(t)
	other.Commit("B", "elsewhere", map[string][]byte{"prompts/Greeting.json": versioned("9.0.0", "other")})
	t.Setenv("GIT_DIR", filepath.Join(other.Root, ".git"))
	t.Setenv("GIT_WORK_TREE", other.Root)
	got, err := New(dir, templates.BuildOptions{Logger: quiet}).FileHistory(context.Background(), "Greeting.json")
	if err != nil || got.Ref != c[2] {
		t.Errorf("history read %q (%v), want the folder's repository %s at %s", got.Ref, err, r.Root, c[2])
	}
}

func TestParseLog(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	rec := func(fields ...string) string { return strings.Join(fields, "\x1f") + "\x00" }
	tests := []struct {
		name    string
		out     string
		want    []templates.Revision
		wantErr bool
	}{
		{name: "empty", out: "", want: []templates.Revision{}},
		{name: "two commits", out: rec(sha, "1700000000", "Ada", "First\n\nbody\n") + rec(strings.ToUpper(sha), "0", "Bo", "Second\n"),
			want: []templates.Revision{{Commit: sha, Date: time.Unix(1700000000, 0).UTC(), Author: "Ada", Message: "First"},
				{Commit: sha, Date: time.Unix(0, 0).UTC(), Author: "Bo", Message: "Second"}}},
		{name: "unicode, separators and newlines in the message", out: rec(sha, "1", "Jörg Müller", "  Ünïcode ☕ a\x1fb \r\nline two\nline three"),
			want: []templates.Revision{{Commit: sha, Date: time.Unix(1, 0).UTC(), Author: "Jörg Müller", Message: "Ünïcode ☕ a\x1fb"}}},
		{name: "empty message", out: rec(sha, "1", "A", ""),
			want: []templates.Revision{{Commit: sha, Date: time.Unix(1, 0).UTC(), Author: "A"}}},
		{name: "missing field", out: rec(sha, "1", "A"), wantErr: true},
		{name: "not a SHA", out: rec("HEAD", "1", "A", "m"), wantErr: true},
		{name: "bad date", out: rec(sha, "yesterday", "A", "m"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLog([]byte(tt.out))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); !tt.wantErr && d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// FuzzParseLog: whatever names and messages hold (no NUL, which git does
// not write in them), they come back as written, and no output panics.
func FuzzParseLog(f *testing.F) {
	f.Add("Ada", "First\n\nbody", int64(1700000000))
	f.Add("Jörg", "☕\x1f\nx", int64(0))
	f.Fuzz(func(t *testing.T, author, message string, secs int64) {
		_, _ = parseLog([]byte(author + "\x00" + message))
		if strings.ContainsAny(author, "\x00\x1f\n") || strings.Contains(message, "\x00") || secs < 0 {
			return
		}
		const sha = "0123456789abcdef0123456789abcdef01234567"
		out := sha + "\x1f" + strconv.FormatInt(secs, 10) + "\x1f" + author + "\x1f" + message + "\x00"
		got, err := parseLog([]byte(out))
		first, _, _ := strings.Cut(message, "\n")
		want := []templates.Revision{{Commit: sha, Date: time.Unix(secs, 0).UTC(), Author: author, Message: strings.TrimSpace(first)}}
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}

// BenchmarkFileHistory measures a history of three commits (with their
// versions read) and one file at a tag: the git commands each runs.
func BenchmarkFileHistory(b *testing.B) {
	_, dir, _ := greetingRepo(b)
	src := New(dir, templates.BuildOptions{Logger: quiet})
	ctx := context.Background()
	b.Run("FileHistory", func(b *testing.B) {
		for b.Loop() {
			if _, err := src.FileHistory(ctx, "Greeting.json"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FileAt", func(b *testing.B) {
		for b.Loop() {
			if _, err := src.FileAt(ctx, "Greeting.json", "v1.0.0"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A template in another format has its history like a JSON one: the
// history is by path, whatever the file's format.
func TestFileHistoryOtherFormat(t *testing.T) {
	r := gittest.New(t)
	yml := func(text string) []byte {
		return []byte("name: Summarize\nmessages:\n  - role: user\n    content: " + text + " {{input}}\n")
	}
	c0 := r.Commit("Ada Lovelace", "Summarize: first", map[string][]byte{"summarize.prompt.yml": yml("Summarize")})
	c1 := r.Commit("Ada Lovelace", "Summarize: shorter", map[string][]byte{"summarize.prompt.yml": yml("Shorten")})
	src := New(r.Root, templates.BuildOptions{Logger: quiet})
	got, err := src.FileHistory(context.Background(), "summarize.prompt.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Revisions) != 2 || got.Revisions[0].Commit != c1 || got.Revisions[1].Commit != c0 {
		t.Fatalf("history %+v", got)
	}
	data, err := src.FileAt(context.Background(), "summarize.prompt.yml", c0)
	if err != nil || !strings.Contains(string(data), "Summarize {{input}}") {
		t.Errorf("FileAt: %q, %v", data, err)
	}
}
