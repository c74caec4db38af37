package templates

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/goccy/go-yaml"
)

// The file formats teams already keep are read into the same Template as
// ours, so they are served, validated, listed and watched alike. What each
// maps to is in docs/templates.md; what they share is here: the name a
// file gives, the roles, the variables a file declares none of, and the
// warnings.

// formatExtensions maps each file name ending to its format, longest first
// so ".prompt.yml" is not taken for ".yml" or ".prompt".
var formatExtensions = []struct{ ext, format string }{
	{".prompt.yaml", FormatPromptYML},
	{".prompt.yml", FormatPromptYML},
	{".prompty", FormatPrompty},
	{".prompt", FormatDotprompt},
	{".json", FormatJSON},
}

// FormatOf returns the format of the file at p, read from its name, and the
// template name it gives: the base name without the format's extension
// ("summarize.prompt.yml" is summarize). The format is "" for a file no
// format reads.
func FormatOf(p string) (format, name string) {
	base := path.Base(p)
	for _, fe := range formatExtensions {
		if stem, ok := strings.CutSuffix(base, fe.ext); ok {
			return fe.format, stem
		}
	}
	return "", ""
}

// isDotpromptPartial reports whether p is a dotprompt partial
// (_NAME.prompt): a piece other templates include, not a template of its
// own.
func isDotpromptPartial(p string) bool {
	format, name := FormatOf(p)
	return format == FormatDotprompt && strings.HasPrefix(name, "_")
}

// Roles as the other formats write them. A system message has no place in
// an MCP prompt, whose messages are user or assistant: it becomes the
// first user message, the same in every format.
const (
	roleSystem = "system"
	roleModel  = "model" // dotprompt's name for the assistant
)

// formatReader gathers what a reader of one format finds: the template,
// and the problems and warnings, located by JSON pointer and line.
type formatReader struct {
	file     string // the file's path or name, for messages
	format   string
	doc      *yamlDoc // the YAML part, for lines; nil when there is none
	t        *Template
	problems []Problem
	warnings []Warning
	msgs     []formatMessage
	// samples are example values (Prompty's sample) for the variables.
	samples yaml.MapSlice
	// declared is set when the file declares its variables (dotprompt's
	// input schema, Prompty's inputs): then a placeholder without one is
	// warned of, as in our format; else the placeholders are the variables.
	declared bool
}

// formatMessage is one message as the file writes it.
type formatMessage struct {
	role, content string
	pointer       string // where the role and the content are
	line          int
}

func newFormatReader(format, file string) *formatReader {
	_, name := FormatOf(file)
	return &formatReader{file: file, format: format, t: &Template{Format: format, Metadata: Metadata{Name: name}}}
}

// fail records a problem at pointer, on line: the line the YAML has the
// pointer on when line is 0, none when it is negative (a problem of the
// file as a whole).
func (r *formatReader) fail(pointer string, line int, format string, args ...any) {
	if line == 0 {
		line = r.doc.line(pointer)
	}
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("line %d: %s", line, msg)
	}
	r.problems = append(r.problems, Problem{Pointer: pointer, Message: msg})
}

// warnUnknown warns of each top-level key that is not in known.
func (r *formatReader) warnUnknown(known []string, skip func(string) bool) {
	if r.doc == nil {
		return
	}
	for _, it := range r.doc.value {
		k := fmt.Sprint(it.Key)
		if slices.Contains(known, k) || (skip != nil && skip(k)) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q is ignored", k)
		if best := closest(k, known); best != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", best)
		}
		r.warnings = append(r.warnings, Warning{Template: r.t.Metadata.Name, Kind: WarnUnknownField,
			Pointer: "/" + escapePointer(k), Message: msg})
	}
}

// str reads the string at key of the top-level mapping: "" when it is
// absent, a problem when it is there but not a string.
func (r *formatReader) str(key string) string {
	v, ok := get(r.doc.value, key)
	if !ok || v == nil {
		return ""
	}
	switch v.(type) {
	case yaml.MapSlice, []any:
		r.fail("/"+key, 0, "%s must be a string", key)
		return ""
	}
	s, _ := scalarString(v)
	return s
}

// variableName is the pattern of a variable's name, as in our format.
var variableName = regexp.MustCompile(variableNamePattern)

// addVariable adds a declared variable, checking its name.
func (r *formatReader) addVariable(v Variable, pointer string) {
	if !variableName.MatchString(v.Name) {
		r.fail(pointer, 0, "%s", variableNameMessage(v.Name))
		return
	}
	if searchVariables(r.t.Variables, v.Name) >= 0 {
		r.fail(pointer, 0, "variable %q is declared twice", v.Name)
		return
	}
	if v.Type == "" {
		v.Type = TypeString
	}
	r.t.Variables = append(r.t.Variables, v)
}

// finish checks what every format shares and compiles the template: the
// name, the messages and their roles, the variables. It returns the
// template, or the INVALID_TEMPLATE error listing every problem.
func (r *formatReader) finish() (*Template, []Warning, error) {
	t := r.t
	if !validTemplateName(t.Metadata.Name) {
		r.fail("", -1, "the file name gives the template name %q, which is not valid: rename the file to NAME%s using letters, digits, '_' and '-'",
			t.Metadata.Name, extensionOf(r.format))
	}
	if len(r.msgs) == 0 && len(r.problems) == 0 {
		r.fail("", 0, "the file has no message: a template needs at least one message with text")
	}
	// A system message leads: it is what the rest is read against, so it
	// becomes the first user message, before the turns, in file order.
	var system, turns []Message
	for _, m := range r.msgs {
		if strings.TrimSpace(m.content) == "" {
			r.fail(m.pointer, m.line, "the %s message is empty: give it text, or remove it", m.role)
			continue
		}
		switch strings.ToLower(m.role) {
		case roleSystem:
			system = append(system, Message{Role: RoleUser, Content: m.content})
		case RoleUser:
			turns = append(turns, Message{Role: RoleUser, Content: m.content})
		case RoleAssistant, roleModel:
			turns = append(turns, Message{Role: RoleAssistant, Content: m.content})
		default:
			r.fail(m.pointer, m.line, "role %q is not one a prompt can carry: use system, user or assistant%s", m.role, modelRoleHint(r.format))
		}
	}
	t.Messages = append(system, turns...)
	if len(r.problems) > 0 {
		return nil, r.warnings, invalid(r.file, slices.Compact(r.problems), nil)
	}
	r.placeholderVariables()
	for i := range t.Variables {
		if v := &t.Variables[i]; strings.TrimSpace(v.Description) == "" {
			// Clients show an argument's description beside its field:
			// one the file does not describe says where its value goes.
			v.Description = fmt.Sprintf("The value of {{%s}} in the prompt.", v.Name)
		}
	}
	for i := range t.Tests {
		// A row's other columns (a .prompt.yml's expected output) are
		// not arguments.
		maps.DeleteFunc(t.Tests[i].Arguments, func(k, _ string) bool { return searchVariables(t.Variables, k) < 0 })
	}
	t.Results = []Result{}
	if t.Variables == nil {
		t.Variables = []Variable{}
	}
	t.pack()
	t.turns = compileTurns(t, nil)
	return t, r.warnings, nil
}

// placeholderVariables makes the variables of a file that declares none
// from its placeholders, each required (nothing says it may be left out),
// in order of first use; where the file declares them, it warns of
// placeholders without a variable and variables nothing uses.
func (r *formatReader) placeholderVariables() {
	t := r.t
	used := map[string]bool{}
	for i, m := range t.Messages {
		names, plain, loops := ExtractPlaceholders(m.Content), []string(nil), []string(nil)
		if hasLogic(m.Content) {
			loops = loopNames(m.Content)
			// Names in blocks ({{#if x}}, {{#each x}}) are inputs too; the
			// engine's own words ({{this}}, {{else}}, {{@index}}) are not.
			names, plain = logicNames(m.Content)
		} else {
			plain = names
		}
		for _, name := range names {
			if used[name] {
				continue
			}
			used[name] = true
			switch {
			case !r.declared:
				v := Variable{Name: name, Type: TypeString, Required: true}
				if slices.Contains(loops, name) {
					// {{#each name}} says it: a list.
					v.Type = TypeArray
				}
				if s, ok := get(r.samples, name); ok {
					if ex, ok := scalarString(s); ok {
						v.Examples = []string{ex}
					}
				}
				t.Variables = append(t.Variables, v)
			case searchVariables(t.Variables, name) < 0 && slices.Contains(plain, name):
				r.warnings = append(r.warnings, Warning{Template: t.Metadata.Name, Variable: name, Kind: WarnUndefinedVariable,
					Pointer: fmt.Sprintf("/messages/%d/content", i),
					Message: fmt.Sprintf("placeholder {{%s}} has no declared input: it stays as written unless an argument named %q is given", name, name)})
			}
		}
	}
	if !r.declared {
		return
	}
	for _, v := range t.Variables {
		if !used[v.Name] {
			r.warnings = append(r.warnings, Warning{Template: t.Metadata.Name, Variable: v.Name, Kind: WarnUnusedVariable,
				Message: fmt.Sprintf("input %q is declared but no message uses {{%s}}", v.Name, v.Name)})
		}
	}
}

func modelRoleHint(format string) string {
	if format == FormatDotprompt {
		return " (or model)"
	}
	return ""
}

func extensionOf(format string) string {
	for _, fe := range formatExtensions {
		if fe.format == format {
			return fe.ext
		}
	}
	return ".json"
}

// validTemplateName reports whether name is a valid template name.
func validTemplateName(name string) bool {
	return name != "" && len(name) <= MaxNameLength && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

// parseFormat reads a file of one of the other formats.
func parseFormat(data []byte, format string, opts ParseOptions) (*Template, []Warning, error) {
	r := newFormatReader(format, opts.FileName)
	switch format {
	case FormatPromptYML:
		r.readPromptYML(data)
	case FormatDotprompt:
		r.readDotprompt(data)
	case FormatPrompty:
		r.readPrompty(data)
	}
	if r.doc == nil && len(r.problems) > 0 {
		// The file could not be read at all: nothing more to check.
		return nil, nil, invalid(opts.FileName, r.problems, nil)
	}
	return r.finish()
}

// model reads a model's settings: name and parameters, as written.
func modelOf(name string, params any) *Model {
	p, _ := plain(params).(map[string]any)
	if name == "" && len(p) == 0 {
		return nil
	}
	return &Model{Name: name, Parameters: p}
}

// testArguments turns one row of test values into a test's arguments: the
// values of the template's variables, in their string form.
func testArguments(row yaml.MapSlice) map[string]string {
	args := map[string]string{}
	for _, it := range row {
		if s, ok := scalarString(it.Value); ok {
			args[fmt.Sprint(it.Key)] = s
		}
	}
	return args
}

// formatNames names the formats in messages.
var formatNames = map[string]string{
	FormatPromptYML: "GitHub Models .prompt.yml",
	FormatDotprompt: "dotprompt",
	FormatPrompty:   "Prompty",
}

// SaveOverFormat is the WRITE_CONFLICT error for saving the template name
// into the file p when p is in another format than ours: a save writes
// flowyprompt's JSON, which would turn the team's file into another
// format. It is nil for a JSON file.
func SaveOverFormat(name, p string) error {
	format, _ := FormatOf(p)
	if format == "" || format == FormatJSON {
		return nil
	}
	return &fault.Error{Code: fault.WriteConflict, What: "save template " + name,
		Why:     fmt.Sprintf("%s holds it as a %s file, and a save writes flowyprompt's JSON, which would replace the file's format", p, formatNames[format]),
		How:     fmt.Sprintf("edit %s in its own format, or save the template under another name", p),
		Details: map[string]any{"file": p, "format": format}}
}
