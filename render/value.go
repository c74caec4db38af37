package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// ParseValue parses raw, a value as it travels (prompts/get's arguments
// are strings), by v's type: a string as it is; a boolean from "true" or
// "false"; a number as a float64 and an integer as an int64; an array as
// a []string from a JSON array of strings or one item per line (blank
// lines skipped). A value that does not parse is INVALID_ARGUMENT naming
// the variable, the form expected and an example.
func ParseValue(v *templates.Variable, raw string) (any, error) {
	switch v.Type {
	case templates.TypeBoolean:
		switch {
		case strings.EqualFold(strings.TrimSpace(raw), "true"):
			return true, nil
		case strings.EqualFold(strings.TrimSpace(raw), "false"), strings.TrimSpace(raw) == "":
			return false, nil
		}
		return nil, valueError(v, raw, "true or false", "true")
	case templates.TypeNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, valueError(v, raw, "a number", "0.5")
		}
		return f, nil
	case templates.TypeInteger:
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return nil, valueError(v, raw, "a whole number", "3")
		}
		return n, nil
	case templates.TypeArray:
		return parseList(v, raw)
	}
	return raw, nil
}

// parseList reads a list: a JSON array of strings when the value starts
// with '[', else one item per line.
func parseList(v *templates.Variable, raw string) ([]string, error) {
	if trimmed := strings.TrimSpace(raw); strings.HasPrefix(trimmed, "[") {
		var items []string
		if err := json.Unmarshal([]byte(trimmed), &items); err != nil {
			return nil, valueError(v, raw, "a JSON array of strings, or one item per line", `["first item", "second item"]`)
		}
		return items, nil
	}
	items := []string{}
	for line := range strings.Lines(raw) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) != "" {
			items = append(items, line)
		}
	}
	return items, nil
}

func valueError(v *templates.Variable, raw, form, example string) error {
	return &fault.Error{
		Code: fault.InvalidArgument,
		What: fmt.Sprintf("argument %q is not %s: %q", v.Name, form, truncateValue(raw)),
		Why:  fmt.Sprintf("variable %s has type %s", v.Name, v.Type),
		How:  fmt.Sprintf("pass %s for %s, for example %s", form, v.Name, example),
		Details: map[string]any{
			"variable": v.Name,
			"type":     v.Type,
			"example":  example,
		},
	}
}

// truncateValue shortens a value quoted in an error.
func truncateValue(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
