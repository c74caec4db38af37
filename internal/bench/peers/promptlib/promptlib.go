// Package promptlib reads flowyprompt's template files and renders them the
// way flowyprompt does, for the reference servers. It is deliberately small:
// the peers must produce the same text as flowyprompt for the benchmark
// templates, but it is the MCP libraries being measured, not this package.
//
// What it shares with flowyprompt: the header (name, description, version,
// tags), sections sorted by order and separated by "---", placeholders
// "{{name}}" with optional whitespace inside the braces, single-pass
// substitution, an empty value counting as missing, defaults for optional
// variables, and trailing whitespace trimmed. What it leaves out: schema
// validation, size limits, extra-brace placeholders and warnings.
package promptlib

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Variable is one template variable.
type Variable struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Required    bool    `json:"required"`
	Default     *string `json:"default"`
}

// Template is a parsed template file with its sections compiled into parts.
type Template struct {
	Name        string
	Description string
	Version     string
	Tags        []string
	Variables   []Variable

	header   string
	sections [][]part
	size     int
}

// part is literal text (v < 0) or the variable with index v; name is kept
// for placeholders the template defines no variable for.
type part struct {
	text string
	name string
	v    int
}

type file struct {
	Metadata struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Version     string   `json:"version"`
		Tags        []string `json:"tags"`
	} `json:"metadata"`
	Variables []Variable `json:"variables"`
	Results   []struct {
		Name    string `json:"name"`
		Content string `json:"content"`
		Order   *int   `json:"order"`
	} `json:"results"`
}

var placeholder = regexp.MustCompile(`\{\{[ \t\r\n]*([A-Za-z0-9_]+)[ \t\r\n]*\}\}`)

// Parse reads one template from its JSON text.
func Parse(data []byte) (*Template, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if f.Metadata.Name == "" {
		return nil, errors.New("parse template: metadata.name is empty")
	}
	if len(f.Results) == 0 {
		return nil, fmt.Errorf("parse template %s: no results", f.Metadata.Name)
	}
	t := &Template{
		Name:        f.Metadata.Name,
		Description: f.Metadata.Description,
		Version:     f.Metadata.Version,
		Tags:        f.Metadata.Tags,
		Variables:   f.Variables,
	}
	var h strings.Builder
	fmt.Fprintf(&h, "# %s\n\n%s\n\n**Version**: %s\n", t.Name, t.Description, t.Version)
	if len(t.Tags) > 0 {
		fmt.Fprintf(&h, "**Tags**: %s\n", strings.Join(t.Tags, ", "))
	}
	t.header = h.String()
	t.size = len(t.header)

	// Sections sort by order; a section without one takes its index, and
	// ties keep file order.
	idx := make([]int, len(f.Results))
	key := make([]int, len(f.Results))
	for i, r := range f.Results {
		idx[i] = i
		key[i] = i
		if r.Order != nil {
			key[i] = *r.Order
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return key[idx[a]] < key[idx[b]] })
	for _, i := range idx {
		t.sections = append(t.sections, t.compile(f.Results[i].Content))
		t.size += len(f.Results[i].Content) + 7
	}
	return t, nil
}

func (t *Template) compile(content string) []part {
	var parts []part
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(content, -1) {
		if m[0] > last {
			parts = append(parts, part{text: content[last:m[0]], v: -1})
		}
		name := content[m[2]:m[3]]
		p := part{text: content[m[0]:m[1]], name: name, v: -1}
		for i, v := range t.Variables {
			if v.Name == name {
				p.v = i
				break
			}
		}
		parts = append(parts, p)
		last = m[1]
	}
	if last < len(content) {
		parts = append(parts, part{text: content[last:], v: -1})
	}
	return parts
}

// MissingError names the required variables a render call lacked.
type MissingError struct {
	Template string
	Missing  []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("template %q needs the required variables: %s", e.Template, strings.Join(e.Missing, ", "))
}

// Render substitutes args into the template. An empty value counts as not
// given; a missing required variable is a *MissingError.
func (t *Template) Render(args map[string]string) (string, error) {
	values := make([]string, len(t.Variables))
	var missing []string
	for i, v := range t.Variables {
		val := args[v.Name]
		switch {
		case val != "":
		case v.Required:
			missing = append(missing, v.Name)
		case v.Default != nil:
			val = *v.Default
		}
		values[i] = val
	}
	if len(missing) > 0 {
		return "", &MissingError{Template: t.Name, Missing: missing}
	}
	var b strings.Builder
	b.Grow(t.size + 64*len(values))
	b.WriteString(t.header)
	for i, s := range t.sections {
		if i == 0 {
			b.WriteString("\n---\n\n")
		} else {
			b.WriteString("\n\n---\n\n")
		}
		for _, p := range s {
			switch {
			case p.v >= 0:
				b.WriteString(values[p.v])
			case p.name != "" && args[p.name] != "":
				b.WriteString(args[p.name])
			default:
				b.WriteString(p.text)
			}
		}
	}
	return strings.TrimRightFunc(b.String(), unicode.IsSpace), nil
}

// LoadDir parses every *.json file in dir, sorted by template name.
func LoadDir(dir string) ([]*Template, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no templates in %s", dir)
	}
	out := make([]*Template, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read template: %w", err)
		}
		t, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Library indexes templates by name.
type Library map[string]*Template

// NewLibrary indexes ts by name.
func NewLibrary(ts []*Template) Library {
	l := make(Library, len(ts))
	for _, t := range ts {
		l[t.Name] = t
	}
	return l
}

// RenderTool runs the render_template tool's logic, shared by both peers so
// they answer alike: it renders name with args, or says what is wrong.
func (l Library) RenderTool(name string, args map[string]string) (string, error) {
	t, ok := l[name]
	if !ok {
		return "", fmt.Errorf("template %q not found", name)
	}
	return t.Render(args)
}
