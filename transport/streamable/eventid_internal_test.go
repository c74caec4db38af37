package streamable

import (
	"regexp"
	"testing"
)

// serverID is every id eventID writes for a stream (numbered from 1) and
// an event (from 0): decimal numbers with no sign and no leading zero.
var serverID = regexp.MustCompile(`^([1-9][0-9]*)-(0|[1-9][0-9]*)$`)

// fitsInt64 reports whether a decimal number without sign or leading
// zeros fits an int64, by comparing digits rather than by parsing, so it
// does not share parseEventID's mistakes.
func fitsInt64(digits string) bool {
	const max = "9223372036854775807"
	return len(digits) < len(max) || (len(digits) == len(max) && digits <= max)
}

// FuzzParseEventID: Last-Event-ID comes from the client. Whatever it is,
// parsing never panics, accepts exactly the ids the server can have
// written (so no other spelling of the same numbers), and reads each back
// to the numbers that write it.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"1-0", "12-345", "0-1", "-1", "1-", "+1-2", "1-+2", "01-2", "1-02", "1-00", "1--2",
		"9223372036854775807-1", "9223372036854775808-1", "1-9223372036854775807", "a-b", "", "1-2-3", " 1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, seq, ok := parseEventID(id)
		m := serverID.FindStringSubmatch(id)
		want := m != nil && fitsInt64(m[1]) && fitsInt64(m[2])
		if ok != want {
			t.Fatalf("parseEventID(%q) accepted = %v, want %v", id, ok, want)
		}
		if ok && eventID(n, seq) != id {
			t.Fatalf("parseEventID(%q) = %d, %d, which eventID writes %q", id, n, seq, eventID(n, seq))
		}
		if !ok && (n != 0 || seq != 0) {
			t.Fatalf("parseEventID(%q) refused it but returned %d, %d", id, n, seq)
		}
	})
}
