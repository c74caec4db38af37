// Package jsonstr escapes text for a JSON string exactly as encoding/json
// does with HTML escaping off, but faster on the text prompts are made of:
// the protocol encoder (mcp) writes every prompt and text result through
// it. It is held to encoding/json's output by fuzzing.
package jsonstr

import "unicode/utf8"

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
func AppendEscaped(dst []byte, s string) []byte {
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
	return append(dst, s[start:]...)
}

// load64 reads the eight bytes of s at i as a little-endian word. Written
// out byte by byte, as encoding/binary does, the compiler makes it one load
// for strings and slices alike.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
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
