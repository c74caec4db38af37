package streamable

import "testing"

// FuzzParseEventID: Last-Event-ID comes from the client. Whatever it is,
// parsing never panics, accepts only what names a stream and an event, and
// reads back every id the server writes.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"1-0", "12-345", "0-1", "-1", "1-", "+1-2", "1--2", "9223372036854775807-1", "a-b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, seq, ok := parseEventID(id)
		if !ok {
			return
		}
		if n <= 0 || seq < 0 {
			t.Fatalf("parseEventID(%q) = %d, %d: accepted a stream or event out of range", id, n, seq)
		}
		n2, seq2, ok2 := parseEventID(eventID(n, seq))
		if !ok2 || n2 != n || seq2 != seq {
			t.Fatalf("eventID(%d, %d) = %q reads back as %d, %d, %v", n, seq, eventID(n, seq), n2, seq2, ok2)
		}
	})
}
