package logid_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/logid"
)

// TestDigest: the digest is the first 12 hex digits of the id's SHA-256
// (what `printf %s ID | sha256sum | cut -c1-12` prints), the same for the
// same id, and never contains the id.
func TestDigest(t *testing.T) {
	tests := []struct{ id, want string }{
		// printf %s 0123456789abcdef0123456789abcdef | sha256sum | cut -c1-12
		{"0123456789abcdef0123456789abcdef", "3eb1bd439947"},
		// printf %s '' | sha256sum | cut -c1-12
		{"", "e3b0c44298fc"},
	}
	for _, tt := range tests {
		if got := logid.Digest(tt.id); got != tt.want {
			t.Errorf("Digest(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if got := logid.Digest(tt.id); got != tt.want {
			t.Errorf("Digest(%q) changed between calls: %q", tt.id, got)
		}
	}
	if logid.Digest("a") == logid.Digest("b") {
		t.Error("two ids share a digest")
	}
}

// TestSession: a log line names the session by its digest alone.
func TestSession(t *testing.T) {
	const id = "87cb88f3c0ffee0087cb88f3c0ffee00"
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("session opened", logid.Session(id))
	line := buf.String()
	if strings.Contains(line, id) {
		t.Errorf("the line holds the session id: %s", line)
	}
	if want := "session=" + logid.Digest(id); !strings.Contains(line, want) {
		t.Errorf("the line lacks %s: %s", want, line)
	}
}
