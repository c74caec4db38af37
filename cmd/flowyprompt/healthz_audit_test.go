package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestHealthzAuditDropped: with the audit log on, /healthz says how many
// of its lines were dropped; with it off, it says nothing of it.
func TestHealthzAuditDropped(t *testing.T) {
	src := templates.Embedded()
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	al := audit.Buffered(io.Discard, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })
	t.Cleanup(func() { _ = al.Close(context.Background()) })
	tests := []struct {
		name string
		al   *audit.Log
		want string // the "audit" member as JSON; "" for none
	}{
		{"on", al, `{"dropped_lines":0}`},
		{"off", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(catalogStatus(lib, nil, src, tt.al)(true))
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]json.RawMessage
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			if got := string(st["audit"]); got != tt.want {
				t.Errorf("audit = %q, want %q", got, tt.want)
			}
		})
	}
}
