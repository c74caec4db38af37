package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// ParseTyped reads raw, a value in its string form, as a value of the
// variable type typ: a string as it is; a boolean from true or false
// (any case); a number or an integer from a JSON number (an integer may be
// written 3.0 or 3e2, as JSON Schema counts them); a list of strings from a
// JSON array (of strings, numbers or booleans, kept as they are written)
// or, when the value is not a JSON array, one item per line, the lines
// trimmed and blank ones skipped. White space around a boolean, a number or
// a JSON array is ignored. It returns string, bool, float64, int64 or
// []string; its error says what is wrong with the value, not which value
// it was (callers name it).
func ParseTyped(typ, raw string) (any, error) {
	switch typ {
	case TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(raw)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("not true or false")
	case TypeNumber:
		n, err := jsonNumber(raw)
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, errors.New("out of the range of a 64-bit floating-point number")
		}
		return f, nil
	case TypeInteger:
		n, err := jsonNumber(raw)
		if err != nil {
			return nil, err
		}
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i, nil
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok || !r.IsInt() {
			return nil, errors.New("not a whole number")
		}
		if !r.Num().IsInt64() {
			return nil, errors.New("out of the range of a 64-bit integer")
		}
		return r.Num().Int64(), nil
	case TypeArray:
		return parseList(raw)
	}
	return raw, nil
}

// TypeForm says how a value of typ is written, and gives an example, for
// messages and argument descriptions. A string has no form to explain:
// both are "".
func TypeForm(typ string) (form, example string) {
	switch typ {
	case TypeBoolean:
		return "true or false", "true"
	case TypeNumber:
		return "a number", "0.5"
	case TypeInteger:
		return "a whole number", "3"
	case TypeArray:
		return "a list of strings (a JSON array, or one item per line)", `["first", "second"]`
	}
	return "", ""
}

// ListText is how a list is substituted by a plain placeholder: its items,
// one per line.
func ListText(items []string) string { return strings.Join(items, "\n") }

// jsonNumber reads raw, trimmed, as one JSON number.
func jsonNumber(raw string) (json.Number, error) {
	s := strings.TrimSpace(raw)
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	tok, err := dec.Token()
	n, ok := tok.(json.Number)
	if err != nil || !ok || dec.InputOffset() != int64(len(s)) {
		return "", errors.New("not a number")
	}
	return n, nil
}

// parseList reads a list: a JSON array when the value is one, else one
// item per line. A value that begins with '[' but is not JSON (a line
// such as "[WIP] login page") is read by lines; a JSON array whose items
// are not text (objects, nulls, arrays) is an error rather than a guess.
func parseList(raw string) ([]string, error) {
	s := strings.TrimSpace(raw)
	if strings.HasPrefix(s, "[") && json.Valid([]byte(s)) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var items []any
		if err := dec.Decode(&items); err != nil {
			// Valid JSON starting with '[' is an array.
			return nil, fmt.Errorf("not a JSON array: %w", err)
		}
		out := make([]string, 0, len(items))
		for i, it := range items {
			switch x := it.(type) {
			case string:
				out = append(out, x)
			case json.Number:
				out = append(out, x.String())
			case bool:
				out = append(out, strconv.FormatBool(x))
			default:
				return nil, fmt.Errorf("item %d of the JSON array is %s, not a string", i, JSONKind(it))
			}
		}
		return out, nil
	}
	out := []string{}
	for line := range strings.SplitSeq(raw, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out, nil
}

// JSONKind names the kind of a decoded JSON value ("an object", "a
// number"), for messages that say why a value was refused.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	}
	return "a number"
}

// ValueText is a JSON value of a template file (a default, an enum
// value, an example, a test's argument) in the string form values travel
// in: a string as it is, a boolean as true or false, a number as written,
// an array as compact JSON. It reports false for null and objects.
func ValueText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case []any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(x) != nil {
			return "", false
		}
		return strings.TrimSuffix(b.String(), "\n"), true
	}
	return "", false
}

// typeProblems checks that a variable's default, enum values and examples
// fit its type: written as JSON strings for a string variable (a bare
// true in a string variable is a slip, not a value), and parsing as the
// type for the others; a list's enum names the values its items may take.
func typeProblems(m map[string]any, ptr string) []Problem {
	typ, _ := m["type"].(string)
	if typ == "" {
		return nil // the schema reports it
	}
	var out []Problem
	check := func(v any, at string, item bool) {
		text, ok := ValueText(v)
		if !ok {
			return // the schema reports it
		}
		if _, isStr := v.(string); typ == TypeString && !isStr {
			out = append(out, Problem{Pointer: at, Message: fmt.Sprintf(
				"%s is not a string, and the variable's type is string: write it in quotes, or give the variable the type it has", text)})
			return
		}
		t := typ
		if item {
			t = TypeString // a list's enum value is one item
			if _, isArr := v.([]any); isArr {
				return // the schema reports it
			}
		}
		if _, err := ParseTyped(t, text); err != nil {
			form, example := TypeForm(t)
			out = append(out, Problem{Pointer: at, Message: fmt.Sprintf("%q does not fit the variable's type %s (%v): write %s, e.g. %s",
				text, typ, err, form, example)})
		}
	}
	if d, ok := m["default"]; ok {
		check(d, ptr+"/default", false)
	}
	enum, _ := m["enum"].([]any)
	for i, e := range enum {
		check(e, ptr+"/enum/"+strconv.Itoa(i), typ == TypeArray)
	}
	ex, _ := m["examples"].([]any)
	for i, e := range ex {
		check(e, ptr+"/examples/"+strconv.Itoa(i), false)
	}
	return out
}

// enumProblem says why a variable's default is not among its enum values,
// or "": compared as values of the type (1.0 is 1), item by item for a
// list.
func enumProblem(typ string, def any, enum []any) string {
	text, ok := ValueText(def)
	if !ok || len(enum) == 0 {
		return ""
	}
	allowed := make([]string, 0, len(enum))
	for _, e := range enum {
		if s, ok := ValueText(e); ok {
			allowed = append(allowed, s)
		}
	}
	if typ != TypeArray {
		if !InEnum(typ, text, allowed) {
			return fmt.Sprintf("default %q is not one of the variable's enum values", text)
		}
		return ""
	}
	items, err := parseList(text)
	if err != nil {
		return "" // typeProblems reports it
	}
	for _, it := range items {
		if !InEnum(TypeString, it, allowed) {
			return fmt.Sprintf("item %q of the default is not one of the variable's enum values", it)
		}
	}
	return ""
}

// InEnum reports whether val, a value of type typ in its string form, is
// one of enum's: strings match exactly, booleans and numbers by value.
func InEnum(typ, val string, enum []string) bool {
	if typ == TypeString || typ == "" || typ == TypeArray {
		return slices.Contains(enum, val)
	}
	v, err := ParseTyped(typ, val)
	if err != nil {
		return false
	}
	for _, e := range enum {
		if ev, err := ParseTyped(typ, e); err == nil && ev == v {
			return true
		}
	}
	return false
}
