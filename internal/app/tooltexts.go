package app

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/flowyprompt/flowyprompt/mcp"
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

// toolText is one tool's texts as the tools' files give them.
type toolText struct {
	description   string
	input, output string // compact JSON
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
	return newTool(name, titleText, t.description, t.input, withErrorShape(t.output), annotations, run)
}

// errorSchemaFile describes the structuredContent of a failed tool call
// ({code, what, why, how, suggestions, problems, retryable, retry_after}).
const errorSchemaFile = "error.schema.json"

// withErrorShape returns a tool's output schema extended so that the
// structuredContent of an error result is valid against it too: clients
// (the TypeScript SDK among them) check structuredContent against the
// outputSchema even when isError is set. The tool's required members
// become one branch of an anyOf whose other branch is the error's.
//
// The error's properties are not copied into every tool's schema: no
// output schema forbids other properties, so an error validates without
// them, and the copies cost about 2.5 KB of tools/list, which every client
// carries in its context. The error's shape is documented once, in
// error.schema.json and docs/protocol.md; its text says what, why and how.
var withErrorShape = func() func(string) string {
	raw, err := fs.ReadFile(toolFS, "tools/"+errorSchemaFile)
	var shape struct {
		Required []string `json:"required"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &shape)
	}
	if err != nil {
		panic("internal/app/tools: " + err.Error())
	}
	errRequired, _ := json.Marshal(shape.Required)
	return func(output string) string {
		var schema map[string]json.RawMessage
		if err := json.Unmarshal([]byte(output), &schema); err != nil {
			panic("internal/app/tools: output schema: " + err.Error())
		}
		if _, closed := schema["additionalProperties"]; closed {
			panic("internal/app/tools: an output schema may not set additionalProperties: an error result would not validate against it")
		}
		required := schema["required"]
		if required == nil {
			required = json.RawMessage("[]")
		}
		delete(schema, "required")
		schema["anyOf"] = json.RawMessage(`[{"required":` + string(required) + `},{"required":` + string(errRequired) + `}]`)
		out, _ := json.Marshal(schema)
		return string(out)
	}
}()

// loadToolTexts reads the texts of every tool in fsys, by tool name. Any
// file that is not part of a tool's texts is an error, so that a misnamed
// file fails loudly instead of leaving its tool with the old text.
func loadToolTexts(fsys fs.FS) (map[string]toolText, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	texts := map[string]toolText{}
	var schemaFiles []string
	for _, e := range entries {
		file := e.Name()
		switch {
		case file == "README.md":
			// For people.
		case file == errorSchemaFile:
			// Every tool's, merged into its output schema by toolFromFiles.
		case strings.HasSuffix(file, ".input.json"), strings.HasSuffix(file, ".output.json"):
			schemaFiles = append(schemaFiles, file)
		case strings.HasSuffix(file, ".md") && !e.IsDir():
			name := strings.TrimSuffix(file, ".md")
			t, err := loadToolText(fsys, name)
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
	return texts, nil
}

func loadToolText(fsys fs.FS, name string) (toolText, error) {
	desc, err := fs.ReadFile(fsys, name+".md")
	if err != nil {
		return toolText{}, err
	}
	if len(bytes.TrimSpace(desc)) == 0 {
		return toolText{}, fmt.Errorf("%s.md: empty description", name)
	}
	input, err := loadSchema(fsys, name+".input.json")
	if err != nil {
		return toolText{}, err
	}
	output, err := loadSchema(fsys, name+".output.json")
	if err != nil {
		return toolText{}, err
	}
	return toolText{description: string(desc), input: input, output: output}, nil
}

// loadSchema reads a schema file and returns it compact: the file's layout
// is for people. Whether it is a JSON schema that compiles, newTool checks
// when it compiles it.
func loadSchema(fsys fs.FS, file string) (string, error) {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		return "", err
	}
	if err := checkJSON(file, raw); err != nil {
		return "", err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
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
