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
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return envelope{}, false
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return env, skipSpace(msg, i+1) == len(msg)
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return envelope{}, false
		}
		kEnd, plain := stringEnd(msg, i)
		if kEnd < 0 || !plain {
			return envelope{}, false
		}
		key := msg[i+1 : kEnd-1]
		i = skipSpace(msg, kEnd)
		if i >= len(msg) || msg[i] != ':' {
			return envelope{}, false
		}
		i = skipSpace(msg, i+1)
		vEnd := valueEnd(msg, i)
		if vEnd < 0 {
			return envelope{}, false
		}
		val := msg[i:vEnd]
		// Later duplicates win, as with encoding/json.
		switch string(key) {
		case "id":
			env.ID = json.RawMessage(val)
		case "method":
			if val[0] == '"' {
				if _, plain := stringEnd(val, 0); plain {
					env.Method = string(val[1 : len(val)-1])
				} else if err := json.Unmarshal(val, &env.Method); err != nil {
					return envelope{}, false
				}
			} else if string(val) == "null" {
				env.Method = ""
			} else {
				return envelope{}, false // encoding/json would refuse a non-string
			}
		case "error":
			env.Error = json.RawMessage(val)
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) {
			return envelope{}, false
		}
		switch msg[i] {
		case ',':
			i = skipSpace(msg, i+1)
		case '}':
			return env, skipSpace(msg, i+1) == len(msg)
		default:
			return envelope{}, false
		}
	}
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
