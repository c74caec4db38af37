package templates

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/xeipuuv/gojsonschema"
)

// DefaultMaxFileSize is MAX_FILE_SIZE's default: the seed's 100 KB, which
// holds 99% of real templates with room to spare.
const DefaultMaxFileSize = 102400

// maxParsedSize is the largest file Parse accepts whatever MaxFileSize
// says: compiled sections locate placeholders with 32-bit offsets.
const maxParsedSize int64 = math.MaxUint32

// MaxNameLength bounds template names from clients and files alike.
const MaxNameLength = 128

//go:embed schema.json
var schemaJSON []byte

// Schema returns the embedded JSON Schema (draft-07) templates are
// validated against, for editors and the validate tool.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// schema is compiled once: compiling per file would cost more than the
// validation itself. It is built from embedded bytes with no remote $ref,
// so gojsonschema never reaches for the network.
var schema = func() *gojsonschema.Schema {
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaJSON))
	if err != nil {
		panic("templates: embedded schema.json does not compile: " + err.Error())
	}
	return s
}()

// ParseOptions tune Parse.
type ParseOptions struct {
	// MaxFileSize is the largest accepted file in bytes; 0 means
	// DefaultMaxFileSize.
	MaxFileSize int
	// FileName is the file's path or name, for messages and the
	// name-mismatch check; it may be empty.
	FileName string
}

// Problem is one reason a template is invalid.
type Problem struct {
	// Pointer is an RFC 6901 JSON pointer to the offending value, such as
	// "/variables/2/name"; "" is the whole document.
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Pointer == "" {
		return p.Message
	}
	return p.Pointer + ": " + p.Message
}

// Warning kinds. Warnings never make a template invalid: the seed chose to
// warn so authors can improve templates step by step.
const (
	WarnUndefinedVariable = "undefined-variable" // a placeholder with no variable definition
	WarnUnusedVariable    = "unused-variable"    // a variable no section uses
	WarnNameMismatch      = "name-mismatch"      // file name differs from metadata.name
	WarnUnknownField      = "unknown-field"      // a key the format does not define
)

// Warning is something a template author should fix that does not stop the
// template from being served.
type Warning struct {
	Template string `json:"template"`
	Variable string `json:"variable,omitempty"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	// Pointer locates the field, for unknown-field warnings.
	Pointer string `json:"pointer,omitempty"`
}

func (w Warning) String() string {
	if w.Pointer != "" {
		return w.Template + ": " + w.Pointer + ": " + w.Message
	}
	return w.Template + ": " + w.Message
}

// Parse decodes and validates one template file. The size is checked before
// anything is decoded. An invalid template gives a *fault.Error
// (TEMPLATE_TOO_LARGE or INVALID_TEMPLATE) whose problems Problems returns;
// warnings are returned even then, since an unknown key such as "requried"
// often explains the error.
func Parse(data []byte, opts ParseOptions) (*Template, []Warning, error) {
	maxSize := opts.MaxFileSize
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	if len(data) > maxSize {
		return nil, nil, TooLarge(opts.FileName, int64(len(data)), int64(maxSize))
	}
	if int64(len(data)) > maxParsedSize {
		return nil, nil, TooLarge(opts.FileName, int64(len(data)), maxParsedSize)
	}

	if format, _ := FormatOf(opts.FileName); format != "" && format != FormatJSON {
		return parseFormat(data, format, opts)
	}

	doc, err := decodeDocument(data)
	if err != nil {
		return nil, nil, invalid(opts.FileName, []Problem{{Message: err.Error()}}, err)
	}

	label := documentName(doc, opts.FileName)
	warnings := unknownFields(doc, label)

	problems := schemaProblems(doc)
	problems = append(problems, codeProblems(doc)...)
	// Warnings are worked out from the document, so that a file with
	// errors shows them too: the whole story at once.
	warnings = append(warnings, documentWarnings(doc, label, opts.FileName)...)
	if len(problems) > 0 {
		problems = sortProblems(problems)
		return nil, warnings, invalid(opts.FileName, problems, nil)
	}

	t := fromDocument(doc.(map[string]any))
	t.pack()
	t.sections = compileSections(t)
	t.turns = compileTurns(t, t.sections)
	return t, warnings, nil
}

// documentWarnings reports, each at its JSON pointer, placeholders without
// a variable, variables no section uses (the seed's Clarification #1:
// warn, don't fail) and a file name that differs from metadata.name. It
// reads the decoded document, valid or not, and skips what it cannot read.
func documentWarnings(doc any, label, fileName string) []Warning {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	vars, _ := top["variables"].([]any)
	defined := map[string]bool{}
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				defined[n] = true
			}
		}
	}
	var out []Warning
	used := map[string]bool{}
	// Results and messages are read alike: a variable either uses counts
	// as used, and a placeholder either names must be defined.
	for _, key := range []string{"results", "messages"} {
		items, _ := top[key].([]any)
		for i, r := range items {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			content, ok := m["content"].(string)
			if !ok {
				continue
			}
			names, plain := ExtractPlaceholders(content), []string(nil)
			if hasLogic(content) {
				// Names in blocks must be variables: that is an error
				// (codeProblems), only a plain placeholder's is a warning.
				names, plain = logicNames(content)
			} else {
				plain = names
			}
			for _, name := range names {
				if used[name] {
					continue
				}
				used[name] = true
				if !defined[name] && slices.Contains(plain, name) {
					out = append(out, Warning{
						Template: label,
						Variable: name,
						Kind:     WarnUndefinedVariable,
						Pointer:  fmt.Sprintf("/%s/%d/content", key, i),
						Message: fmt.Sprintf("placeholder {{%s}} has no entry in variables: it stays as written unless an argument named %q is given",
							name, name),
					})
				}
			}
		}
	}
	seen := map[string]bool{}
	for i, v := range vars {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		n, ok := m["name"].(string)
		// A name that is not valid is an error already.
		if !ok || n == "" || used[n] || seen[n] || strings.ContainsFunc(n, func(r rune) bool { return !isNameByte(byte(r)) || r > 127 }) {
			continue
		}
		seen[n] = true
		out = append(out, Warning{
			Template: label,
			Variable: n,
			Kind:     WarnUnusedVariable,
			Pointer:  fmt.Sprintf("/variables/%d/name", i),
			Message:  fmt.Sprintf("variable %q is defined but no section uses {{%s}}", n, n),
		})
	}
	if fileName != "" {
		md, _ := top["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		base := path.Base(strings.ReplaceAll(fileName, `\`, "/"))
		// An invalid name is an error already: a file named after it
		// would not help.
		valid := name != "" && !strings.ContainsFunc(name, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		})
		if stem := strings.TrimSuffix(base, ".json"); valid && stem != name {
			out = append(out, Warning{
				Template: label,
				Kind:     WarnNameMismatch,
				Pointer:  "/metadata/name",
				Message: fmt.Sprintf("file %q holds template %q: clients see the name %q; rename the file to %s.json",
					base, name, name, name),
			})
		}
	}
	return out
}

// Problems returns the problems an INVALID_TEMPLATE error carries, or nil.
func Problems(err error) []Problem {
	f := fault.As(err)
	if f == nil {
		return nil
	}
	p, _ := f.Details["problems"].([]Problem)
	return p
}

// TooLarge is the TEMPLATE_TOO_LARGE error for a file of actual bytes over
// the limit. Sources use it to refuse a file before reading it.
func TooLarge(file string, actual, limit int64) *fault.Error {
	subject := "template"
	if file != "" {
		subject = "template file " + file
	}
	return &fault.Error{
		Code: fault.TemplateTooLarge,
		What: fmt.Sprintf("%s is %d bytes, over the %d-byte limit", subject, actual, limit),
		Why:  "larger files are refused so one file cannot exhaust memory or a client's context window",
		How: "split the template into smaller ones, or move long reference text into a resource file the template lists in " +
			"\"resources\" (it is sent with the prompt); MAX_FILE_SIZE raises the limit",
		Details: map[string]any{
			"actualSize": actual,
			"maxSize":    limit,
			"file":       file,
		},
	}
}

func invalid(file string, problems []Problem, cause error) *fault.Error {
	subject := "template"
	if file != "" {
		subject = "template file " + file
	}
	what := subject + " is invalid"
	if len(problems) > 1 {
		what = fmt.Sprintf("%s has %d problems", subject, len(problems))
	}
	why := problems[0].String()
	if len(problems) > 1 {
		why += fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	return &fault.Error{
		Code: fault.InvalidTemplate,
		What: what,
		Why:  why,
		How:  "fix the fields the JSON pointers in details.problems name; `flowyprompt validate` lists every problem",
		Details: map[string]any{
			"file":     file,
			"problems": problems,
		},
		Err: cause,
	}
}

// decodeDocument decodes data into generic JSON values with json.Number, the
// form gojsonschema validates, and explains syntax errors by line and column.
func decodeDocument(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			// Offset counts the offending byte; point at it, not past it.
			line, col := position(data, syn.Offset-1)
			return nil, fmt.Errorf("malformed JSON at line %d, column %d: %w", line, col, err)
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty file: a template is a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			line, col := position(data, int64(len(data)))
			return nil, fmt.Errorf("malformed JSON at line %d, column %d: unexpected end of file", line, col)
		}
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	// Trailing data would be silently ignored by Decode: a second object
	// pasted after the first is a mistake worth reporting.
	off := dec.InputOffset()
	if tok, err := dec.Token(); err != io.EOF {
		rest := bytes.TrimLeft(data[off:], " \t\r\n")
		line, col := position(data, int64(len(data)-len(rest)))
		if err == nil {
			return nil, fmt.Errorf("malformed JSON at line %d, column %d: unexpected %v after the end of the template object", line, col, tok)
		}
		return nil, fmt.Errorf("malformed JSON at line %d, column %d: data after the end of the template object", line, col)
	}
	return doc, nil
}

// position converts a byte offset into a 1-based line and column (column in
// characters, as editors count).
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	lastNL := bytes.LastIndexByte(before, '\n')
	col = len([]rune(string(before[lastNL+1:]))) + 1
	return line, col
}

// documentName names the template in warnings before it is known to be
// valid: metadata.name when it is a string, else the file's name.
func documentName(doc any, file string) string {
	if m, ok := doc.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			if n, ok := md["name"].(string); ok && n != "" {
				return n
			}
		}
	}
	if file != "" {
		return strings.TrimSuffix(path.Base(strings.ReplaceAll(file, `\`, "/")), ".json")
	}
	return ""
}

// Known keys. Unknown keys are warnings, not errors: a template written for
// a newer server should still load in an older one.
var (
	knownTop      = []string{"$schema", "metadata", "variables", "results", "messages", "resources", "tests"}
	knownMetadata = []string{"name", "description", "version", "author", "tags", "category", "lastUpdated"}
	knownVariable = []string{"name", "type", "description", "required", "default", "enum", "examples"}
	knownResult   = []string{"name", "content", "format", "order"}
	knownMessage  = []string{"role", "content"}
	knownTest     = []string{"name", "arguments", "expect"}
	knownExpect   = []string{"contains", "notContains", "equals"}
)

func unknownFields(doc any, name string) []Warning {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	var out []Warning
	check := func(obj any, known []string, ptr string) {
		m, ok := obj.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			if !slices.Contains(known, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			msg := fmt.Sprintf("unknown field %q is ignored", k)
			if best := closest(k, known); best != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", best)
			}
			out = append(out, Warning{
				Template: name,
				Kind:     WarnUnknownField,
				Message:  msg,
				Pointer:  ptr + "/" + escapePointer(k),
			})
		}
	}
	check(top, knownTop, "")
	check(top["metadata"], knownMetadata, "/metadata")
	if vars, ok := top["variables"].([]any); ok {
		for i, v := range vars {
			check(v, knownVariable, "/variables/"+strconv.Itoa(i))
		}
	}
	if res, ok := top["results"].([]any); ok {
		for i, r := range res {
			check(r, knownResult, "/results/"+strconv.Itoa(i))
		}
	}
	if msgs, ok := top["messages"].([]any); ok {
		for i, r := range msgs {
			check(r, knownMessage, "/messages/"+strconv.Itoa(i))
		}
	}
	if tests, ok := top["tests"].([]any); ok {
		for i, r := range tests {
			check(r, knownTest, "/tests/"+strconv.Itoa(i))
			if m, ok := r.(map[string]any); ok {
				check(m["expect"], knownExpect, "/tests/"+strconv.Itoa(i)+"/expect")
			}
		}
	}
	return out
}

// closest returns the known key a typo most likely meant, or "".
func closest(key string, known []string) string {
	best, bestDist := "", 3
	lk := strings.ToLower(key)
	for _, k := range known {
		if strings.ToLower(k) == lk {
			return k
		}
		if d := suggest.Distance(lk, strings.ToLower(k), bestDist); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func schemaProblems(doc any) []Problem {
	res, err := schema.Validate(gojsonschema.NewRawLoader(doc))
	if err != nil {
		// Validate fails only on values a JSON decoder never produces.
		return []Problem{{Message: "cannot validate: " + err.Error()}}
	}
	if res.Valid() {
		return nil
	}
	out := make([]Problem, 0, len(res.Errors()))
	for _, e := range res.Errors() {
		// The schema's anyOf (results, messages or both) fails with a
		// second error, that "results" is missing, which describe
		// explains; the anyOf's own message would say it again, vaguely.
		if e.Type() == "number_any_of" && contextPointer(e.Context()) == "" {
			continue
		}
		out = append(out, describe(e))
	}
	return out
}

// contextPointer turns gojsonschema's context ("(root).variables.2") into a
// JSON pointer. The context's segments are only keys the schema names and
// array indexes, so splitting on a NUL delimiter is unambiguous.
func contextPointer(c *gojsonschema.JsonContext) string {
	if c == nil {
		return ""
	}
	segs := strings.Split(c.String("\x00"), "\x00")
	if len(segs) > 0 && segs[0] == "(root)" {
		segs = segs[1:]
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(escapePointer(s))
	}
	return b.String()
}

// patternMessages explain the schema's patterns in words; the raw regular
// expression means little to a template author.
var patternMessages = map[string]string{
	`^[a-zA-Z0-9_-]+$`: "%s is not a valid template name: use only letters, digits, '_' and '-'",
	`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`: "%s is not a semantic version like 1.0.0",
	`\S`: "must not be empty",
}

func describe(e gojsonschema.ResultError) Problem {
	ptr := contextPointer(e.Context())
	d := e.Details()
	msg := e.Description()
	switch e.Type() {
	case "required":
		prop := fmt.Sprint(d["property"])
		ptr += "/" + escapePointer(prop)
		msg = fmt.Sprintf("required field %q is missing", prop)
		if ptr == "/results" {
			msg += ": give \"results\" (the sections of the prompt), \"messages\" (the turns of a conversation) or both"
		}
	case "invalid_type":
		expected := fmt.Sprint(d["expected"])
		if list, ok := strings.CutPrefix(expected, "["); ok {
			// A value of several types: "[string,boolean,number]".
			types := strings.Split(strings.TrimSuffix(list, "]"), ",")
			expected = strings.Join(types[:len(types)-1], ", ") + " or " + types[len(types)-1]
		}
		msg = fmt.Sprintf("must be %s, not %s", article(expected), fmt.Sprint(d["given"]))
	case "enum":
		msg = fmt.Sprintf("must be one of %v", d["allowed"])
	case "array_min_items":
		msg = fmt.Sprintf("needs at least %v item(s)", d["min"])
	case "string_lte":
		msg = fmt.Sprintf("is longer than %v characters", d["max"])
	case "number_gte", "number_lte":
		msg = "must be between -1000000000 and 1000000000"
	case "pattern":
		if fmt.Sprint(d["pattern"]) == variableNamePattern {
			msg = variableNameMessage(fmt.Sprint(e.Value()))
			break
		}
		if f, ok := patternMessages[fmt.Sprint(d["pattern"])]; ok {
			if strings.Contains(f, "%s") {
				msg = fmt.Sprintf(f, strconv.Quote(fmt.Sprint(e.Value())))
			} else {
				msg = f
			}
		}
	}
	return Problem{Pointer: ptr, Message: msg}
}

// variableNamePattern is the schema's pattern for variable names.
const variableNamePattern = `^[a-zA-Z0-9_]+$`

// variableNameMessage explains a bad variable name with the name as
// written, the name it could be, and what becomes of its placeholder.
func variableNameMessage(name string) string {
	fix := strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
	if strings.Trim(fix, "_") == "" {
		fix = "my_value"
	}
	return fmt.Sprintf("%q is not a valid variable name: use only letters, digits and '_', e.g. %q, and write its placeholder as {{%s}} "+
		"(a placeholder written {{%s}} is not one: it stays as written)", name, fix, fix, name)
}

func article(typ string) string {
	switch typ {
	case "array", "object", "integer":
		return "an " + typ
	}
	return "a " + typ
}

// codeProblems checks what the schema cannot say. It reads the generic
// document so its problems are reported together with the schema's.
func codeProblems(doc any) []Problem {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	var out []Problem
	if md, ok := top["metadata"].(map[string]any); ok {
		if s, ok := md["lastUpdated"].(string); ok && !validTimestamp(s) {
			out = append(out, Problem{
				Pointer: "/metadata/lastUpdated",
				Message: fmt.Sprintf("%q is not an ISO 8601 date or time like 2025-01-06 or 2025-01-06T00:00:00Z", s),
			})
		}
	}
	if vars, ok := top["variables"].([]any); ok {
		first := map[string]int{}
		for i, v := range vars {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			ptr := "/variables/" + strconv.Itoa(i)
			if name, ok := m["name"].(string); ok {
				if j, dup := first[name]; dup {
					out = append(out, Problem{
						Pointer: ptr + "/name",
						Message: fmt.Sprintf("duplicate variable name %q (first defined at /variables/%d)", name, j),
					})
				} else {
					first[name] = i
				}
			}
			out = append(out, typeProblems(m, ptr)...)
			enum, _ := m["enum"].([]any)
			typ, _ := m["type"].(string)
			if msg := enumProblem(typ, m["default"], enum); msg != "" {
				out = append(out, Problem{Pointer: ptr + "/default", Message: msg})
			}
		}
	}
	if res, ok := top["results"].([]any); ok {
		for i, r := range res {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			// The schema accepts 1.0 and 1e3 as integers; Go's int does not.
			if n, ok := m["order"].(json.Number); ok {
				if _, err := strconv.Atoi(n.String()); err != nil {
					if r, ok := new(big.Rat).SetString(n.String()); ok && r.IsInt() {
						out = append(out, Problem{
							Pointer: "/results/" + strconv.Itoa(i) + "/order",
							Message: fmt.Sprintf("%s must be written as a plain integer", n),
						})
					}
				}
			}
		}
	}
	out = append(out, testProblems(top)...)
	out = append(out, documentLogicProblems(top)...)
	if res, ok := top["resources"].([]any); ok {
		for i, r := range res {
			if s, ok := r.(string); ok {
				if msg := resourceProblem(s); msg != "" {
					out = append(out, Problem{Pointer: "/resources/" + strconv.Itoa(i), Message: msg})
				}
			}
		}
	}
	return out
}

// documentLogicProblems checks the results and messages that have block
// or partial syntax against the document's variables: the syntax the
// engine accepts, the names its blocks use, a loop over a list.
func documentLogicProblems(top map[string]any) []Problem {
	var vars []Variable
	if vs, ok := top["variables"].([]any); ok {
		for _, v := range vs {
			if m, ok := v.(map[string]any); ok {
				vars = append(vars, Variable{Name: str(m, "name"), Type: str(m, "type")})
			}
		}
	}
	var out []Problem
	for _, key := range []string{"results", "messages"} {
		items, _ := top[key].([]any)
		for i, r := range items {
			m, _ := r.(map[string]any)
			if content, ok := m["content"].(string); ok && hasLogic(content) {
				out = append(out, logicProblems(content, vars, fmt.Sprintf("/%s/%d/content", key, i))...)
			}
		}
	}
	return out
}

// resourceProblem says what is wrong with an entry of a template's
// resources, or "": it must be template://NAME or a path inside the same
// source that no reader would refuse (absolute, leading out, hidden).
func resourceProblem(r string) string {
	if name, ok := strings.CutPrefix(r, "template://"); ok {
		if name == "" || strings.ContainsAny(name, `/\`) {
			return fmt.Sprintf("%q names no template: write template://NAME", r)
		}
		return ""
	}
	if strings.Contains(r, "://") {
		return fmt.Sprintf("%q: resources are template://NAME or a path in the same folder or repository", r)
	}
	switch _, err := RelPath(r); {
	case errors.Is(err, ErrPathEmpty):
		return fmt.Sprintf("path %q names no file: use a path relative to the template source", r)
	case errors.Is(err, ErrPathOutside):
		return fmt.Sprintf("path %q leads out of the template source: use a path relative to it", r)
	case errors.Is(err, ErrPathHidden):
		return fmt.Sprintf("path %q names a hidden file or folder, which is never served", r)
	}
	return ""
}

func validTimestamp(s string) bool {
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return true
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// sortProblems orders problems by pointer, comparing array indexes as
// numbers so /variables/10 follows /variables/9, for stable output.
func sortProblems(ps []Problem) []Problem {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := comparePointers(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	// The schema and the code can find the same fault; say it once.
	return slices.Compact(ps)
}

func comparePointers(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	// Top-level fields in the order authors write them.
	if len(as) > 1 && len(bs) > 1 {
		if c := cmp.Compare(topRank(as[1]), topRank(bs[1])); c != 0 {
			return c
		}
	}
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		if errX == nil && errY == nil {
			if x != y {
				return x - y
			}
			continue
		}
		if c := strings.Compare(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

func topRank(key string) int {
	if i := slices.Index(knownTop, key); i >= 0 {
		return i
	}
	return len(knownTop)
}

// fromDocument builds the Template from a document the schema accepted.
// It reads the generic values rather than json.Unmarshal into the struct:
// encoding/json matches keys case-insensitively, so {"name":"a","NAME":"../x"}
// would validate "a" and load "../x".
func fromDocument(top map[string]any) *Template {
	t := &Template{Format: FormatJSON}
	md, _ := top["metadata"].(map[string]any)
	t.Metadata = Metadata{
		Name:        str(md, "name"),
		Description: str(md, "description"),
		Version:     str(md, "version"),
		Author:      str(md, "author"),
		Tags:        strs(md, "tags"),
		Category:    str(md, "category"),
		LastUpdated: str(md, "lastUpdated"),
	}
	vars, _ := top["variables"].([]any)
	t.Variables = make([]Variable, 0, len(vars))
	for _, v := range vars {
		m, _ := v.(map[string]any)
		vr := Variable{
			Name:        str(m, "name"),
			Type:        str(m, "type"),
			Description: str(m, "description"),
			Enum:        texts(m, "enum"),
			Examples:    texts(m, "examples"),
		}
		vr.Required, _ = m["required"].(bool)
		if d, ok := ValueText(m["default"]); ok {
			vr.Default = &d
		}
		t.Variables = append(t.Variables, vr)
	}
	res, _ := top["results"].([]any)
	t.Results = make([]Result, 0, len(res))
	for _, r := range res {
		m, _ := r.(map[string]any)
		rs := Result{Name: str(m, "name"), Content: str(m, "content"), Format: str(m, "format")}
		if n, ok := m["order"].(json.Number); ok {
			if o, err := strconv.Atoi(n.String()); err == nil {
				rs.Order = &o
			}
		}
		t.Results = append(t.Results, rs)
	}
	if msgs, ok := top["messages"].([]any); ok {
		t.Messages = make([]Message, 0, len(msgs))
		for _, r := range msgs {
			m, _ := r.(map[string]any)
			t.Messages = append(t.Messages, Message{Role: str(m, "role"), Content: str(m, "content")})
		}
	}
	t.Resources = strs(top, "resources")
	t.Tests = testsFrom(top)
	return t
}

// pack moves every string of t into one allocation, each field a
// substring of it. A library's templates stay in memory as long as they are
// served, and the decoder made a string for each value, dozens per
// template, each rounded up to an allocator size class; packed, the text is
// held once and in one place, and the sections, compiled after, share it.
// A string kept beyond the template's life (a name a session remembers)
// must be cloned, or it keeps the whole text alive.
func (t *Template) pack() {
	size := 0
	t.eachString(func(s *string) { size += len(*s) })
	var b strings.Builder
	b.Grow(size)
	t.eachString(func(s *string) { b.WriteString(*s) })
	all, off := b.String(), 0
	t.eachString(func(s *string) {
		n := len(*s)
		*s = all[off : off+n]
		off += n
	})
}

// eachString calls f with a pointer to every string t holds, always in the
// same order.
func (t *Template) eachString(f func(*string)) {
	md := &t.Metadata
	for _, s := range []*string{&md.Name, &md.Title, &md.Description, &md.Version, &md.Author, &md.Category, &md.LastUpdated} {
		f(s)
	}
	for i := range md.Tags {
		f(&md.Tags[i])
	}
	for i := range t.Variables {
		v := &t.Variables[i]
		f(&v.Name)
		f(&v.Type)
		f(&v.Description)
		if v.Default != nil {
			f(v.Default)
		}
		for j := range v.Enum {
			f(&v.Enum[j])
		}
		for j := range v.Examples {
			f(&v.Examples[j])
		}
	}
	for i := range t.Results {
		r := &t.Results[i]
		f(&r.Name)
		f(&r.Content)
		f(&r.Format)
	}
	for i := range t.Messages {
		f(&t.Messages[i].Role)
		f(&t.Messages[i].Content)
	}
	for i := range t.Resources {
		f(&t.Resources[i])
	}
	for i := range t.Tests {
		t.Tests[i].eachString(f)
	}
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// texts is m[key], an array of JSON values, in the string form values
// travel in (ValueText).
func texts(m map[string]any, key string) []string {
	a, ok := m[key].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for _, v := range a {
		if s, ok := ValueText(v); ok {
			out = append(out, s)
		}
	}
	return out
}

func strs(m map[string]any, key string) []string {
	a, ok := m[key].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for _, v := range a {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
