//go:build desktop

package telemetry

import (
	"context"
	"log/slog"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/edition"
)

// install, in the desktop build (package edition), has no SDK to build
// anything with. --metrics-addr is this program's own flag: the server
// refuses to start. The OTEL_* variables are often set for every program
// of a machine, so, as for OTLP over gRPC in the full build, one error
// line says what is not exported and the server serves on.
func install(_ context.Context, opts Options, getenv func(string) string, log *slog.Logger, _, _ bool) (*Telemetry, error) {
	if opts.MetricsAddr != "" {
		return nil, edition.LeftOut("--metrics-addr (FLOWYPROMPT_METRICS_ADDR)", "Prometheus endpoint", "servers scraped by Prometheus")
	}
	var set []string
	for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if val := strings.TrimSpace(getenv(v)); val != "" && val != "none" {
			set = append(set, v)
		}
	}
	log.Error("telemetry not exported",
		"err", edition.LeftOut(strings.Join(set, ", "), "OpenTelemetry export", "servers that export telemetry"))
	return &Telemetry{}, nil
}
