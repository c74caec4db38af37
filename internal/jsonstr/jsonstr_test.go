package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func stdString(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

var seeds = []string{"", "plain ascii text, long enough for words", "quote\" back\\slash", "\x00\x01\x1f\x7f",
	"한국어 텍스트", "\u2028\u2029", "bad \xff utf8 \xc3", "<html>&amp;</html>", strings.Repeat("a\"b", 20),
	"12345678\n12345678", "\t\r\b\f"}

// FuzzAppend: the hand-written string encoder produces exactly what
// encoding/json does (HTML escaping off), for any input.
func FuzzAppend(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		if want := stdString(t, s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzConcatenation: for valid UTF-8, escaping two strings one after the
// other gives the escaping of their concatenation: AppendEscaped depends on
// nothing but the runes it is given, and leaves what dst held alone.
func FuzzConcatenation(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, seeds[(i+1)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // only valid UTF-8 is assembled from pieces
		}
		whole := AppendEscaped(nil, a+b)
		pieces := AppendEscaped(AppendEscaped(nil, a), b)
		if !bytes.Equal(whole, pieces) {
			t.Fatalf("escape(%q+%q) = %s, pieces give %s", a, b, whole, pieces)
		}
	})
}

// BenchmarkAppendEscaped: plain ASCII takes the eight-bytes-at-a-time
// path, Korean the rune-by-rune one.
func BenchmarkAppendEscaped(b *testing.B) {
	texts := []struct{ name, text string }{
		{"ascii", strings.Repeat("Consider the constraints, the trade-offs and the people affected.\n", 30)},
		{"korean", strings.Repeat("제약과 트레이드오프, 영향을 받는 사람들을 고려하세요.\n", 30)},
	}
	for _, tt := range texts {
		buf := make([]byte, 0, 2*len(tt.text))
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			for b.Loop() {
				buf = AppendEscaped(buf[:0], tt.text)
			}
		})
	}
}

func BenchmarkAppend2KB(b *testing.B) {
	s := strings.Repeat("Consider the constraints, the trade-offs and the people affected.\n", 30)
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = Append(buf[:0], s)
	}
}
