package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
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
		if e := Escaped(s); "\""+e+"\"" != string(got) {
			t.Fatalf("Escaped(%q) = %s, want the inside of %s", s, e, got)
		}
	})
}

// FuzzAppendEscapedBytes: a byte slice escapes exactly as the same text in
// a string, appended after what dst holds, including when the slice lies in
// dst's own array just before the escaping, as render passes it.
func FuzzAppendEscapedBytes(f *testing.F) {
	for i, s := range seeds {
		f.Add(seeds[(i+1)%len(seeds)], s)
	}
	f.Fuzz(func(t *testing.T, prefix, s string) {
		want := AppendEscaped([]byte(prefix), s)
		if got := AppendEscapedBytes([]byte(prefix), []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendEscapedBytes(%q, %q) = %q, want %q", prefix, s, got, want)
		}
		for _, room := range []int{0, len(s) * 6} { // reallocating, and in place
			buf := append(make([]byte, 0, len(prefix)+len(s)+room), prefix...)
			buf = append(buf, s...)
			text := buf[len(prefix):]
			got := AppendEscapedBytes(buf, text)
			if !bytes.Equal(got[:len(prefix)], []byte(prefix)) || string(got[len(prefix):len(buf)]) != s ||
				!bytes.Equal(got[len(buf):], want[len(prefix):]) {
				t.Fatalf("escaping %q from dst's own array (room %d) = %q, want %q after the text", s, room, got, want[len(prefix):])
			}
		}
	})
}

// FuzzConcatenation: for valid UTF-8, escaping two strings one after the
// other gives the escaping of their concatenation, which is what render
// relies on when it copies fixed text escaped in advance.
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

// TestEscapedSharesPlainText: text with nothing to escape comes back as
// itself, without allocating; anything else is escaped.
func TestEscapedSharesPlainText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "empty", in: "", want: ""},
		{name: "ascii", in: "plain ascii text, long enough for words", want: "plain ascii text, long enough for words"},
		{name: "unicode", in: "한국어 텍스트 <b>&</b>", want: "한국어 텍스트 <b>&</b>"},
		{name: "escape at the end", in: "one line\n", want: `one line\n`},
		{name: "escape after a long plain run", in: strings.Repeat("x", 20) + "\"q\"", want: strings.Repeat("x", 20) + `\"q\"`},
		{name: "invalid utf-8", in: "a\xffb", want: `a\ufffdb`},
		{name: "line separator", in: "a\u2028", want: `a\u2028`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escaped(tt.in)
			if got != tt.want {
				t.Fatalf("Escaped(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if tt.in != tt.want {
				return
			}
			if tt.in != "" && unsafe.StringData(got) != unsafe.StringData(tt.in) {
				t.Error("plain text was copied, not returned as it is")
			}
			if n := testing.AllocsPerRun(100, func() { _ = Escaped(tt.in) }); n != 0 {
				t.Errorf("%v allocations for plain text, want 0", n)
			}
		})
	}
}

// BenchmarkAppendEscaped: plain ASCII takes the eight-bytes-at-a-time
// path, Korean the rune-by-rune one; text in a string and in a byte slice
// share the code.
func BenchmarkAppendEscaped(b *testing.B) {
	texts := []struct{ name, text string }{
		{"ascii", strings.Repeat("Consider the constraints, the trade-offs and the people affected.\n", 30)},
		{"korean", strings.Repeat("제약과 트레이드오프, 영향을 받는 사람들을 고려하세요.\n", 30)},
	}
	for _, tt := range texts {
		buf := make([]byte, 0, 2*len(tt.text))
		b.Run(tt.name+"/string", func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			for b.Loop() {
				buf = AppendEscaped(buf[:0], tt.text)
			}
		})
		text := []byte(tt.text)
		b.Run(tt.name+"/bytes", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				buf = AppendEscapedBytes(buf[:0], text)
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
