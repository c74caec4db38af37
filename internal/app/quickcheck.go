package app

import (
	"bytes"
	"encoding/json"
	"regexp"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// quickCheck is a compiled form of the draft-07 subset our own tool
// schemas use. It answers one question fast: "certainly valid?". When it
// cannot say yes (an invalid value, or a schema keyword it does not know),
// gojsonschema decides and explains, so errors read the same either way.
// FuzzQuickCheckAgreesWithGojsonschema checks it never says yes where
// gojsonschema says no.
type quickCheck struct {
	typ        string // "object", "string", "integer", "number", "boolean", "" (any)
	props      map[string]*quickCheck
	required   []string
	additional *quickCheck // schema for other properties; nil with closed: none allowed
	closed     bool        // additionalProperties: false
	minLen     int
	maxLen     int // -1: none
	pattern    *regexp.Regexp
	min, max   *float64
	// anyOf are the branches of an anyOf the quick check understands, on
	// a node that has nothing else; a branch it does not (an array) is
	// left out, so a value only it accepts goes to gojsonschema.
	anyOf []*quickCheck
}

// annotations never affect validity.
var annotations = map[string]bool{"description": true, "examples": true, "default": true, "title": true}

// compileQuick compiles schema, or returns nil when it uses anything the
// quick check does not understand (then only gojsonschema is used).
func compileQuick(schema []byte) *quickCheck {
	var m map[string]any
	if json.Unmarshal(schema, &m) != nil {
		return nil
	}
	return compileNode(m)
}

func compileNode(m map[string]any) *quickCheck {
	q := &quickCheck{maxLen: -1}
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			s, ok := v.(string)
			if !ok || (s != "object" && s != "string" && s != "integer" && s != "number" && s != "boolean") {
				return nil
			}
			q.typ = s
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			q.props = map[string]*quickCheck{}
			for name, ps := range props {
				pm, ok := ps.(map[string]any)
				if !ok {
					return nil
				}
				if q.props[name] = compileNode(pm); q.props[name] == nil {
					return nil
				}
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case k == "additionalProperties":
			switch a := v.(type) {
			case bool:
				q.closed = !a
			case map[string]any:
				if q.additional = compileNode(a); q.additional == nil {
					return nil
				}
			default:
				return nil
			}
		case k == "minLength" || k == "maxLength":
			f, ok := v.(float64)
			if !ok || f != float64(int(f)) || f < 0 {
				return nil
			}
			if k == "minLength" {
				q.minLen = int(f)
			} else {
				q.maxLen = int(f)
			}
		case k == "pattern":
			s, ok := v.(string)
			if !ok {
				return nil
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return nil
			}
			q.pattern = re
		case k == "minimum" || k == "maximum":
			f, ok := v.(float64)
			if !ok {
				return nil
			}
			if k == "minimum" {
				q.min = &f
			} else {
				q.max = &f
			}
		case k == "anyOf":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, b := range list {
				if bm, ok := b.(map[string]any); ok {
					if bq := compileNode(bm); bq != nil {
						q.anyOf = append(q.anyOf, bq)
					}
				}
			}
			if len(q.anyOf) == 0 {
				return nil
			}
		default:
			return nil // a keyword we do not check: leave it to gojsonschema
		}
	}
	if q.anyOf != nil && (q.typ != "" || q.props != nil || q.required != nil || q.closed || q.additional != nil ||
		q.minLen != 0 || q.maxLen >= 0 || q.pattern != nil || q.min != nil || q.max != nil) {
		return nil // an anyOf beside other keywords: gojsonschema's
	}
	return q
}

// valid reports whether args certainly satisfy the schema, and returns
// them decoded (numbers as json.Number) when they are an object.
func (q *quickCheck) valid(args []byte) (map[string]any, bool) {
	// Arguments of strings (the render tool's) decode in one pass.
	if m, ok := mcp.DecodeStringObject(args); ok {
		if !q.check(m) {
			return nil, false
		}
		return m, true
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() || !q.check(v) {
		return nil, false
	}
	m, _ := v.(map[string]any)
	return m, true
}

func (q *quickCheck) check(v any) bool {
	if q.anyOf != nil {
		for _, b := range q.anyOf {
			if b.check(v) {
				return true
			}
		}
		return false
	}
	switch q.typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, r := range q.required {
			if _, ok := m[r]; !ok {
				return false
			}
		}
		for k, val := range m {
			if p, ok := q.props[k]; ok {
				if !p.check(val) {
					return false
				}
				continue
			}
			if q.closed {
				return false
			}
			if q.additional != nil && !q.additional.check(val) {
				return false
			}
		}
		return true
	case "string":
		s, ok := v.(string)
		if !ok {
			return false
		}
		n := utf8.RuneCountInString(s)
		if n < q.minLen || (q.maxLen >= 0 && n > q.maxLen) {
			return false
		}
		return q.pattern == nil || q.pattern.MatchString(s)
	case "integer":
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		// Integers only, in plain notation: anything else goes to gojsonschema.
		for _, c := range []byte(num) {
			if c == '.' || c == 'e' || c == 'E' {
				return false
			}
		}
		f, err := num.Float64()
		if err != nil || (q.min != nil && f < *q.min) || (q.max != nil && f > *q.max) {
			return false
		}
		return true
	case "number":
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := num.Float64()
		return err == nil && (q.min == nil || f >= *q.min) && (q.max == nil || f <= *q.max)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "":
		return q.props == nil && q.required == nil && !q.closed && q.additional == nil &&
			q.minLen == 0 && q.maxLen < 0 && q.pattern == nil && q.min == nil && q.max == nil
	}
	return false
}
