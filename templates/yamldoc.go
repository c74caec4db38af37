package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// yamlDoc is a YAML mapping as the file formats other than ours write it
// (a .prompt.yml file, a dotprompt's or a Prompty's front matter): its
// value, keys in file order, and its syntax tree, kept to say on which line
// a problem is.
type yamlDoc struct {
	value yaml.MapSlice
	body  ast.Node
	// firstLine is the file's line the YAML starts on (front matter starts
	// on line 2).
	firstLine int
}

// Bounds on how deep a template's YAML may nest, checked before the
// parser sees it: the parser's time grows much faster than the nesting (a
// 100 KB file of "[" takes minutes), and prompt files are shallow.
const (
	// maxFlowDepth bounds brackets ([ and {) open at once.
	maxFlowDepth = 64
	// maxLineLead bounds the spaces, tabs and "- " or "? " indicators
	// that start a line: block nesting.
	maxLineLead = 256
)

// nestingProblem refuses YAML nested past the bounds. It counts every
// bracket, in quoted text too, so its limit is far above what a prompt
// needs.
func nestingProblem(src []byte, firstLine int) *Problem {
	depth, line, lead, start := 0, firstLine, 0, true
	for _, c := range src {
		switch c {
		case '\n':
			line, lead, start = line+1, 0, true
			continue
		case '[', '{':
			if depth++; depth > maxFlowDepth {
				return &Problem{Message: fmt.Sprintf("line %d: the YAML opens more than %d brackets ([ or {) at once: templates are not nested that deep", line, maxFlowDepth)}
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
		if start {
			if c != ' ' && c != '\t' && c != '-' && c != '?' {
				start = false
			} else if lead++; lead > maxLineLead {
				return &Problem{Message: fmt.Sprintf("line %d: the line starts with more than %d spaces and list markers: templates are not nested that deep", line, maxLineLead)}
			}
		}
	}
	return nil
}

// parseYAML decodes src, which starts on the file's line firstLine, as a
// YAML mapping. What it refuses (a syntax error, anchors and aliases, a
// document that is not a mapping) comes back as a problem with its line.
func parseYAML(src []byte, firstLine int) (doc *yamlDoc, problem *Problem) {
	// The parser has panicked on malformed input before: a bad file must
	// never take the server down.
	defer func() {
		if r := recover(); r != nil {
			doc, problem = nil, &Problem{Message: fmt.Sprintf("the YAML cannot be read: %v", r)}
		}
	}()
	if p := nestingProblem(src, firstLine); p != nil {
		return nil, p
	}
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, yamlProblem(err, firstLine)
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return &yamlDoc{firstLine: firstLine}, nil
	}
	if len(file.Docs) > 1 {
		return nil, &Problem{Message: fmt.Sprintf("line %d: a second YAML document (after ---) is not part of a template: remove it",
			lineOf(file.Docs[1], firstLine))}
	}
	body := file.Docs[0].Body
	var refused *Problem
	ast.Walk(visitor(func(n ast.Node) bool {
		if refused != nil {
			return false
		}
		switch n.(type) {
		case *ast.AnchorNode, *ast.AliasNode:
			// An alias repeats what its anchor holds: a few of them nest
			// into gigabytes (the "billion laughs"), and templates have no
			// use for them.
			refused = &Problem{Message: fmt.Sprintf("line %d: YAML anchors and aliases (& and *) are not accepted in templates: write the value out",
				lineOf(n, firstLine))}
			return false
		}
		return true
	}), body)
	if refused != nil {
		return nil, refused
	}
	if _, ok := body.(*ast.NullNode); ok {
		return &yamlDoc{firstLine: firstLine}, nil
	}
	var v yaml.MapSlice
	if err := yaml.NodeToValue(body, &v, yaml.UseOrderedMap()); err != nil {
		return nil, &Problem{Message: fmt.Sprintf("line %d: the YAML must be a mapping of keys to values (name: …, description: …)",
			lineOf(body, firstLine))}
	}
	return &yamlDoc{value: v, body: body, firstLine: firstLine}, nil
}

// yamlProblem turns the parser's error into a problem that names the
// line and column, as an editor counts them.
func yamlProblem(err error, firstLine int) *Problem {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		pos := ye.GetToken().Position
		return &Problem{Message: fmt.Sprintf("malformed YAML at line %d, column %d: %s", pos.Line+firstLine-1, pos.Column, ye.GetMessage())}
	}
	return &Problem{Message: "malformed YAML: " + err.Error()}
}

type visitor func(ast.Node) bool

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if n == nil || !v(n) {
		return nil
	}
	return v
}

func lineOf(n ast.Node, firstLine int) int {
	if n == nil || n.GetToken() == nil {
		return firstLine
	}
	return n.GetToken().Position.Line + firstLine - 1
}

// line returns the file's line of the value at pointer (an RFC 6901 JSON
// pointer into the mapping), or of its nearest ancestor that exists.
func (d *yamlDoc) line(pointer string) int {
	if d == nil || d.body == nil {
		return 0
	}
	n := d.body
	if pointer == "" {
		return lineOf(n, d.firstLine)
	}
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		next := child(n, seg)
		if next == nil {
			break
		}
		n = next
	}
	return lineOf(n, d.firstLine)
}

// child is n's value under key seg (a mapping) or at index seg (a
// sequence), or nil.
func child(n ast.Node, seg string) ast.Node {
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, mv := range n.Values {
			if c := child(mv, seg); c != nil {
				return c
			}
		}
	case *ast.MappingValueNode:
		if n.Key != nil && keyString(n.Key) == seg {
			return n.Value
		}
	case *ast.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Values) {
			return n.Values[i]
		}
	case *ast.TagNode:
		return child(n.Value, seg)
	}
	return nil
}

func keyString(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	return k.String()
}

// get returns the value of key in m, and whether it is there.
func get(m yaml.MapSlice, key string) (any, bool) {
	for _, it := range m {
		if k, ok := it.Key.(string); ok && k == key {
			return it.Value, true
		}
	}
	return nil, false
}

// scalarString is a YAML scalar in the string form values travel in
// (prompts/get's arguments are strings): a string as it is, a boolean as
// true/false, a number as written; a list is a JSON array text. It reports
// false for a mapping or null.
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64, uint64, int, uint:
		return fmt.Sprint(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case []any:
		items := make([]string, 0, len(v))
		for _, it := range v {
			s, ok := scalarString(it)
			if !ok {
				return "", false
			}
			items = append(items, s)
		}
		b, _ := json.Marshal(items) // a list of strings always encodes
		return string(b), true
	}
	return "", false
}

// plain turns ordered YAML values into the plain values encoding/json
// writes (maps, slices, strings, numbers, booleans), for model settings.
func plain(v any) any {
	switch v := v.(type) {
	case yaml.MapSlice:
		m := make(map[string]any, len(v))
		for _, it := range v {
			m[fmt.Sprint(it.Key)] = plain(it.Value)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, it := range v {
			out[i] = plain(it)
		}
		return out
	}
	return v
}
