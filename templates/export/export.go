// Package export writes templates in the file formats other tools read:
// dotprompt .prompt files, GitHub Models .prompt.yml files, and Agent
// Skills (a folder with a SKILL.md). It is pure: it turns templates into
// files' bytes, and `flowyprompt export` writes them.
//
// What a template becomes is chosen so that a dotprompt or .prompt.yml
// file, read back, renders the text the template renders (prompts/get's
// messages): a template's results (the header and sections render.Prompt
// writes) become its first user message, written out with their
// placeholders; its messages follow, each with its role.
package export

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/goccy/go-yaml"
)

// Formats export writes.
const (
	Dotprompt = "dotprompt"
	PromptYML = "prompt-yml"
	Skill     = "skill"
)

// Formats lists the formats, for messages.
var Formats = []string{Dotprompt, PromptYML, Skill}

// File is one exported file: its path under the output folder,
// slash-separated, and its bytes.
type File struct {
	Path string
	Data []byte
}

// Template exports t in format.
func Template(t *templates.Template, format string) ([]File, error) {
	switch format {
	case Dotprompt:
		data, err := dotprompt(t)
		return []File{{Path: t.Metadata.Name + ".prompt", Data: data}}, err
	case PromptYML:
		data, err := promptYML(t)
		return []File{{Path: t.Metadata.Name + ".prompt.yml", Data: data}}, err
	case Skill:
		name := SkillName(templates.BareName(t.Metadata.Name))
		dir := name
		if ns, _, ok := strings.Cut(t.Metadata.Name, templates.NamespaceSeparator); ok {
			dir = ns + "/" + name
		}
		data, err := skill(t, name)
		return []File{{Path: dir + "/SKILL.md", Data: data}}, err
	}
	return nil, fmt.Errorf("unknown export format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// Library exports every template of c in format, in name order, then the
// partials they include, so the exported library renders as c does: as
// dotprompt's _NAME.prompt files, or as partials/NAME.md beside
// .prompt.yml files. A skill has no partials: its SKILL.md keeps the
// {{> NAME}} as written. Flows are not templates and are not exported.
func Library(c *templates.Catalog, format string) ([]File, error) {
	var out []File
	for _, e := range c.Templates() {
		fs, err := Template(e.Template, format)
		if err != nil {
			return nil, fmt.Errorf("exporting %s: %w", e.Template.Metadata.Name, err)
		}
		out = append(out, fs...)
	}
	for _, p := range c.Partials() {
		switch format {
		case Dotprompt:
			// A partial's text never starts a front matter of its own:
			// an empty one keeps a text that starts with "---" whole.
			out = append(out, File{Path: "_" + p.Name + ".prompt", Data: []byte("---\n---\n" + p.Text)})
		case PromptYML:
			out = append(out, File{Path: "partials/" + p.Name + ".md", Data: []byte(p.Text)})
		}
	}
	return out, nil
}

// Messages are t's turns as an exported file writes them: the results'
// text first, as one user message, with its placeholders as written (the
// header and sections, laid out as render.Prompt lays them out), then the
// messages. Each is trimmed at its end, as rendering trims it.
func Messages(t *templates.Template) []templates.Message {
	var out []templates.Message
	if sections := t.Sections(); len(sections) > 0 {
		var b strings.Builder
		md := t.Metadata
		fmt.Fprintf(&b, "# %s\n\n%s\n\n**Version**: %s\n", md.Name, md.Description, md.Version)
		if len(md.Tags) > 0 {
			fmt.Fprintf(&b, "**Tags**: %s\n", strings.Join(md.Tags, ", "))
		}
		for i, s := range sections {
			if i == 0 {
				b.WriteString("\n---\n\n")
			} else {
				b.WriteString("\n\n---\n\n")
			}
			b.WriteString(s.Content)
		}
		out = append(out, templates.Message{Role: templates.RoleUser, Content: strings.TrimRightFunc(b.String(), unicode.IsSpace)})
	}
	for _, m := range t.Messages {
		out = append(out, templates.Message{Role: m.Role, Content: strings.TrimRightFunc(m.Content, unicode.IsSpace)})
	}
	return out
}

// title is the name an exported file gives itself.
func title(t *templates.Template) string {
	if t.Metadata.Title != "" {
		return t.Metadata.Title
	}
	return templates.BareName(t.Metadata.Name)
}

// frontMatter encodes m as YAML.
func frontMatter(m yaml.MapSlice) ([]byte, error) {
	return yaml.MarshalWithOptions(m, yaml.UseLiteralStyleIfMultiline(true))
}

// dotprompt writes t as a dotprompt file: front matter with the inputs in
// Picoschema and their defaults, then each message after a role marker.
func dotprompt(t *templates.Template) ([]byte, error) {
	fm := yaml.MapSlice{{Key: "name", Value: title(t)}}
	if t.Metadata.Description != "" {
		fm = append(fm, yaml.MapItem{Key: "description", Value: t.Metadata.Description})
	}
	if t.Metadata.Version != "" {
		fm = append(fm, yaml.MapItem{Key: "version", Value: t.Metadata.Version})
	}
	if t.Model != nil {
		if t.Model.Name != "" {
			fm = append(fm, yaml.MapItem{Key: "model", Value: t.Model.Name})
		}
		if len(t.Model.Parameters) > 0 {
			fm = append(fm, yaml.MapItem{Key: "config", Value: t.Model.Parameters})
		}
	}
	if len(t.Variables) > 0 {
		schema, defaults := yaml.MapSlice{}, yaml.MapSlice{}
		for _, v := range t.Variables {
			key, value := picoschemaEntry(v)
			schema = append(schema, yaml.MapItem{Key: key, Value: value})
			if v.Default != nil {
				defaults = append(defaults, yaml.MapItem{Key: v.Name, Value: *v.Default})
			}
		}
		input := yaml.MapSlice{{Key: "schema", Value: schema}}
		if len(defaults) > 0 {
			input = append(input, yaml.MapItem{Key: "default", Value: defaults})
		}
		fm = append(fm, yaml.MapItem{Key: "input", Value: input})
	}
	head, err := frontMatter(fm)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("---\n")
	b.Write(head)
	b.WriteString("---\n")
	for _, m := range Messages(t) {
		role := m.Role
		if role == templates.RoleAssistant {
			role = "model"
		}
		fmt.Fprintf(&b, "{{role %q}}\n%s\n\n", role, m.Content)
	}
	return []byte(b.String()), nil
}

// picoschemaEntry is v as a Picoschema key and value: "name?(enum, what
// it is)": [a, b], "name?(array, what it is)": string, "name": "type,
// what it is".
func picoschemaEntry(v templates.Variable) (string, any) {
	key := v.Name
	if !v.Required {
		key += "?"
	}
	desc := strings.Join(strings.Fields(v.Description), " ")
	paren := func(kind string) string {
		if desc == "" {
			return key + "(" + kind + ")"
		}
		return key + "(" + kind + ", " + desc + ")"
	}
	typ := v.Type
	if typ == "" {
		typ = templates.TypeString
	}
	switch {
	case len(v.Enum) > 0:
		return paren("enum"), slices.Clone(v.Enum)
	case typ == templates.TypeArray:
		return paren("array"), templates.TypeString
	case desc != "":
		return key, typ + ", " + desc
	}
	return key, typ
}

// promptYML writes t as a GitHub Models .prompt.yml file. The format
// declares no inputs: each placeholder is a variable, every one required,
// so a default or an optional variable is not carried.
func promptYML(t *templates.Template) ([]byte, error) {
	doc := yaml.MapSlice{{Key: "name", Value: title(t)}}
	if t.Metadata.Description != "" {
		doc = append(doc, yaml.MapItem{Key: "description", Value: t.Metadata.Description})
	}
	if t.Model != nil {
		if t.Model.Name != "" {
			doc = append(doc, yaml.MapItem{Key: "model", Value: t.Model.Name})
		}
		if len(t.Model.Parameters) > 0 {
			doc = append(doc, yaml.MapItem{Key: "modelParameters", Value: t.Model.Parameters})
		}
	}
	var msgs []yaml.MapSlice
	for _, m := range Messages(t) {
		msgs = append(msgs, yaml.MapSlice{{Key: "role", Value: m.Role}, {Key: "content", Value: m.Content}})
	}
	doc = append(doc, yaml.MapItem{Key: "messages", Value: msgs})
	// A .prompt.yml declares no inputs, so no defaults: a row gives the
	// defaults its test left to the template, so that it renders there
	// (and in gh models eval) what the test renders here.
	defaults := map[string]string{}
	for _, v := range t.Variables {
		if v.Default != nil {
			defaults[v.Name] = *v.Default
		}
	}
	var rows []yaml.MapSlice
	for _, test := range t.Tests {
		args := maps.Clone(defaults)
		maps.Copy(args, test.Arguments)
		row := yaml.MapSlice{}
		for _, k := range slices.Sorted(maps.Keys(args)) {
			row = append(row, yaml.MapItem{Key: k, Value: args[k]})
		}
		if test.Expect.Equals != nil {
			row = append(row, yaml.MapItem{Key: "expected", Value: *test.Expect.Equals})
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		doc = append(doc, yaml.MapItem{Key: "testData", Value: rows})
	}
	return frontMatter(doc)
}
