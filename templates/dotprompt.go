package templates

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/google/dotprompt/go/dotprompt"
	"github.com/invopop/jsonschema"
)

// roleMarker is dotprompt's {{role "NAME"}}, which starts a message.
var roleMarker = regexp.MustCompile(`\{\{\s*role\s+(?:"([^"]*)"|'([^']*)')\s*\}\}`)

// historyMarker is dotprompt's {{history}}: where the conversation so far
// goes. A prompt served here starts the conversation, so it is empty.
var historyMarker = regexp.MustCompile(`\{\{\s*history\s*\}\}`)

// readDotprompt reads a dotprompt .prompt file: YAML front matter (model,
// config, input.schema in Picoschema with its defaults; the other keys
// dotprompt reserves are accepted) and a Handlebars body whose
// {{role "…"}} markers start messages (text before the first is the
// user's).
func (r *formatReader) readDotprompt(data []byte) {
	src := string(data)
	body, bodyLine := src, 1
	if m := dotprompt.FrontmatterAndBodyRegex.FindStringSubmatchIndex(src); m != nil {
		doc, p := parseYAML(data[m[2]:m[3]], 2)
		if p != nil {
			r.problems = append(r.problems, *p)
			return
		}
		r.doc = doc
		body, bodyLine = src[m[4]:], 1+strings.Count(src[:m[4]], "\n")
	} else if m := dotprompt.EmptyFrontmatterRegex.FindStringSubmatchIndex(src); m != nil {
		r.doc = &yamlDoc{firstLine: 2}
		body, bodyLine = src[m[2]:], 1+strings.Count(src[:m[2]], "\n")
	} else if strings.HasPrefix(src, "---") {
		r.problems = append(r.problems, Problem{Message: "line 1: the front matter that starts with --- has no closing --- line: end it with a line of ---"})
		return
	} else {
		r.doc = &yamlDoc{firstLine: 1}
	}
	r.warnUnknown(dotprompt.ReservedMetadataKeywords, func(k string) bool { return strings.Contains(k, ".") })
	t := r.t
	t.Metadata.Title = r.str("name")
	t.Metadata.Description = r.str("description")
	t.Metadata.Version = r.str("version")
	config, _ := get(r.doc.value, "config")
	if _, ok := config.(yaml.MapSlice); config != nil && !ok {
		r.fail("/config", 0, "config must be a mapping (temperature: 0.5, …)")
	}
	t.Model = modelOf(r.str("model"), config)
	r.dotpromptInputs()
	r.dotpromptMessages(body, bodyLine)
}

// dotpromptMessages splits the body at its role markers.
func (r *formatReader) dotpromptMessages(body string, firstLine int) {
	body = historyMarker.ReplaceAllString(body, "")
	role, at, line := RoleUser, 0, firstLine
	add := func(end int) {
		if text := strings.TrimSpace(body[at:end]); text != "" {
			r.msgs = append(r.msgs, formatMessage{role: role, content: text, pointer: "", line: line})
		}
	}
	for _, m := range roleMarker.FindAllStringSubmatchIndex(body, -1) {
		add(m[0])
		if m[2] >= 0 {
			role = body[m[2]:m[3]]
		} else {
			role = body[m[4]:m[5]]
		}
		at, line = m[1], firstLine+strings.Count(body[:m[0]], "\n")
	}
	add(len(body))
}

// dotpromptInputs reads input.schema (Picoschema, or a JSON Schema
// object) and input.default into variables, in the order the file lists
// them.
func (r *formatReader) dotpromptInputs() {
	in, ok := get(r.doc.value, "input")
	if !ok || in == nil {
		return
	}
	input, ok := in.(yaml.MapSlice)
	if !ok {
		r.fail("/input", 0, "input must be a mapping with schema and default")
		return
	}
	defaults := yaml.MapSlice{}
	if d, ok := get(input, "default"); ok && d != nil {
		if defaults, ok = d.(yaml.MapSlice); !ok {
			r.fail("/input/default", 0, "input.default must map input names to values")
		}
	}
	raw, ok := get(input, "schema")
	if !ok || raw == nil {
		return
	}
	schemaMap, ok := raw.(yaml.MapSlice)
	if !ok {
		r.fail("/input/schema", 0, "input.schema must list the inputs (name: type, description): a schema named elsewhere is not supported")
		return
	}
	r.declared = true
	schema, err := picoschema(schemaMap)
	if err != nil {
		r.fail("/input/schema", 0, "input.schema is not valid Picoschema: %v", err)
		return
	}
	if schema == nil || schema.Properties == nil {
		return
	}
	// The parsed schema's properties come from a Go map; the file's order
	// is the prompt arguments' order.
	keys, base := schemaMap, "/input/schema/"
	if props, ok := get(schemaMap, "properties"); ok {
		keys, _ = props.(yaml.MapSlice)
		base = "/input/schema/properties/"
	}
	for _, it := range keys {
		key := fmt.Sprint(it.Key)
		name := strings.TrimSuffix(strings.SplitN(key, "(", 2)[0], "?")
		ptr := base + escapePointer(key)
		if key == dotprompt.WildcardPropertyName {
			r.fail(ptr, 0, "wildcard inputs (*) are not supported: name each input")
			continue
		}
		prop, ok := schema.Properties.Get(name)
		if !ok {
			continue
		}
		v := Variable{Name: name, Description: prop.Description, Required: slices.Contains(schema.Required, name)}
		v.Type, v.Enum = picoType(prop)
		if v.Type == "" {
			v.Type = TypeString
			r.warnings = append(r.warnings, Warning{Template: r.t.Metadata.Name, Variable: name, Kind: WarnUnknownField, Pointer: ptr,
				Message: fmt.Sprintf("input %q is an object or of any type: it is passed as text", name)})
		}
		if d, ok := get(defaults, name); ok {
			s, ok := scalarString(d)
			if !ok {
				r.fail("/input/default/"+escapePointer(name), 0, "the default of %q must be a value (text, number, true/false or a list)", name)
			}
			// A default fills the input when it is left out, as in dotprompt.
			v.Default, v.Required = &s, false
		}
		r.addVariable(v, ptr)
	}
}

// picoschema parses a schema with dotprompt's own parser, which panics on
// some malformed input (an enum that is not a list): that is an error here.
func picoschema(schema yaml.MapSlice) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return dotprompt.Picoschema(plain(schema), &dotprompt.PicoschemaOptions{})
}

// picoType is a parsed input's variable type and enum; the type is ""
// for an object or any value.
func picoType(s *jsonschema.Schema) (string, []string) {
	typ := s.Type
	if typ == "" {
		for _, alt := range s.AnyOf {
			if alt.Type != "null" && alt.Type != "" {
				typ = alt.Type
			}
		}
	}
	switch {
	case len(s.Enum) > 0:
		var enum []string
		for _, e := range s.Enum {
			if e != nil {
				enum = append(enum, fmt.Sprint(e))
			}
		}
		return TypeString, enum
	case s.Items != nil || typ == "array":
		return TypeArray, nil
	}
	switch typ {
	case TypeString, TypeBoolean, TypeNumber, TypeInteger:
		return typ, nil
	}
	return "", nil
}
