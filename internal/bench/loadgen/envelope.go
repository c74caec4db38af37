package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The drivers look at three top-level fields of every message (id, method,
// error) and never at the result. encoding/json validates and walks the
// whole 2 KB message to find them, twice (checkValid, then decode), which
// made the load generator spend more CPU per request than the servers it
// measures, on a machine it shares with them. scanEnvelope walks the top
// level only, skipping nested values by bracket depth. FuzzScanEnvelope
// holds it to encoding/json's answers.

// parseEnvelope reads the id, method and error of a JSON-RPC message.
func parseEnvelope(msg []byte) (envelope, error) {
	if env, ok := scanEnvelope(msg); ok {
		return env, nil
	}
	// Malformed, or a form the scanner does not take on (escaped keys):
	// let encoding/json decide, and explain.
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		return envelope{}, fmt.Errorf("message is not JSON: %w (%.200s)", err, msg)
	}
	return env, nil
}

// scanEnvelope is the fast path of parseEnvelope; ok is false when msg is
// not a well-formed object it can read.
func scanEnvelope(msg []byte) (env envelope, ok bool) {
	ok = scanMembers(msg, func(key, val []byte) bool {
		// Later duplicates win, as with encoding/json.
		switch string(key) {
		case "id":
			env.ID = json.RawMessage(val)
		case "method":
			m, ok := stringValue(val)
			if !ok {
				return false // encoding/json would refuse a non-string
			}
			env.Method = m
		case "error":
			env.Error = json.RawMessage(val)
		}
		return true
	})
	if !ok {
		return envelope{}, false
	}
	return env, true
}

// scanMembers walks the top level of the JSON object in msg and calls f
// with each member's key (the bytes between its quotes) and raw value, in
// order. It reports false, having stopped, when msg is not a well-formed
// object it can read (a key with escapes or non-ASCII bytes included) or f
// returned false.
func scanMembers(msg []byte, f func(key, val []byte) bool) bool {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return false
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return skipSpace(msg, i+1) == len(msg)
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return false
		}
		kEnd, plain := stringEnd(msg, i)
		if kEnd < 0 || !plain {
			return false
		}
		key := msg[i+1 : kEnd-1]
		i = skipSpace(msg, kEnd)
		if i >= len(msg) || msg[i] != ':' {
			return false
		}
		i = skipSpace(msg, i+1)
		vEnd := valueEnd(msg, i)
		if vEnd < 0 {
			return false
		}
		if !f(key, msg[i:vEnd]) {
			return false
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) {
			return false
		}
		switch msg[i] {
		case ',':
			i = skipSpace(msg, i+1)
		case '}':
			return skipSpace(msg, i+1) == len(msg)
		default:
			return false
		}
	}
}

// stringValue reads a raw JSON value that must be a string, as
// encoding/json would into a string: null leaves it empty, anything else
// is refused.
func stringValue(val []byte) (string, bool) {
	switch {
	case val[0] == '"':
		if _, plain := stringEnd(val, 0); plain {
			return string(val[1 : len(val)-1]), true
		}
		var s string
		if err := json.Unmarshal(val, &s); err != nil {
			return "", false
		}
		return s, true
	case string(val) == "null":
		return "", true
	}
	return "", false
}

// resultType returns the resultType of a response's result ("complete"
// from protocol 2026-07-28 on), or "" when it has none: no result, a
// result that is not an object, or a resultType that is not a string.
func resultType(msg []byte) string {
	if rt, ok := scanResultType(msg); ok {
		return rt
	}
	return decodeResultType(msg)
}

// scanResultType is the fast path of resultType: it walks the top level
// of msg and of its result, skipping the rest (the rendered text, mostly)
// by bracket depth. ok is false when it cannot tell.
func scanResultType(msg []byte) (rt string, ok bool) {
	var result []byte
	if !scanMembers(msg, func(key, val []byte) bool {
		if string(key) == "result" {
			result = val
		}
		return true
	}) {
		return "", false
	}
	if result == nil || result[0] != '{' {
		return "", true // none, or not an object: encoding/json reads no resultType either
	}
	if !scanMembers(result, func(key, val []byte) bool {
		if string(key) == "resultType" {
			s, isString := stringValue(val)
			if !isString && !scalarOrContainer(val) {
				return false
			}
			rt = s // a non-string is no resultType
		}
		return true
	}) {
		return "", false
	}
	return rt, true
}

// scalarOrContainer reports whether val, a value valueEnd delimited, is one
// that encoding/json refuses to read into a string without the whole
// message being malformed: a number, a boolean, an object or an array.
func scalarOrContainer(val []byte) bool {
	switch val[0] {
	case '{', '[':
		return json.Valid(val)
	case '"':
		return false
	}
	return scalar(val)
}

// decodeResultType is resultType by encoding/json, with keys matched
// exactly: the fallback of scanResultType, and what FuzzResultType holds
// it to.
func decodeResultType(msg []byte) string {
	var top, result map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || json.Unmarshal(top["result"], &result) != nil {
		return ""
	}
	var rt string
	if json.Unmarshal(result["resultType"], &rt) != nil {
		return ""
	}
	return rt
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] (a
// quote), or -1; plain reports that it is ASCII without escapes, so its
// bytes are its value (encoding/json would decode escapes and replace
// invalid UTF-8).
func stringEnd(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++ // the escaped character; \uXXXX's digits are plain bytes
		case c < 0x20:
			return -1, false // JSON forbids raw control characters in strings
		case c >= 0x80:
			plain = false
		}
	}
	return -1, false
}

// skipString returns the index just past the string starting at b[i], or
// -1. It jumps from quote to quote with bytes.IndexByte, which is what
// makes a 2 KB text value cheap to pass over; only a backslash before the
// quote needs a closer look.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		seg := b[j : j+q]
		bs := bytes.IndexByte(seg, '\\')
		if bs < 0 {
			return j + q + 1
		}
		// Skip the escape and look again from after it.
		j += bs + 2
		if j > len(b) {
			return -1
		}
	}
}

// valueEnd returns the index just past the JSON value starting at b[i], or
// -1. Nested objects and arrays are skipped by depth, minding strings;
// their contents are checked only as far as the encoding/json answer for
// the top level needs (FuzzScanEnvelope compares the two).
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		// A number, true, false or null: up to the next delimiter.
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i || !scalar(b[i:j]) {
			return -1
		}
		return j
	}
}

// scalar reports whether s is a JSON number, true, false or null.
func scalar(s []byte) bool {
	switch string(s) {
	case "true", "false", "null":
		return true
	}
	return json.Valid(s) && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}
