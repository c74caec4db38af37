package render

import (
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// ParseValue reads raw, a value of v in the string form every value
// travels in (prompts/get's arguments are strings; the tools turn their
// JSON values into it), as v's type: string for a string variable, bool
// (true or false, any case), float64 for a number, int64 for an integer,
// and []string for a list (a JSON array, or one item per line).
// templates.ParseTyped says the rules. A value that does not parse is
// INVALID_ARGUMENT naming the variable, the form it takes and an example.
func ParseValue(v *templates.Variable, raw string) (any, error) {
	val, err := templates.ParseTyped(v.Type, raw)
	if err == nil {
		return val, nil
	}
	form, example := templates.TypeForm(v.Type)
	return nil, &fault.Error{
		Code: fault.InvalidArgument,
		What: fmt.Sprintf("%s is not a valid %s: %v", v.Name, v.Type, err),
		Why:  fmt.Sprintf("%s is of type %s: its value is %s", v.Name, v.Type, form),
		How:  fmt.Sprintf("pass %s for %s, e.g. %s", form, v.Name, example),
		Details: map[string]any{
			"field":    v.Name,
			"type":     v.Type,
			"expected": form,
			"example":  example,
		},
	}
}

// typedValue checks val, given for v, against v's type and enum, and
// returns what a plain placeholder puts in its place: the value as
// written, or for a list its items, one per line. A string variable's
// value is returned as it is, unchecked (resolve checks its enum).
func typedValue(t *templates.Template, v *templates.Variable, val string) (string, error) {
	if v.Type == templates.TypeString || v.Type == "" {
		return val, nil
	}
	parsed, err := ParseValue(v, val)
	if err != nil {
		return "", err
	}
	items, isList := parsed.([]string)
	if len(v.Enum) > 0 {
		if !isList {
			items = []string{val}
		}
		for _, it := range items {
			if !templates.InEnum(v.Type, it, v.Enum) {
				return "", enumError(t, v, it)
			}
		}
	}
	if isList {
		return templates.ListText(items), nil
	}
	return val, nil
}
