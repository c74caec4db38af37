package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"
)

// The envelope scanner reads a JSON-RPC message in one validating pass:
// it finds the members we need and keeps the raw bytes of id, params and
// result as sub-slices of one copy of the frame. encoding/json would scan
// the frame twice (validation, then decoding) and allocate a copy per
// member. Member names are matched exactly, as JSON-RPC defines them
// (encoding/json would also take "Method" for "method").

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// syntaxError is malformed JSON at an offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off+1) }

// typeError is a member of the wrong JSON type.
type typeError struct{ member, want, got string }

func (e *typeError) Error() string {
	return fmt.Sprintf("%s must be %s, not %s", e.member, e.want, e.got)
}

type envelope struct {
	jsonrpc, method       string
	hasJSONRPC, hasMethod bool
	id, params, result    json.RawMessage
	errRaw                []byte
}

type scanner struct {
	data []byte
	i    int
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

// scanEnvelope parses data (already trimmed) as one JSON-RPC object.
func scanEnvelope(data []byte) (envelope, error) {
	var env envelope
	s := &scanner{data: data}
	s.ws()
	if s.i >= len(data) {
		return env, s.fail("unexpected end of input")
	}
	if data[s.i] != '{' {
		if err := s.value(0); err != nil {
			return env, err
		}
		if err := s.end(); err != nil {
			return env, err
		}
		if data[0] == '[' {
			return env, errBatch
		}
		return env, errNotObject
	}
	var typeErr error
	if s.open('}') {
		return env, s.end()
	}
	for {
		key, escaped, err := s.member()
		if err != nil {
			return env, err
		}
		if escaped {
			var k string
			if json.Unmarshal(key, &k) == nil {
				key = []byte(k)
			}
		} else {
			key = key[1 : len(key)-1]
		}
		vstart := s.i
		if err := s.value(1); err != nil {
			return env, err
		}
		raw := data[vstart:s.i]
		switch string(key) {
		case "jsonrpc":
			env.jsonrpc, env.hasJSONRPC = "", string(raw) != "null"
			if env.hasJSONRPC {
				if env.jsonrpc, err = rawString(raw); err != nil && typeErr == nil {
					typeErr = &typeError{"jsonrpc", "a string", kindOf(raw)}
				}
			}
		case "method":
			env.method, env.hasMethod = "", string(raw) != "null"
			if env.hasMethod {
				if env.method, err = rawString(raw); err != nil && typeErr == nil {
					typeErr = &typeError{"method", "a string", kindOf(raw)}
				}
			}
		case "id":
			env.id = raw
		case "params":
			env.params = nullable(raw)
		case "result":
			env.result = raw
		case "error":
			env.errRaw = nullable(raw)
		}
		more, err := s.next('}')
		if err != nil {
			return env, err
		}
		if !more {
			break
		}
	}
	if err := s.end(); err != nil {
		return env, err
	}
	return env, typeErr
}

var (
	errBatch     = errors.New("batch")
	errNotObject = errors.New("not an object")
	errNotString = errors.New("not a string")
)

// nullable treats a JSON null member like an absent one, as encoding/json
// does for json.RawMessage and pointer fields.
func nullable(raw []byte) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// open consumes an opening bracket and reports whether the container is
// empty (its closer follows at once, and is consumed too).
func (s *scanner) open(closer byte) bool {
	s.i++
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == closer {
		s.i++
		return true
	}
	return false
}

// next reads what follows an element: a comma (more elements) or the
// container's closer.
func (s *scanner) next(closer byte) (more bool, err error) {
	s.ws()
	switch {
	case s.i >= len(s.data):
		return false, s.fail("unexpected end of input")
	case s.data[s.i] == ',':
		s.i++
		return true, nil
	case s.data[s.i] != closer:
		return false, s.fail(fmt.Sprintf("expected ',' or '%c'", closer))
	}
	s.i++
	return false, nil
}

// member reads `"name":` (with the spaces around it) and returns the name
// as written, quotes included, and whether it holds escapes.
func (s *scanner) member() (name []byte, escaped bool, err error) {
	s.ws()
	start := s.i
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return nil, false, s.fail("expected a member name")
	}
	if escaped, err = s.str(); err != nil {
		return nil, false, err
	}
	name = s.data[start:s.i]
	s.ws()
	if s.i >= len(s.data) || s.data[s.i] != ':' {
		return nil, false, s.fail("expected ':' after a member name")
	}
	s.i++
	s.ws()
	return name, escaped, nil
}

func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.data) {
		return s.fail("unexpected data after the message")
	}
	return nil
}

func kindOf(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// rawString decodes a JSON string value, without allocating when it has
// no escapes.
func rawString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", errNotString
	}
	inner := raw[1 : len(raw)-1]
	for _, b := range inner {
		if b == '\\' || b >= utf8.RuneSelf {
			var v string
			err := json.Unmarshal(raw, &v)
			return v, err
		}
	}
	return string(inner), nil
}

// value skips one JSON value, validating it.
func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	if s.i >= len(s.data) {
		return s.fail("unexpected end of input")
	}
	switch c := s.data[s.i]; {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		if s.open('}') {
			return nil
		}
		for more := true; more; {
			if _, _, err := s.member(); err != nil {
				return err
			}
			if err := s.value(depth + 1); err != nil {
				return err
			}
			var err error
			if more, err = s.next('}'); err != nil {
				return err
			}
		}
		return nil
	case c == '[':
		if s.open(']') {
			return nil
		}
		for more := true; more; {
			s.ws()
			if err := s.value(depth + 1); err != nil {
				return err
			}
			var err error
			if more, err = s.next(']'); err != nil {
				return err
			}
		}
		return nil
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return s.fail(fmt.Sprintf("invalid character %q looking for a value", s.data[s.i]))
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return s.fail("invalid literal")
	}
	s.i += len(lit)
	return nil
}

// str skips a string; it reports whether it held escapes. Like
// encoding/json it accepts invalid UTF-8 (decoding replaces it).
func (s *scanner) str() (escaped bool, err error) {
	s.i++ // opening quote
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.data) {
				return escaped, s.fail("unexpected end of input in a string")
			}
			switch s.data[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.data)-s.i < 5 {
					return escaped, s.fail("short \\u escape")
				}
				for _, h := range s.data[s.i+1 : s.i+5] {
					if !isHex(h) {
						return escaped, s.fail("invalid \\u escape")
					}
				}
				s.i += 5
			default:
				return escaped, s.fail("invalid escape in a string")
			}
		case c < 0x20:
			return escaped, s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return escaped, s.fail("unexpected end of input in a string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) number() error {
	d := s.data
	if d[s.i] == '-' {
		s.i++
	}
	if s.i >= len(d) {
		return s.fail("unexpected end of input in a number")
	}
	switch {
	case d[s.i] == '0':
		s.i++
	case d[s.i] >= '1' && d[s.i] <= '9':
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	default:
		return s.fail("invalid number")
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		if s.i >= len(d) || d[s.i] < '0' || d[s.i] > '9' {
			return s.fail("invalid number")
		}
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		if s.i >= len(d) || d[s.i] < '0' || d[s.i] > '9' {
			return s.fail("invalid number")
		}
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	}
	return nil
}

// decodeError turns the error object of a client's response into a
// jsonrpc2.Error (rare: only answers to our own requests carry one).
func decodeError(raw []byte) (*jsonrpc2.Error, error) {
	var e jsonrpc2.Error
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
