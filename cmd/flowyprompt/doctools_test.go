package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

// servedTools returns the names of the tools the server lists (tools/list
// over stdio, as serve answers a client), with writing enabled or not.
func servedTools(t *testing.T, write bool) []string {
	t.Helper()
	dir := t.TempDir() // a folder: the built-in examples cannot be written
	testfiles.Write(t, dir, map[string]string{"Hello.json": `{"metadata":{"name":"Hello","description":"Greets","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"G","content":"Hello!"}]}`})
	env := map[string]string{"TEMPLATES_DIR": dir, "WRITE_ENABLED": strconv.FormatBool(write)}
	stdin := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	stdout, stderr, code := runCLI(t, env, stdin, "serve")
	if code != 0 {
		t.Fatalf("serve: exit %d\nstderr: %s", code, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &resp) != nil || resp.ID != 2 {
			continue
		}
		if resp.Result.NextCursor != "" {
			t.Fatalf("tools/list has a second page: read it too")
		}
		var names []string
		for _, tool := range resp.Result.Tools {
			names = append(names, tool.Name)
		}
		if len(names) == 0 {
			t.Fatalf("tools/list lists no tools:\n%s", line)
		}
		return names
	}
	t.Fatalf("no answer to tools/list:\nstdout: %s\nstderr: %s", stdout, stderr)
	return nil
}

var (
	// toolName is a tool's name as the docs write it (Void's random
	// prefix, k3x9a1_flowyprompt_list_templates, holds one too).
	toolName = regexp.MustCompile(`flowyprompt_[a-z][a-z0-9_]*[a-z0-9]`)
	// toolCount is a number of tools stated in words or digits: "nine
	// tools", "the 10 `flowyprompt_*` tools".
	toolCount = regexp.MustCompile("(?i)\\b(" + strings.Join(numberWords[1:], "|") + "|\\d+)\\s+(?:`flowyprompt_\\*`\\s+)?tools\\b")
	// toolOrdinal is the save tool counted after the others: "a tenth
	// tool", "an eleventh tool".
	toolOrdinal = regexp.MustCompile("(?i)\\ban?\\s+(" + strings.Join(ordinalWords[2:], "|") + ")\\s+tool\\b")
	// writing marks a passage about the save tool, where a count may
	// include it.
	writing = regexp.MustCompile("flowyprompt_save_template|--allow-write|WRITE_ENABLED")

	numberWords  = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen"}
	ordinalWords = []string{"zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth"}
)

// docNumber reads a number written in digits or in words.
func docNumber(words []string, s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return slices.Index(words, strings.ToLower(s))
}

// docPassage is a paragraph, list or table of a doc: text between blank
// lines.
type docPassage struct {
	line int // 1-based line of its first line
	text string
}

func docPassages(text string) []docPassage {
	var out []docPassage
	var cur []string
	start := 0
	for i, line := range strings.Split(text+"\n", "\n") {
		if strings.TrimSpace(line) != "" {
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, line)
			continue
		}
		if len(cur) > 0 {
			out = append(out, docPassage{start, strings.Join(cur, "\n")})
			cur = nil
		}
	}
	return out
}

// TestDocsToolsAgreeWithTheServer: what README.md and docs/ say about the
// tools is what the server lists, so that a new tool cannot leave a page
// wrong unnoticed. Every tool name in the docs is one the server has; a
// passage (paragraph, list, table) naming most of the tools names every
// tool listed without writing; a number of tools is how many the server
// lists (or, in a passage about writing, lists with it), and "a tenth
// tool" names the save tool's place.
func TestDocsToolsAgreeWithTheServer(t *testing.T) {
	base, all := servedTools(t, false), servedTools(t, true)
	if len(all) != len(base)+1 || !slices.Contains(all, "flowyprompt_save_template") {
		t.Fatalf("with writing the server lists %v, without %v: want the same and flowyprompt_save_template", all, base)
	}
	counted := 0
	for _, doc := range docFiles(t) {
		for _, p := range docPassages(readDoc(t, doc)) {
			at := fmt.Sprintf("%s:%d", doc, p.line)
			named := map[string]bool{}
			for _, name := range toolName.FindAllString(p.text, -1) {
				if !slices.Contains(all, name) {
					t.Errorf("%s: names %s, which the server does not list (its tools: %v)", at, name, all)
				}
				named[name] = true
			}
			if len(named) > len(base)/2 {
				var missing []string
				for _, name := range base {
					if !named[name] {
						missing = append(missing, name)
					}
				}
				if len(missing) > 0 {
					t.Errorf("%s: names %d of the server's %d tools, without %v:\n%s", at, len(named), len(base), missing, p.text)
				}
			}
			for _, m := range toolCount.FindAllStringSubmatch(p.text, -1) {
				counted++
				n := docNumber(numberWords, m[1])
				if n != len(base) && (n != len(all) || !writing.MatchString(p.text)) {
					t.Errorf("%s: says %q: the server lists %d tools (%d with --allow-write)", at, m[0], len(base), len(all))
				}
			}
			for _, m := range toolOrdinal.FindAllStringSubmatch(p.text, -1) {
				counted++
				if n := docNumber(ordinalWords, m[1]); n != len(all) {
					t.Errorf("%s: says %q: the save tool is the %s (%d without writing)", at, m[0], ordinalWords[len(all)], len(base))
				}
			}
		}
	}
	// The pages that count the tools, so that a reworded count is not
	// silently skipped.
	if counted < 3 {
		t.Errorf("the docs state a number of tools %d times, want at least 3 (docs/void.md, docs/inspector.md, docs/claude-desktop.md): was the wording changed?", counted)
	}
}
