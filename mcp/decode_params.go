package mcp

// The params of the hot methods (prompts/get, tools/call) are decoded here
// in one pass over the bytes the envelope scanner already validated, for
// the shape clients send: {"name": "…", "arguments": {…}}. Anything else —
// _meta, a key in other case, a repeated member, a value of another type —
// goes to encoding/json, so results and error messages stay encoding/json's.
// FuzzFastParamsMatchEncodingJSON holds the fast path to encoding/json's
// results.

// fastDecoder is a params type that can decode the common shape of itself.
// skipMeta lets a _meta member through unread: a modern request's _meta
// was read before (see Inbound), a legacy one's is left to encoding/json.
type fastDecoder interface {
	decodeFast(data []byte, skipMeta bool) bool
}

func (p *GetPromptParams) decodeFast(data []byte, skipMeta bool) bool {
	name, args, ok := nameAndArguments(data, skipMeta)
	if !ok {
		return false
	}
	// Filled apart and kept only on success: encoding/json must start
	// from the zero value when the fast path gives up half way.
	q := GetPromptParams{Name: name}
	if args != nil {
		s := scanner{data: args}
		if q.Arguments, ok = s.stringMap(); !ok {
			return false
		}
	}
	*p = q
	return true
}

func (p *CallToolParams) decodeFast(data []byte, skipMeta bool) bool {
	name, args, ok := nameAndArguments(data, skipMeta)
	if !ok || (args != nil && args[0] != '{') {
		return false
	}
	*p = CallToolParams{Name: name, Arguments: args}
	return true
}

// nameAndArguments reads {"name": "…", "arguments": …}, each member at
// most once, in any order, and returns the name and the arguments' JSON
// (nil when absent). With skipMeta, a _meta member is stepped over.
func nameAndArguments(data []byte, skipMeta bool) (name string, args []byte, ok bool) {
	s := &scanner{data: data}
	var seenName, seenMeta bool
	ok = s.fields(func(key []byte) bool {
		switch string(key) {
		case `"_meta"`:
			if !skipMeta || seenMeta {
				return false
			}
			seenMeta = true
			return s.value(1) == nil
		case `"name"`:
			if seenName {
				return false
			}
			seenName = true
			var ok bool
			name, ok = s.stringValue()
			return ok
		case `"arguments"`:
			if args != nil {
				return false
			}
			start := s.i
			if s.value(1) != nil {
				return false
			}
			args = s.data[start:s.i:s.i]
			return true
		}
		return false
	})
	return name, args, ok && s.end() == nil
}

// DecodeStringObject decodes data when it is a JSON object whose values
// are strings or objects of strings, as tool arguments usually are, into
// what encoding/json would decode it to (map[string]any holding string and
// map[string]any). ok is false for anything else — numbers, arrays,
// escaped member names, deeper nesting — and the caller then decodes it
// the general way.
func DecodeStringObject(data []byte) (m map[string]any, ok bool) {
	s := &scanner{data: data}
	s.ws()
	if m, ok = s.stringTree(1); !ok || s.end() != nil {
		return nil, false
	}
	return m, true
}

// fields reads the object at the cursor, calling each with every member's
// name as written (quotes included) and the cursor on its value, which
// each must consume. It reports false on anything but a well-formed object
// with plain member names, or when each does.
func (s *scanner) fields(each func(key []byte) bool) bool {
	s.ws()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return false
	}
	if s.open('}') {
		return true
	}
	for {
		key, escaped, err := s.member()
		if err != nil || escaped || !each(key) {
			return false
		}
		more, err := s.next('}')
		if err != nil {
			return false
		}
		if !more {
			return true
		}
	}
}

// stringValue reads the string at the cursor.
func (s *scanner) stringValue() (string, bool) {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return "", false
	}
	start := s.i
	if _, err := s.str(); err != nil {
		return "", false
	}
	v, err := rawString(s.data[start:s.i])
	return v, err == nil
}

// stringMap reads an object of strings at the cursor; a repeated name
// keeps its last value, as encoding/json does.
func (s *scanner) stringMap() (map[string]string, bool) {
	m := make(map[string]string, 4)
	ok := s.fields(func(key []byte) bool {
		k, err := rawString(key)
		v, ok := s.stringValue()
		m[k] = v
		return ok && err == nil
	})
	return m, ok
}

// stringTree reads an object whose values are strings or, while depth
// allows, objects of the same kind.
func (s *scanner) stringTree(depth int) (map[string]any, bool) {
	m := make(map[string]any, 4)
	ok := s.fields(func(key []byte) bool {
		name, err := rawString(key)
		if err != nil {
			return false
		}
		if s.i < len(s.data) && s.data[s.i] == '{' && depth > 0 {
			sub, ok := s.stringTree(depth - 1)
			m[name] = sub
			return ok
		}
		v, ok := s.stringValue()
		m[name] = v
		return ok
	})
	return m, ok
}
