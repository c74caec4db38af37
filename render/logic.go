package render

import (
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/templates"
)

// MaxLogicSize is the most bytes the sections with logic of one template
// may render together: a tool result carries at most 100,000 characters,
// which is at most four times as many bytes. Plain substitution is bounded
// by the file and MaxValueLength; a loop multiplies its block by its list,
// so what it would render is measured, from the values, before it is.
const MaxLogicSize = 400_000

// renderLogic renders the logic sections of ss with t's resolved values,
// each into out at its index (out is nil when none has logic), within
// *room bytes for all of them.
func renderLogic(t *templates.Template, ss []templates.Section, args map[string]string, values []string, room *int) ([]string, error) {
	var out []string
	for i := range ss {
		// Indexed, not ranged by value: the plain path pays no copy of
		// each section for this check.
		if !ss[i].Logic() {
			continue
		}
		s := ss[i]
		if out == nil {
			out = make([]string, len(ss))
		}
		var bad error
		text, err := s.Execute(func(name string) any {
			i := slices.IndexFunc(t.Variables, func(v templates.Variable) bool { return v.Name == name })
			if i < 0 {
				// A placeholder without a variable, as in a plain
				// section: an argument of its name, else as written.
				if val := args[name]; val != "" {
					if err := checkLength(name, val); err != nil && bad == nil {
						bad = err
					}
					return val
				}
				return "{{" + name + "}}"
			}
			switch v := &t.Variables[i]; {
			case values[i] == "" && v.Type == templates.TypeBoolean:
				return false // not given, and no default
			case values[i] == "" && v.Type == templates.TypeArray:
				return []string{}
			case v.Type == templates.TypeBoolean, v.Type == templates.TypeArray:
				parsed, err := ParseValue(v, values[i])
				if err != nil && bad == nil {
					bad = err
				}
				return parsed
			}
			// Numbers too render as they were written.
			return values[i]
		}, *room)
		if bad != nil {
			return nil, bad
		}
		if err != nil {
			return nil, err
		}
		// The lines a block leaves out leave their line break behind at
		// the section's end, where the separator between sections (or
		// the trimming of a message) has its own.
		text = strings.TrimRight(text, "\r\n")
		*room -= len(text)
		out[i] = text
	}
	return out, nil
}
