package loadgen

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzEventReader feeds arbitrary streams to the event reader: it must end
// (no loop without progress), never return more data than it read, and
// give back exactly the payload of a well-formed one-line event.
func FuzzEventReader(f *testing.F) {
	for _, seed := range []string{
		"event: endpoint\ndata: /message?s=1\n\n",
		": ping\r\n\r\ndata: {\"id\":1}\r\n\r\n",
		"data: a\ndata: b\n\nevent: x\n\n",
		"data",
		"\n\n\n",
		"data: " + strings.Repeat("z", 20000) + "\n\n",
		"event:\ndata:\n\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		er := newEventReader(strings.NewReader(in))
		total := 0
		for i := 0; ; i++ {
			ev, err := er.next()
			if err != nil {
				break
			}
			total += len(ev.data)
			if total > len(in) {
				t.Fatalf("read %d bytes of data from a %d-byte stream", total, len(in))
			}
			if i > len(in) {
				t.Fatalf("more events (%d) than input bytes", i)
			}
		}

		// A payload without line breaks survives one data line intact
		// (an empty one is a priming event, skipped).
		payload := strings.NewReplacer("\r", "", "\n", "").Replace(in)
		if payload == "" {
			return
		}
		er = newEventReader(strings.NewReader("event: message\ndata: " + payload + "\n\n"))
		ev, err := er.next()
		if err != nil {
			t.Fatalf("well-formed event: %v", err)
		}
		if ev.name != "message" || !bytes.Equal(ev.data, []byte(payload)) {
			t.Fatalf("got %q %q, want message %q", ev.name, ev.data, payload)
		}
		if _, err := er.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the only event: %v, want EOF", err)
		}
	})
}

// FuzzParseStatCPU checks the /proc/PID/stat parser never panics and, when
// it succeeds, never reports negative CPU time.
func FuzzParseStatCPU(f *testing.F) {
	f.Add("1234 (flowyprompt) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 5 0 100 0 0")
	f.Add("99 (a) b) R 1 99 99 0 -1 0 0 0 0 0 7 3 0 0")
	f.Add(")")
	f.Add("1 (x) S 1 1 1 0 -1 0 0 0 0 0 -5 1 0")
	f.Fuzz(func(t *testing.T, stat string) {
		d, err := parseStatCPU([]byte(stat))
		if err == nil && d < 0 && !strings.Contains(stat, "-") {
			t.Fatalf("negative cpu %s from %q", d, stat)
		}
	})
}
