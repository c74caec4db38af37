package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

// Commands in the docs that run offline against the built binary are
// written in fenced blocks whose info string is "sh runnable":
//
//	```sh runnable
//	flowyprompt list
//	```
//
// Renderers take the first word as the language and ignore the rest, so the
// block is still highlighted as shell. Every command of such a block (a line,
// with its "\" continuations; comment lines and blank lines skipped) is run
// on its own with sh -c, the built binary first on PATH, stdin closed, in a
// temporary folder that docSetups prepares for its doc, and must exit 0.

// runnableMark is the word after "sh" that marks a block as runnable.
const runnableMark = "runnable"

// minDocCommands is how many runnable commands the docs hold at least, so
// that TestDocCommands cannot pass by finding none (a renamed mark, a
// reworded fence).
const minDocCommands = 9

// docCommand is one command of a runnable block.
type docCommand struct {
	doc  string // slash path from the repository root
	line int    // 1-based line of the command's first line
	text string // as written, continuation lines joined by newlines
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.doc, c.line, c.text) }

// fence is the opening or closing line of a fenced code block.
var fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")

// docBlock is one fenced block of a markdown file.
type docBlock struct {
	info  []string // the info string's words; info[0] is the language
	line  int      // 1-based line of the first content line
	lines []string
}

// docBlocks returns the fenced blocks of a markdown text, in order.
func docBlocks(text string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	var open string
	for i, line := range strings.Split(text, "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			open = m[1]
			cur = &docBlock{info: strings.Fields(m[2]), line: i + 2}
		case cur != nil && m != nil && strings.TrimSpace(m[2]) == "" &&
			m[1][0] == open[0] && len(m[1]) >= len(open):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return blocks
}

// runnable reports whether a block is marked "sh runnable".
func (b docBlock) runnable() bool {
	if len(b.info) < 2 || b.info[0] != "sh" {
		return false
	}
	for _, w := range b.info[1:] {
		if w == runnableMark || w == "{"+runnableMark+"}" {
			return true
		}
	}
	return false
}

// commands splits a block into its commands.
func (b docBlock) commands(doc string) []docCommand {
	var cmds []docCommand
	var cur *docCommand
	for i, line := range b.lines {
		if cur == nil {
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			cur = &docCommand{doc: doc, line: b.line + i, text: line}
		} else {
			cur.text += "\n" + line
		}
		if !strings.HasSuffix(line, `\`) {
			cmds = append(cmds, *cur)
			cur = nil
		}
	}
	if cur != nil {
		cmds = append(cmds, *cur)
	}
	return cmds
}

// docFiles are the markdown files whose commands are checked.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	matches, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		files = append(files, "docs/"+filepath.Base(m))
	}
	sort.Strings(files[1:])
	return files
}

// docCommands returns every runnable command of the docs, by doc.
func docCommands(t *testing.T) map[string][]docCommand {
	t.Helper()
	byDoc := map[string][]docCommand{}
	for _, doc := range docFiles(t) {
		for _, b := range docBlocks(readDoc(t, doc)) {
			if b.runnable() {
				byDoc[doc] = append(byDoc[doc], b.commands(doc)...)
			}
		}
	}
	return byDoc
}

// docSetup is the folder and environment a doc's runnable commands expect,
// as the comment above its first runnable block says.
type docSetup struct {
	// prepare fills the working folder dir and returns extra environment.
	prepare func(t *testing.T, dir string) []string
	// want: for a command starting with the key, substrings its stdout
	// must hold (the output the doc states).
	want func(t *testing.T) map[string][]string
}

// docSetups holds the setup of every doc with runnable blocks; a doc that
// gains one needs an entry here.
var docSetups = map[string]docSetup{
	// README.md: a git repository with a staged change (for
	// "$(git diff --staged)") and ./prompts holding the examples.
	"README.md": {
		prepare: func(t *testing.T, dir string) []string {
			copyTree(t, filepath.Join("..", "..", "templates", "examples"), filepath.Join(dir, "prompts"))
			testfiles.Write(t, dir, map[string]string{"hello.txt": "hello\n"})
			git := exec.Command("sh", "-c", "git init -q && git add hello.txt")
			git.Dir = dir
			git.Env = serverEnv(t, "PATH="+os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1")
			if out, err := git.CombinedOutput(); err != nil {
				t.Skipf("README.md's commands need git: %v\n%s", err, out)
			}
			return nil
		},
		want: func(*testing.T) map[string][]string {
			return map[string][]string{
				"flowyprompt list":                   {"Commit_Message", "templates from embedded built-in examples"},
				"flowyprompt render Commit_Message":  {"+hello"},
				"flowyprompt serve --templates ./pr": nil,
			}
		},
	},
	// docs/claude-desktop.md: GOPATH's bin holds the binary, where
	// `make install` (and `go install`) put it.
	"docs/claude-desktop.md": {
		prepare: func(t *testing.T, dir string) []string {
			gopath := filepath.Join(dir, "go")
			copyFile(t, binary(t), filepath.Join(gopath, "bin", "flowyprompt"), 0o755)
			// The page runs `go env`: with telemetry on, the go command
			// leaves a process behind that writes into the configuration
			// folder while the test removes it.
			config := t.TempDir()
			testfiles.Write(t, config, map[string]string{"go/telemetry/mode": "off"})
			return []string{"GOPATH=" + gopath, "XDG_CONFIG_HOME=" + config}
		},
		want: func(*testing.T) map[string][]string {
			return map[string][]string{
				`echo "$(go env GOPATH)/bin/flowyprompt"`: {"/go/bin/flowyprompt"},
				`"$(go env GOPATH)/bin/flowyprompt" list`: {"templates from embedded built-in examples"},
			}
		},
	},
	// docs/templates.md: templates/ holds the page's complete example, as
	// written, and the guide it lists.
	"docs/templates.md": {
		prepare: func(t *testing.T, dir string) []string {
			example := docBlockAfter(t, "docs/templates.md", "`templates/Incident_Update.json`:", "json")
			testfiles.Write(t, dir, map[string]string{
				"templates/Incident_Update.json":             example,
				"templates/guides/incident-communication.md": "# Incident communication\n\nPlain words.\n",
			})
			return nil
		},
		want: func(t *testing.T) map[string][]string {
			// The text the page says the model receives.
			text := docBlockAfter(t, "docs/templates.md", "the model receives", "markdown")
			return map[string][]string{
				"flowyprompt validate templates/*.json":                   {"templates/Incident_Update.json: ok"},
				"TEMPLATES_DIR=./templates flowyprompt render Incident_U": {text, "# Incident communication"},
				"TEMPLATES_DIR=./templates flowyprompt list":              {"Incident_Update"},
				"flowyprompt test --templates ./templates":                {"PASS Incident_Update/resolved\n1 passed, 0 failed\n"},
			}
		},
	},
}

// docBlockAfter returns the content of the first block with language lang
// after the first line of doc containing marker.
func docBlockAfter(t *testing.T, doc, marker, lang string) string {
	t.Helper()
	text := readDoc(t, doc)
	at := strings.Index(text, marker)
	if at < 0 {
		t.Fatalf("%s no longer has %q", doc, marker)
	}
	after := strings.Count(text[:at], "\n") + 1
	for _, b := range docBlocks(text) {
		if b.line > after && len(b.info) > 0 && b.info[0] == lang {
			return strings.Join(b.lines, "\n") + "\n"
		}
	}
	t.Fatalf("%s has no %s block after %q", doc, lang, marker)
	return ""
}

// copyFile copies src to dst with mode perm, creating dst's folder.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, perm); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		copyFile(t, p, filepath.Join(dst, rel), 0o644)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocCommandsMarked: the docs mark enough commands as runnable, each
// doc that does has its setup, and every expected output names a command
// that is still in its doc.
func TestDocCommandsMarked(t *testing.T) {
	byDoc := docCommands(t)
	total := 0
	for doc, cmds := range byDoc {
		total += len(cmds)
		if _, ok := docSetups[doc]; !ok {
			t.Errorf("%s has runnable blocks (first %s) but docSetups has no entry for it", doc, cmds[0])
		}
	}
	if total < minDocCommands {
		t.Errorf("the docs have %d commands in ```sh %s blocks, want at least %d: was the mark renamed?", total, runnableMark, minDocCommands)
	}
	for doc, setup := range docSetups {
		if len(byDoc[doc]) == 0 {
			t.Errorf("docSetups has an entry for %s, which has no ```sh %s block", doc, runnableMark)
			continue
		}
		for prefix := range setup.want(t) {
			found := false
			for _, c := range byDoc[doc] {
				found = found || strings.HasPrefix(c.text, prefix)
			}
			if !found {
				t.Errorf("docSetups[%q] expects output of a command starting %q, which the doc no longer has", doc, prefix)
			}
		}
	}
	// A near miss of the mark would silently drop a block.
	near := regexp.MustCompile("(?m)^ {0,3}```+ *(\\S+)[ {]+(run+abl?e?|runable|run)\\b")
	for _, doc := range docFiles(t) {
		text := readDoc(t, doc)
		for _, loc := range near.FindAllStringSubmatchIndex(text, -1) {
			lang, word := text[loc[2]:loc[3]], text[loc[4]:loc[5]]
			if lang != "sh" || word != runnableMark {
				t.Errorf("%s:%d: fence %q: a runnable block is marked ```sh %s", doc,
					strings.Count(text[:loc[0]], "\n")+1, text[loc[0]:loc[1]], runnableMark)
			}
		}
	}
}

// TestDocCommands runs every runnable command of the docs against the
// built binary, as written.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary")
	}
	bin := binary(t)
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	byDoc := docCommands(t)
	docs := make([]string, 0, len(byDoc))
	for doc := range byDoc {
		docs = append(docs, doc)
	}
	sort.Strings(docs)
	for _, doc := range docs {
		t.Run(doc, func(t *testing.T) {
			setup, ok := docSetups[doc]
			if !ok {
				t.Fatalf("%s: no entry in docSetups", doc)
			}
			want := setup.want(t)
			for _, c := range byDoc[doc] {
				t.Run(fmt.Sprintf("line %d", c.line), func(t *testing.T) {
					dir := t.TempDir()
					env := serverEnv(t, append([]string{"PATH=" + path}, setup.prepare(t, dir)...)...)
					stdout, stderr, code := runDocCommand(t, c, dir, env)
					if code != 0 {
						t.Fatalf("%s\nexited %d\nstdout:\n%s\nstderr:\n%s", c, code, stdout, stderr)
					}
					for prefix, subs := range want {
						if !strings.HasPrefix(c.text, prefix) {
							continue
						}
						for _, s := range subs {
							if !strings.Contains(stdout, s) {
								t.Errorf("%s\nstdout lacks what the doc states:\n%s\nstdout:\n%s", c, s, stdout)
							}
						}
					}
				})
			}
		})
	}
}

// runDocCommand runs c with sh -c in dir with env as its whole environment
// and stdin closed.
func runDocCommand(t *testing.T, c docCommand, dir string, env []string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, fmt.Sprint(c), dir, env, "sh", "-c", c.text)
}

// TestDocBlocks: the extraction itself, on a small document.
func TestDocBlocks(t *testing.T) {
	text := "# T\n\n```sh runnable\nflowyprompt list   # all\n\n# a comment\nflowyprompt render X \\\n  --arg a=b\n```\n\n" +
		"```sh\nflowyprompt serve\n```\n\n````sh {runnable}\n```\nnot a fence end\n````\n\n```json\n{}\n```\n"
	var got []string
	for _, b := range docBlocks(text) {
		if b.runnable() {
			for _, c := range b.commands("x.md") {
				got = append(got, fmt.Sprintf("%d|%s", c.line, c.text))
			}
		}
	}
	want := []string{
		"4|flowyprompt list   # all",
		"7|flowyprompt render X \\\n  --arg a=b",
		"16|```",
		"17|not a fence end",
	}
	if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
		t.Errorf("commands:\n%q\nwant:\n%q", got, want)
	}
}
