package templates

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/google/dotprompt/go/dotprompt"
)

// knownPrompty are the front matter keys of Prompty's specification.
var knownPrompty = []string{"$schema", "id", "name", "description", "version", "authors", "tags", "metadata", "base",
	"model", "sample", "inputs", "outputs", "template"}

// promptyRole is a line that starts a message in a Prompty body:
// "system:", "user:", "assistant:" (a leading # is allowed, as Prompty's
// parser allows it), alone on its line.
var promptyRole = regexp.MustCompile(`(?im)^[ \t]*#?[ \t]*(system|user|assistant|function|tool)[ \t]*:[ \t]*\r?$`)

// readPrompty reads a Prompty .prompty file: front matter (name, the
// title; description; model, whose deployment and parameters are shown;
// inputs; sample, a test) and a body of system:/user:/assistant: sections
// (text before the first is the system's, as in Prompty).
func (r *formatReader) readPrompty(data []byte) {
	src := string(data)
	m := dotprompt.FrontmatterAndBodyRegex.FindStringSubmatchIndex(src)
	if m == nil {
		r.problems = append(r.problems, Problem{Message: "line 1: a Prompty file starts with front matter between two --- lines, then the body"})
		return
	}
	doc, p := parseYAML(data[m[2]:m[3]], 2)
	if p != nil {
		r.problems = append(r.problems, *p)
		return
	}
	r.doc = doc
	r.warnUnknown(knownPrompty, nil)
	t := r.t
	t.Metadata.Title = r.str("name")
	t.Metadata.Description = r.str("description")
	t.Metadata.Version = r.str("version")
	if a, ok := get(doc.value, "authors"); ok {
		if s, ok := scalarString(a); ok && !strings.HasPrefix(s, "[") {
			t.Metadata.Author = s
		} else if list, ok := a.([]any); ok {
			var names []string
			for _, n := range list {
				if s, ok := n.(string); ok {
					names = append(names, s)
				}
			}
			t.Metadata.Author = strings.Join(names, ", ")
		}
	}
	if tags, ok := get(doc.value, "tags"); ok {
		list, _ := tags.([]any)
		for _, tag := range list {
			if s, ok := scalarString(tag); ok && strings.TrimSpace(s) != "" {
				t.Metadata.Tags = append(t.Metadata.Tags, s)
			}
		}
	}
	t.Model = r.promptyModel()
	r.promptyInputs()
	r.promptyMessages(src[m[4]:], 1+strings.Count(src[:m[4]], "\n"))
}

// promptyModel reads the model's name and parameters. Its configuration
// is not kept: it names endpoints and keys.
func (r *formatReader) promptyModel() *Model {
	m, ok := get(r.doc.value, "model")
	if !ok || m == nil {
		return nil
	}
	if s, ok := m.(string); ok {
		return modelOf(s, nil)
	}
	mm, ok := m.(yaml.MapSlice)
	if !ok {
		r.fail("/model", 0, "model must be a mapping (api, configuration, parameters) or a model's name")
		return nil
	}
	name := ""
	if id, ok := get(mm, "id"); ok {
		name, _ = scalarString(id)
	}
	if conf, ok := get(mm, "configuration"); ok {
		c, _ := conf.(yaml.MapSlice)
		for _, key := range []string{"azure_deployment", "model", "name"} {
			if v, ok := get(c, key); ok && name == "" {
				name, _ = v.(string)
			}
		}
	}
	params, _ := get(mm, "parameters")
	if _, ok := params.(yaml.MapSlice); params != nil && !ok {
		r.fail("/model/parameters", 0, "model.parameters must be a mapping (max_tokens: 3000, …)")
	}
	return modelOf(name, params)
}

// promptyInputs reads inputs (each a mapping of type, description,
// default, required, or a type alone) and sample (a test, and examples).
func (r *formatReader) promptyInputs() {
	sample, _ := get(r.doc.value, "sample")
	samples, _ := sample.(yaml.MapSlice)
	r.samples = samples
	if len(samples) > 0 {
		r.t.Tests = append(r.t.Tests, Test{Name: "sample", Arguments: testArguments(samples)})
	}
	in, ok := get(r.doc.value, "inputs")
	if !ok || in == nil {
		return
	}
	inputs, ok := in.(yaml.MapSlice)
	if !ok {
		r.fail("/inputs", 0, "inputs must map each input's name to its type, description and default")
		return
	}
	r.declared = true
	for _, it := range inputs {
		name := fmt.Sprint(it.Key)
		ptr := "/inputs/" + escapePointer(name)
		v := Variable{Name: name, Type: TypeString, Required: true}
		switch spec := it.Value.(type) {
		case string:
			v.Type = spec
		case yaml.MapSlice:
			if s, ok := get(spec, "type"); ok {
				v.Type, _ = s.(string)
			}
			if s, ok := get(spec, "description"); ok {
				v.Description, _ = scalarString(s)
			}
			if d, ok := get(spec, "default"); ok && d != nil {
				s, ok := scalarString(d)
				if !ok {
					r.fail(ptr+"/default", 0, "the default of %q must be a value (text, number, true/false or a list)", name)
				}
				v.Default, v.Required = &s, false
			}
			if req, ok := get(spec, "required"); ok {
				b, isBool := req.(bool)
				if !isBool {
					r.fail(ptr+"/required", 0, "required must be true or false")
				}
				v.Required = b
			}
		case nil:
		default:
			r.fail(ptr, 0, "input %q must be a mapping (type, description, default) or a type", name)
			continue
		}
		switch v.Type {
		case TypeString, TypeBoolean, TypeNumber, TypeInteger, TypeArray:
		case "object", "any", "":
			r.warnings = append(r.warnings, Warning{Template: r.t.Metadata.Name, Variable: name, Kind: WarnUnknownField, Pointer: ptr,
				Message: fmt.Sprintf("input %q is an object or of any type: it is passed as text", name)})
			v.Type = TypeString
		default:
			r.fail(ptr+"/type", 0, "type %q of input %q is not one of string, boolean, number, integer, array", v.Type, name)
			continue
		}
		if s, ok := get(samples, name); ok {
			if ex, ok := scalarString(s); ok {
				v.Examples = []string{ex}
			}
		}
		r.addVariable(v, ptr)
	}
}

// promptyMessages splits the body at its role lines.
func (r *formatReader) promptyMessages(body string, firstLine int) {
	role, at, line := roleSystem, 0, firstLine
	add := func(end int) {
		if text := strings.TrimSpace(body[at:end]); text != "" {
			r.msgs = append(r.msgs, formatMessage{role: role, content: text, line: line})
		}
	}
	for _, m := range promptyRole.FindAllStringSubmatchIndex(body, -1) {
		add(m[0])
		role, at = strings.ToLower(body[m[2]:m[3]]), m[1]
		line = firstLine + strings.Count(body[:m[0]], "\n")
	}
	add(len(body))
}
