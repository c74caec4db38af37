package app

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/xeipuuv/gojsonschema"
)

// toolFS holds each tool's description and schemas, as tools/NAME.md,
// tools/NAME.input.json and tools/NAME.output.json (tools/README.md says
// how to edit them). They are files rather than Go literals because they
// are prose and JSON that people write and review as such: a description
// reads in its file exactly as the model reads it, with no quoting, and a
// schema is checked and laid out by any JSON editor. One file per text,
// rather than one JSON file per tool, because a description inside a JSON
// string would be a single line of \n escapes. What binds a tool to Go
// (its name, the function that runs it, its title and annotations) stays
// in Go, where the tool is put together.
//
//go:embed tools
var toolFS embed.FS

// sharedDir holds the schema fragments that several schemas include.
const sharedDir = "shared"

// toolText is one tool's texts as the tools' files give them.
type toolText struct {
	description   string
	input, output string // compact JSON, includes spliced in
}

// toolTexts reads every tool's texts, once. A text that does not load is
// a programming error, not a condition of the run: the files are compiled
// into the binary, so it fails the same way on every start, and the tests
// that build the tools fail on it first. So it panics, as newTool does on
// a schema that does not compile, rather than giving New an error return
// that no caller could act on.
var toolTexts = sync.OnceValue(func() map[string]toolText {
	root, err := fs.Sub(toolFS, "tools")
	if err == nil {
		var texts map[string]toolText
		if texts, err = loadToolTexts(root); err == nil {
			return texts
		}
	}
	panic("internal/app/tools: " + err.Error())
})

// toolFromFiles is newTool with the description and schemas of the tool's
// files.
func toolFromFiles(name, titleText string, annotations *mcp.ToolAnnotations,
	run func(context.Context, *mcp.Request, toolArgs) (*toolResult, error)) *tool {
	t, ok := toolTexts()[name]
	if !ok {
		panic(fmt.Sprintf("internal/app/tools: no %s.md for tool %s", name, name))
	}
	return newTool(name, titleText, t.description, t.input, t.output, annotations, run)
}

// loadToolTexts reads the texts of every tool in fsys, by tool name. Any
// file that is not part of a tool's texts is an error, so that a misnamed
// file fails loudly instead of leaving its tool with the old text.
func loadToolTexts(fsys fs.FS) (map[string]toolText, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	texts := map[string]toolText{}
	included := map[string]bool{}
	var schemaFiles []string
	for _, e := range entries {
		file := e.Name()
		switch {
		case file == sharedDir && e.IsDir(), file == "README.md":
			// Fragments are read where they are included; the README is
			// for people.
		case strings.HasSuffix(file, ".input.json"), strings.HasSuffix(file, ".output.json"):
			schemaFiles = append(schemaFiles, file)
		case strings.HasSuffix(file, ".md") && !e.IsDir():
			name := strings.TrimSuffix(file, ".md")
			t, err := loadToolText(fsys, name, included)
			if err != nil {
				return nil, err
			}
			texts[name] = t
		default:
			return nil, fmt.Errorf("%s: not a tool's NAME.md, NAME.input.json or NAME.output.json", file)
		}
	}
	for _, file := range schemaFiles {
		name := strings.TrimSuffix(strings.TrimSuffix(file, ".input.json"), ".output.json")
		if _, ok := texts[name]; !ok {
			return nil, fmt.Errorf("%s: no %s.md beside it, so no tool uses it", file, name)
		}
	}
	fragments, err := fs.ReadDir(fsys, sharedDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, f := range fragments {
		if file := path.Join(sharedDir, f.Name()); !included[file] {
			return nil, fmt.Errorf("%s: no schema includes it", file)
		}
	}
	return texts, nil
}

func loadToolText(fsys fs.FS, name string, included map[string]bool) (toolText, error) {
	desc, err := fs.ReadFile(fsys, name+".md")
	if err != nil {
		return toolText{}, err
	}
	if len(bytes.TrimSpace(desc)) == 0 {
		return toolText{}, fmt.Errorf("%s.md: empty description", name)
	}
	input, err := loadSchema(fsys, name+".input.json", included)
	if err != nil {
		return toolText{}, err
	}
	output, err := loadSchema(fsys, name+".output.json", included)
	if err != nil {
		return toolText{}, err
	}
	return toolText{description: string(desc), input: input, output: output}, nil
}

// includeRE matches an include: an object whose only member is
// "$include", naming a fragment in sharedDir. The whole object is replaced
// by the fragment's text, so the schema a client sees has the fragment
// written out, and keeps the order of its members. Matching text is safe
// once the file is known to be valid JSON: there, quotes outside a string
// cannot be mistaken for quotes inside one.
var includeRE = regexp.MustCompile(`\{\s*"\$include"\s*:\s*"([^"\\]*)"\s*\}`)

// includeKey finds what is left of an include after splicing: one with
// other members, or one inside a fragment (fragments include nothing).
var includeKey = regexp.MustCompile(`"\$include"\s*:`)

// loadSchema reads a schema file, splices its includes in, and checks the
// result is a JSON schema that compiles. It returns the schema compact:
// the file's layout is for people.
func loadSchema(fsys fs.FS, file string, included map[string]bool) (string, error) {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		return "", err
	}
	if err := checkJSON(file, raw); err != nil {
		return "", err
	}
	var spliceErr error
	spliced := includeRE.ReplaceAllFunc(raw, func(m []byte) []byte {
		target := string(includeRE.FindSubmatch(m)[1])
		if path.Dir(target) != sharedDir || !fs.ValidPath(target) {
			spliceErr = errors.Join(spliceErr, fmt.Errorf("%s: includes %q, which is not a file in %s/", file, target, sharedDir))
			return m
		}
		frag, err := fs.ReadFile(fsys, target)
		if err == nil {
			err = checkJSON(target, frag)
		}
		if err != nil {
			spliceErr = errors.Join(spliceErr, fmt.Errorf("%s: %w", file, err))
			return m
		}
		included[target] = true
		return bytes.TrimSpace(frag)
	})
	if spliceErr != nil {
		return "", spliceErr
	}
	if includeKey.Match(spliced) {
		return "", fmt.Errorf(`%s: a "$include" is left after splicing: an include is an object with "$include" as its only member, and fragments include nothing`, file)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, spliced); err != nil {
		return "", fmt.Errorf("%s: not JSON once its includes are spliced in: %w", file, err)
	}
	if _, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(compact.Bytes())); err != nil {
		return "", fmt.Errorf("%s: not a JSON schema: %w", file, err)
	}
	return compact.String(), nil
}

// checkJSON reports a file that is not JSON, with the line of the fault.
func checkJSON(file string, b []byte) error {
	var v any
	err := json.Unmarshal(b, &v)
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%s:%d: not JSON: %w", file, bytes.Count(b[:syntax.Offset], []byte("\n"))+1, err)
	}
	return fmt.Errorf("%s: not JSON: %w", file, err)
}
