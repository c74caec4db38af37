package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/google/go-cmp/cmp"
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
			raw, err := json.Marshal(catalogStatus(lib, nil, nil, src, tt.al)(context.Background(), true))
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

// TestHealthzPublicStale: a stale catalog, in the report for a request
// without the token, says since when and its code, never its reason,
// which may name the folder.
func TestHealthzPublicStale(t *testing.T) {
	lib := templates.NewLibrary(templates.Embedded(), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	const reason = "open /home/someone/prompts: permission denied"
	c := lib.Catalog().WithStale(&templates.Staleness{Since: time.Unix(0, 0).UTC(), Reason: reason, Code: "NETWORK_ERROR"})
	raw, err := json.Marshal(publicStatus(c, nil, "stale", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Stale map[string]any `json:"stale"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"since": "1970-01-01T00:00:00Z", "code": "NETWORK_ERROR"}
	if diff := cmp.Diff(want, st.Stale); diff != "" || strings.Contains(string(raw), "/home/someone") {
		t.Errorf("public stale (-want +got):\n%s\nreport: %s", diff, raw)
	}
}
