package mcp

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// The hot results (prompts/get, text tool results) are encoded by hand:
// encoding/json reflects over them and escapes through a generic path,
// which profiles showed as the largest cost of a prompts/get after decoding.
// Everything else goes through encoding/json. The output is compact JSON
// without HTML escaping, byte for byte what encodeJSON produces (a test
// checks both ways give the same bytes).

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes that need no escaping inside a JSON string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for i := 0x20; i < utf8.RuneSelf; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

// appendString appends s as a JSON string, escaping as encoding/json does
// with HTML escaping off (control characters, quotes, backslashes, invalid
// UTF-8 as U+FFFD, and U+2028/U+2029).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	// Read the string's bytes in place, eight at a time: prompt text is
	// mostly plain ASCII, and skipping whole words of it is what makes this
	// faster than encoding/json.
	raw := unsafe.Slice(unsafe.StringData(s), len(s))
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(binary.LittleEndian.Uint64(raw[i:])) {
			i += 8
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendFast appends v's JSON when v is one of the hot result shapes and
// reports whether it did.
func appendFast(dst []byte, v any) ([]byte, bool) {
	switch r := v.(type) {
	case *GetPromptResult:
		for _, m := range r.Messages {
			if !plainText(m.Content) {
				return dst, false
			}
		}
		dst = append(dst, '{')
		if r.Description != "" {
			dst = append(dst, `"description":`...)
			dst = appendString(dst, r.Description)
			dst = append(dst, ',')
		}
		dst = append(dst, `"messages":[`...)
		for i, m := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = appendString(dst, m.Role)
			dst = append(dst, `,"content":`...)
			dst = appendTextContent(dst, m.Content.Text)
			dst = append(dst, '}')
		}
		return append(dst, ']', '}'), true
	case *CallToolResult:
		for _, c := range r.Content {
			if !plainText(c) {
				return dst, false
			}
		}
		var structured []byte
		appender, selfEncoding := r.StructuredContent.(JSONAppender)
		if r.StructuredContent != nil && !selfEncoding {
			var buf bytes.Buffer
			if encodeJSON(&buf, r.StructuredContent) != nil {
				return dst, false
			}
			structured = buf.Bytes()
		}
		dst = append(dst, `{"content":[`...)
		var first []byte // the first text block as written, quotes included
		for i, c := range r.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			start := len(dst) + len(`{"type":"text","text":`)
			dst = appendTextContent(dst, c.Text)
			if i == 0 && c.Text != "" {
				first = dst[start : len(dst)-1]
			}
		}
		dst = append(dst, ']')
		echoing, echoes := r.StructuredContent.(EchoingJSONAppender)
		switch {
		case echoes && first != nil:
			dst = append(dst, `,"structuredContent":`...)
			// first still holds its bytes if dst grows: append copies.
			dst = echoing.AppendJSONEchoing(dst, first)
		case selfEncoding:
			dst = append(dst, `,"structuredContent":`...)
			dst = appender.AppendJSON(dst)
		case structured != nil:
			dst = append(dst, `,"structuredContent":`...)
			dst = append(dst, structured...)
		}
		if r.IsError {
			dst = append(dst, `,"isError":true`...)
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// JSONAppender is implemented by result payloads that encode themselves
// (compact JSON, no HTML escaping), skipping encoding/json's reflection.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// EchoingJSONAppender is a JSONAppender whose JSON repeats part of the
// result's first text block (a rendered prompt is both in the text for
// people and models and in structuredContent). It is handed that block as
// already written, a JSON string with its quotes, so it can copy the part
// instead of escaping it a second time.
type EchoingJSONAppender interface {
	JSONAppender
	AppendJSONEchoing(dst, quotedText []byte) []byte
}

// AppendString appends s as a JSON string the way encoding/json does with
// HTML escaping off; JSONAppender implementations use it.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// plainText reports whether c is a text block with nothing but its text.
func plainText(c Content) bool {
	return c.Type == "text" && c.Data == "" && c.MimeType == "" && c.Resource == nil &&
		c.URI == "" && c.Name == "" && c.Annotations == nil
}

func appendTextContent(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"text"`...)
	if text != "" {
		dst = append(dst, `,"text":`...)
		dst = appendString(dst, text)
	}
	return append(dst, '}')
}

const (
	lo7   = 0x0101010101010101
	hi    = 0x8080808080808080
	quote = lo7 * '"'
	bslsh = lo7 * '\\'
)

// plainWord reports whether none of the eight bytes in w needs escaping or
// UTF-8 decoding: no byte below 0x20, no '"', no '\\', no byte >= 0x80.
func plainWord(w uint64) bool {
	zeroByte := func(x uint64) uint64 { return (x - lo7) &^ x & hi }
	return (w|(w-lo7*0x20)|zeroByte(w^quote)|zeroByte(w^bslsh))&hi == 0
}
