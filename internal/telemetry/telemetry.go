// Package telemetry sends the server's traces and metrics with
// OpenTelemetry, by the MCP semantic conventions: one SERVER span per
// request, the histograms mcp.server.operation.duration and
// mcp.server.session.duration, and (through the global tracer provider)
// the GitHub source's CLIENT spans.
//
// It is configured by the standard OTEL_* environment variables alone
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, …). When none of them asks for an
// exporter and no Prometheus listener is wanted, Setup installs nothing:
// its Observer is nil, so the engine runs without a hook, and the global
// providers stay OpenTelemetry's no-op ones. OTLP goes over HTTP only
// (exporters.go): a request for gRPC is reported and that signal's OTLP
// export left out.
//
// The desktop build (go build -tags desktop, see package edition) keeps
// this file alone: sdk.go, exporters.go and observer.go, which link the
// SDK, the exporters and the Prometheus client, are left out, and
// desktop.go reports what the environment asked for instead.
//
// The engine reaches it through mcp.Observer only: package mcp never
// imports OpenTelemetry.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/flowyprompt/flowyprompt"

// Options configure Setup.
type Options struct {
	// Stdio: stdout carries the protocol, so an exporter that writes to
	// stdout (OTEL_*_EXPORTER=console) is refused.
	Stdio bool
	// MetricsAddr, when set, is the HOST:PORT of a Prometheus listener
	// serving /metrics; an empty host means loopback.
	MetricsAddr string
	// AllowedHosts are the Host values a Prometheus listener answers
	// besides the loopback names with its port and its own address
	// (--allowed-hosts, as the MCP listener): a web page rebound to
	// 127.0.0.1 cannot read the metrics.
	AllowedHosts   []string
	ServiceVersion string
	Logger         *slog.Logger
	// Getenv reads the OTEL_* variables that choose the exporters and the
	// OTLP protocol (default os.Getenv). The exporters and the SDK read
	// their own settings (endpoint, headers, sampler, intervals) from the
	// process environment, so a Getenv that disagrees with it only serves
	// tests of what is enabled.
	Getenv func(string) string
}

// Telemetry is what Setup installed.
type Telemetry struct {
	// Observer is the engine's hook (mcp.EngineOptions.Observer), nil when
	// nothing is exported.
	Observer mcp.Observer
	// MetricsAddr is the address the Prometheus listener is bound to ("":
	// none).
	MetricsAddr string

	shutdowns []func(context.Context) error
}

// Shutdown flushes the spans and metrics not yet exported and stops the
// exporters and the Prometheus listener. Call it once the engine has
// shut down, with a deadline.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for i := len(t.shutdowns) - 1; i >= 0; i-- {
		if err := t.shutdowns[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	t.shutdowns = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}

// wants reports whether the environment asks for a signal's exporter:
// its OTEL_<SIGNAL>_EXPORTER names one other than none, or an OTLP
// endpoint is set for it (OTLP is then the default exporter).
func wants(getenv func(string) string, signal string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exp := strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER"))
	if exp == "none" {
		return false
	}
	return exp != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// Setup installs the exporters the environment asks for, and the
// Prometheus listener when opts.MetricsAddr is set (install: sdk.go, or
// desktop.go in the desktop build). With neither it
// returns a Telemetry whose Observer is nil and whose Shutdown does
// nothing.
func Setup(ctx context.Context, opts Options) (_ *Telemetry, err error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	traces, metrics := wants(getenv, "TRACES"), wants(getenv, "METRICS")
	if !traces && !metrics && opts.MetricsAddr == "" {
		return &Telemetry{}, nil
	}
	return install(ctx, opts, getenv, log, traces, metrics)
}
