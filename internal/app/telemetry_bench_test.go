package app_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/otlptest"
	"github.com/flowyprompt/flowyprompt/internal/telemetry"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// BenchmarkEngineTelemetry is BenchmarkEnginePipelined's prompts/get (32
// in flight, as over stdio) with the telemetry off, as serve runs without
// OTEL_* variables; on, with the SDK's batching exporter sending every
// span and the histograms over OTLP/HTTP to a receiver on loopback; and
// on with every span dropped by the sampler (the histograms alone); and
// on with the audit log too (a JSON line per request, written to
// io.Discard). The difference is the cost per request of each.
func BenchmarkEngineTelemetry(b *testing.B) {
	b.Run("telemetry=off", func(b *testing.B) { benchObserved(b, nil, "prompts/get", promptsGet, 32) })
	b.Run("telemetry=on", func(b *testing.B) {
		benchObserved(b, otlpObserver(b), "prompts/get", promptsGet, 32)
	})
	b.Run("telemetry=on,sampler=always_off", func(b *testing.B) {
		benchObserved(b, otlpObserver(b, "OTEL_TRACES_SAMPLER", "always_off"), "prompts/get", promptsGet, 32)
	})
	b.Run("telemetry=on+audit", func(b *testing.B) {
		obs := mcp.JoinObservers(otlpObserver(b), audit.New(slog.New(slog.NewJSONHandler(io.Discard, nil))))
		benchObserved(b, obs, "prompts/get", promptsGet, 32)
	})
}

// otlpObserver sets up the telemetry as serve does, from the environment,
// exporting to a receiver of its own
// that only counts the exports (decoding them is a collector's cost).
func otlpObserver(b *testing.B, env ...string) mcp.Observer {
	recv := otlptest.NewCounting()
	b.Cleanup(recv.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	b.Setenv("OTEL_SERVICE_NAME", "flowyprompt-bench")
	for i := 0; i+1 < len(env); i += 2 {
		b.Setenv(env[i], env[i+1])
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{Stdio: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
		// Setup installed global providers; the next run starts clean.
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		if recv.Exports() == 0 {
			b.Error("the receiver got no export: the benchmark measured no exporter")
		}
	})
	return tel.Observer
}
