package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// memoryTerm is one line of docs/http.md's arithmetic: count things of
// each bytes.
type memoryTerm struct {
	what  string // the line's start in the doc, up to its colon
	count int64
	each  int64
}

func (m memoryTerm) bytes() int64 { return m.count * m.each }

// line is the term as the doc writes it.
func (m memoryTerm) line() string {
	return fmt.Sprintf("%s: %s × %s = %s", m.what, thousands(m.count), size(m.each), size(m.bytes()))
}

// TestDocsMemoryBound: the most memory docs/http.md says a client can make
// the server hold at the defaults is what the defaults the code uses add
// up to, line by line, and the table states those defaults. A limit that
// adds to what a session holds is a term of perSession (and a line of the
// doc's "Per session"); one that adds to what the server holds whatever
// the sessions, a term of serverWide.
func TestDocsMemoryBound(t *testing.T) {
	doc := readDoc(t, "docs/http.md")
	start := strings.Index(doc, "## Limits")
	if start < 0 {
		t.Fatal(`docs/http.md has no "## Limits"`)
	}
	limits := doc[start:]
	if end := strings.Index(limits[1:], "\n## "); end >= 0 {
		limits = limits[:end+1]
	}

	// The defaults of serve, as its flags have them.
	var cfg config.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := config.RegisterServe(fs, &cfg, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	sessions, message := int64(cfg.MaxSessions), int64(cfg.MaxMessageSize)
	if message != mcp.DefaultMaxMessageSize {
		t.Errorf("--max-message-size defaults to %d, the engine to %d", message, mcp.DefaultMaxMessageSize)
	}
	inflight := cfg.MaxInflightBytes
	if inflight != httpserver.DefaultMaxInflightBytes {
		t.Errorf("--max-inflight-bytes defaults to %d, the server to %d", inflight, httpserver.DefaultMaxInflightBytes)
	}

	rows := []struct{ row, value string }{
		{"| sessions, `subscriptions/listen` streams and event streams of the `--ui` page, of the server |", thousands(sessions)},
		{"| requests in flight in one session |", thousands(mcp.DefaultMaxInflightPerSession)},
		{"| one message (a posted body; a forwarded one) |", size(message)},
		{"| posted messages held at once, from before a body is read until its request has run |", size(inflight)},
		{"| a request's head |", size(httpserver.MaxHeaderBytes)},
		{"| a legacy SSE stream's buffer (events not yet written to the client) |", size(sse.BufferBytes)},
		{"| the buffers of all legacy SSE streams together |", size(sse.TotalBufferBytes)},
		{"| completion memory of one session |", size(app.CompletionSessionBytes)},
		{"| completion memory of all sessions |", size(app.CompletionTotalBytes)},
		{"| resource subscriptions of all sessions and listen streams together (each its URI's length and 64 bytes) |", size(mcp.DefaultMaxSubscriptionBytes)},
		{"| `clientInfo` `name`, `title`, `version` (`initialize`, or a 2026 request's `_meta`) |", size(mcp.MaxClientInfoField) + " each"},
		{"| the capabilities a client declares (`initialize`, or a 2026 request's `_meta`) |", size(mcp.MaxCapabilitiesSize)},
		{"| forwarded requests a replica serves at once (`--nats`) |", thousands(int64(cfg.MaxForwarded))},
		{"| of them, one session's |", thousands(int64(cfg.MaxForwardedPerSession))},
		{"| of them, one client's |", thousands(int64(cfg.MaxForwardedPerClient))},
	}
	if mcp.SubscriptionCost != 64 {
		t.Errorf("a subscription costs %d bytes besides its URI; the Limits table says 64", mcp.SubscriptionCost)
	}
	for _, r := range rows {
		i := strings.Index(limits, r.row)
		if i < 0 {
			t.Errorf("the Limits table has no row %q", r.row)
			continue
		}
		row, _, _ := strings.Cut(limits[i+len(r.row):], "\n")
		if def, _, _ := strings.Cut(row, "|"); strings.TrimSpace(def) != r.value && !strings.HasPrefix(strings.TrimSpace(def), r.value+",") && !strings.HasPrefix(strings.TrimSpace(def), r.value+";") {
			t.Errorf("the Limits table's %s gives the default %q, the code %s", r.row, strings.TrimSpace(def), r.value)
		}
	}

	// What each session holds for itself: what its client said of itself.
	// Everything else a session could hold without bound is bounded for
	// all sessions together, below.
	perSession := []memoryTerm{
		{"`clientInfo`'s fields", 3, mcp.MaxClientInfoField},
		{"the capabilities it declared", 1, mcp.MaxCapabilitiesSize},
	}
	var session int64
	var want []string
	for _, m := range perSession {
		session += m.bytes()
		want = append(want, m.line())
	}
	want = append(want, "one session in all: "+size(session))
	all := memoryTerm{"sessions", sessions, session}
	want = append(want, all.line())
	completion := min(sessions*app.CompletionSessionBytes, app.CompletionTotalBytes)
	shared := []struct {
		what  string
		bytes int64
	}{
		{"posted messages held until their requests have run (`--max-inflight-bytes`)", inflight},
		{"the buffers of all legacy SSE streams", sse.TotalBufferBytes},
		{"resource subscriptions of all sessions and listen streams", mcp.DefaultMaxSubscriptionBytes},
	}
	total := all.bytes()
	for _, m := range shared {
		total += m.bytes
		want = append(want, fmt.Sprintf("%s: %s", m.what, size(m.bytes)))
	}
	want = append(want, fmt.Sprintf("completion memory of all sessions: min(%s × %s, %s) = %s",
		thousands(sessions), size(app.CompletionSessionBytes), size(app.CompletionTotalBytes), size(completion)))
	total += completion
	want = append(want, fmt.Sprintf("**At most %s (about %d MiB)**", size(total), (total+1<<19)>>20))
	if total > 2<<30 {
		t.Errorf("at the defaults the server can be made to hold %s, over 2 GiB", size(total))
	}
	for _, w := range want {
		if !strings.Contains(limits, w) {
			t.Errorf("docs/http.md's Limits does not say %q", w)
		}
	}
}

// thousands writes n with a comma every three digits, as the docs do.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// size writes a byte count in MiB, or KiB when it is not a whole number
// of MiB, or bytes when it is not one of KiB.
func size(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return thousands(n>>20) + " MiB"
	case n%(1<<10) == 0:
		return thousands(n>>10) + " KiB"
	}
	return thousands(n) + " bytes"
}
