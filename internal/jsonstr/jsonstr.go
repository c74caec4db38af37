// Package jsonstr escapes text, in a string or a byte slice, for JSON
// exactly as encoding/json does with HTML escaping off, but faster on the
// text prompts are made of.
//
// It is shared by the protocol encoder (mcp), which escapes results, and
// by templates and render, which escape a template's fixed text once when
// it is loaded so that rendering can copy it already escaped. Both sides
// must escape alike for the copies to be right, hence one package.
package jsonstr

import (
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes that need no escaping inside a JSON string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for i := 0x20; i < utf8.RuneSelf; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

// Append appends s as a JSON string, quotes included.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends the inside of s's JSON string, without quotes:
// control characters, quotes and backslashes escaped, invalid UTF-8 as
// U+FFFD, and U+2028/U+2029 escaped.
//
// Escaping works rune by rune, so the escaping of a concatenation of
// valid UTF-8 strings is the concatenation of their escapings; that is what
// lets a caller assemble escaped text from pieces escaped earlier.
func AppendEscaped(dst []byte, s string) []byte { return appendEscaped(dst, s) }

// AppendEscapedBytes is AppendEscaped for text held in a byte slice, read
// in place rather than copied into a string first. b may lie in dst's
// array, but not where the escaping is appended.
func AppendEscapedBytes(dst, b []byte) []byte { return appendEscaped(dst, b) }

func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Skip eight bytes at a time: prompt text is mostly plain ASCII,
		// and skipping whole words of it is what makes this faster than
		// encoding/json.
		if i+8 <= len(s) && plainWord(load64(s, i)) {
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
		r, size := decodeRune(s[i:])
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
	return append(dst, s[start:]...)
}

// load64 reads the eight bytes of s at i as a little-endian word. Written
// out byte by byte, as encoding/binary does, the compiler makes it one load
// for strings and slices alike.
func load64[T string | []byte](s T, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// decodeRune decodes the first rune of s with the utf8 function for its
// type: the switch costs a comparison, where converting a byte slice to a
// string would copy.
func decodeRune[T string | []byte](s T) (rune, int) {
	switch s := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(s)
	case []byte:
		return utf8.DecodeRune(s)
	}
	panic("jsonstr: decodeRune of neither string nor []byte")
}

// Escaped returns AppendEscaped(nil, s) as a string. When nothing in s
// needs escaping, as in most of a template's text, that is s itself, and
// nothing is allocated.
func Escaped(s string) string {
	n := plainLen(s)
	if n == len(s) {
		return s
	}
	// Escaping goes rune by rune and n is where a rune starts, so the rest
	// escapes on its own as it would within s.
	b := append(make([]byte, 0, len(s)+len(s)/8), s[:n]...)
	b = AppendEscaped(b, s[n:])
	// b is never used again: the string can share its memory.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// plainLen returns the length of the longest prefix of s that
// AppendEscaped copies unchanged: it stops where AppendEscaped would
// escape or replace something.
func plainLen(s string) int {
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(load64(s, i)) {
			i += 8
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			if !safe[b] {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return i
		}
		i += size
	}
	return len(s)
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
