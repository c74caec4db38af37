//go:build desktop

package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestSetupDesktop: the desktop build refuses --metrics-addr, and for the
// OTEL_* variables logs one error line naming them and serves on, without
// a hook.
func TestSetupDesktop(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		env     []string
		refused string // in the error; "" for none
		logged  []string
	}{
		{name: "nothing asked", env: []string{"OTEL_SERVICE_NAME", "x"}},
		{name: "metrics listener", opts: Options{MetricsAddr: ":0"}, refused: "--metrics-addr (FLOWYPROMPT_METRICS_ADDR): this is the Claude Desktop bundle's build"},
		{name: "endpoint", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_METRICS_EXPORTER", "none"},
			logged: []string{"level=ERROR", "OTEL_EXPORTER_OTLP_ENDPOINT: this is the Claude Desktop bundle's build", "make install, or a release archive"}},
		{name: "prometheus exporter", env: []string{"OTEL_METRICS_EXPORTER", "prometheus"},
			logged: []string{"level=ERROR", "OTEL_METRICS_EXPORTER: this is the Claude Desktop bundle's build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.opts.Getenv, tt.opts.Logger = envOf(tt.env...), slog.New(slog.NewTextHandler(&buf, nil))
			tel, err := Setup(context.Background(), tt.opts)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "make install") {
					t.Fatalf("err %v, want a refusal with %q and the fix", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tel.Observer != nil || tel.MetricsAddr != "" {
				t.Errorf("installed %+v in the desktop build", tel)
			}
			log := buf.String()
			if lines := strings.Count(log, "\n"); lines != min(1, len(tt.logged)) {
				t.Errorf("log %q: %d lines, want one line for what is asked, none otherwise", log, lines)
			}
			for _, want := range tt.logged {
				if !strings.Contains(log, want) {
					t.Errorf("log %q lacks %q", log, want)
				}
			}
		})
	}
}
