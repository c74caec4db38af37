package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readDoc reads a file of the repository, relative to its root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsAgreeWithTheCode: what the README and docs/inspector.md tell a
// newcomer to run works as written.
func TestDocsAgreeWithTheCode(t *testing.T) {
	readme := readDoc(t, "README.md")
	inspector := readDoc(t, "docs/inspector.md")

	// The README opens with exactly the two set-up commands.
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	if first == nil {
		t.Fatal("README.md has no sh block")
	}
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(first[1]), "\n") {
		cmds = append(cmds, strings.TrimSpace(strings.SplitN(line, "#", 2)[0]))
	}
	if strings.Join(cmds, "|") != "make run|make test" {
		t.Errorf("the README's first commands are %q, want make run and make test", cmds)
	}

	tests := []struct {
		name, doc, text string
		want            []string
		not             []*regexp.Regexp
	}{
		{name: "README: make run on another address", doc: "README.md", text: readme, want: []string{"make run ADDR="}},
		{name: "README: the Inspector's Node", doc: "README.md", text: readme,
			want: []string{"Node 22.19", "spawn -q ENOENT", "@modelcontextprotocol/inspector@2"}},
		{name: "inspector.md: the Inspector's Node", doc: "docs/inspector.md", text: inspector,
			want: []string{"Node 22.19", "spawn -q ENOENT", "0.15"},
			// Every npx names the 2.x Inspector: a bare name lets npx pick
			// the old one on an old Node.
			not: []*regexp.Regexp{regexp.MustCompile(`npx (-y )?@modelcontextprotocol/inspector(\s|"|$)`)}},
		// A value in single quotes keeps \n as two characters: the diff
		// would arrive as one line.
		{name: "inspector.md: no literal \\n", doc: "docs/inspector.md", text: inspector,
			not: []*regexp.Regexp{regexp.MustCompile(`--prompt-args \w+='[^'\n]*\\n`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				if !strings.Contains(tt.text, w) {
					t.Errorf("%s lacks %q", tt.doc, w)
				}
			}
			for _, re := range tt.not {
				if m := re.FindString(tt.text); m != "" {
					t.Errorf("%s has %q", tt.doc, m)
				}
			}
		})
	}
}

// TestGoInstallCaveat: `go install …@latest` fails while the module is
// unpublished, so every page that gives it says so just before, as the
// README does, and gives make install, which works from a checkout.
func TestGoInstallCaveat(t *testing.T) {
	const caveat = "Once the module is published"
	found := 0
	for _, doc := range docFiles(t) {
		text := readDoc(t, doc)
		lines := strings.Split(text, "\n")
		end := 0 // the line after the previous block
		for _, b := range docBlocks(text) {
			prose := strings.Join(lines[end:b.line-2], "\n")
			end = b.line + len(b.lines)
			if !strings.Contains(strings.Join(b.lines, "\n"), "go install github.com/flowyprompt/flowyprompt") {
				continue
			}
			found++
			if !strings.Contains(prose, caveat) {
				t.Errorf("%s:%d: gives go install without %q before it:\n%s", doc, b.line, caveat, prose)
			}
			if !strings.Contains(text, "make install") {
				t.Errorf("%s gives go install but not make install, which works before the module is published", doc)
			}
		}
	}
	if found < 2 {
		t.Errorf("%d docs give go install, want README.md and docs/claude-desktop.md: was the command changed?", found)
	}
}
