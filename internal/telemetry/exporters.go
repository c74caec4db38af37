//go:build !desktop

package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporters are chosen here from the standard variables, as the
// OpenTelemetry specification defines them, rather than by the contrib
// autoexport package: that one links the gRPC exporters (gRPC's client
// and HTTP/2 transport) and the log exporters into every binary, for a
// protocol every collector also receives over HTTP. The OTLP
// exporters read their own settings (OTEL_EXPORTER_OTLP_ENDPOINT,
// _HEADERS, _TIMEOUT, _COMPRESSION, the certificates, the per-signal
// variants), and the SDK reads the batching and export intervals.

// protoHTTP is the one OTLP protocol this build speaks.
const protoHTTP = "http/protobuf"

// exporterNames is what each signal's OTEL_<SIGNAL>_EXPORTER may name.
var exporterNames = map[string][]string{
	"TRACES":  {"otlp", "console", "none"},
	"METRICS": {"otlp", "console", "prometheus", "none"},
}

// exportersOf lists the exporters OTEL_<SIGNAL>_EXPORTER names (a comma-
// separated list; otlp when unset), without none, or says which name is
// not one of them.
func exportersOf(getenv func(string) string, signal string) ([]string, error) {
	v := "OTEL_" + signal + "_EXPORTER"
	raw := strings.TrimSpace(getenv(v))
	if raw == "" {
		return []string{"otlp"}, nil
	}
	var out []string
	for _, name := range strings.Split(raw, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "" || name == "none":
		case !slices.Contains(exporterNames[signal], name):
			return nil, fmt.Errorf("%s=%s: unknown exporter %q; use one or more of %s",
				v, raw, name, strings.Join(exporterNames[signal], ", "))
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out, nil
}

// otlpProtocol is the OTLP protocol a signal is asked to use, and the
// variable that asks for it ("" when neither is set: http/protobuf).
func otlpProtocol(getenv func(string) string, signal string) (proto, variable string) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(v)); p != "" {
			return p, v
		}
	}
	return protoHTTP, ""
}

// unsupported collects the signals whose OTLP exporter was left out for
// a protocol this build does not speak, to be reported in one line.
type unsupported struct {
	signals  []string // "traces", "metrics"
	settings []string // "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"
	vars     []string
}

// check reports whether signal's OTLP exporter can be built, noting it
// when its protocol is not http/protobuf.
func (u *unsupported) check(getenv func(string) string, signal string) bool {
	proto, v := otlpProtocol(getenv, signal)
	if proto == protoHTTP {
		return true
	}
	u.signals = append(u.signals, strings.ToLower(signal))
	if s := v + "=" + proto; !slices.Contains(u.settings, s) {
		u.settings = append(u.settings, s)
		u.vars = append(u.vars, v)
	}
	return false
}

// report logs, once, what was not exported and how to fix it. The
// server serves on: a collector's gRPC port is no reason to refuse the
// prompts, and a setting shared with other programs is no typo.
func (u *unsupported) report(log *slog.Logger) {
	if len(u.signals) == 0 {
		return
	}
	log.Error("OTLP export off: this build sends OTLP over HTTP with protobuf only (http/protobuf), not over gRPC",
		"setting", strings.Join(u.settings, ", "),
		"not_exported", strings.Join(u.signals, ", "),
		"fix", "unset "+strings.Join(u.vars, " and ")+" or set it to http/protobuf, and point "+
			"OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP receiver (port 4318, not gRPC's 4317)")
}

// spanExporters builds the trace exporters the environment names. On
// an error it returns those built so far, for the caller to stop.
func spanExporters(ctx context.Context, getenv func(string) string, u *unsupported) ([]sdktrace.SpanExporter, error) {
	names, err := exportersOf(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	var exps []sdktrace.SpanExporter
	for _, name := range names {
		var exp sdktrace.SpanExporter
		switch name {
		case "otlp":
			if !u.check(getenv, "TRACES") {
				continue
			}
			exp, err = otlptracehttp.New(ctx)
		case "console":
			exp, err = stdouttrace.New()
		}
		if err != nil {
			return exps, fmt.Errorf("trace exporter %s: %w", name, err)
		}
		exps = append(exps, exp)
	}
	return exps, nil
}

// metricReaders builds the metric readers the environment names; a
// prometheus one starts its listener, whose stop it appends to stops.
// On an error it returns those built so far, for the caller to stop.
func metricReaders(ctx context.Context, getenv func(string) string, u *unsupported, log *slog.Logger,
	allowedHosts []string, stops *[]func(context.Context) error) ([]sdkmetric.Reader, error) {
	names, err := exportersOf(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	var readers []sdkmetric.Reader
	for _, name := range names {
		switch name {
		case "otlp":
			if !u.check(getenv, "METRICS") {
				continue
			}
			exp, err := otlpmetrichttp.New(ctx)
			if err != nil {
				return readers, fmt.Errorf("metric exporter otlp: %w", err)
			}
			// The periodic reader reads OTEL_METRIC_EXPORT_INTERVAL.
			readers = append(readers, sdkmetric.NewPeriodicReader(exp))
		case "console":
			exp, err := stdoutmetric.New()
			if err != nil {
				return readers, fmt.Errorf("metric exporter console: %w", err)
			}
			readers = append(readers, sdkmetric.NewPeriodicReader(exp))
		case "prometheus":
			// The specification's defaults for the SDK's own listener.
			host, port := getenv("OTEL_EXPORTER_PROMETHEUS_HOST"), getenv("OTEL_EXPORTER_PROMETHEUS_PORT")
			if host == "" {
				host = "localhost"
			}
			if port == "" {
				port = "9464"
			}
			r, _, stop, err := prometheusReader(net.JoinHostPort(host, port), allowedHosts, log)
			if err != nil {
				return readers, fmt.Errorf("OTEL_METRICS_EXPORTER=prometheus: %w", err)
			}
			*stops = append(*stops, stop)
			readers = append(readers, r)
		}
	}
	return readers, nil
}

// prometheusReader is a reader for a registry of its own, served on addr
// at /metrics to the Host values allowedHosts adds to the loopback names;
// it returns the bound address and the listener's stop.
func prometheusReader(addr string, allowedHosts []string, log *slog.Logger) (sdkmetric.Reader, string, func(context.Context) error, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, "", nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	bound, stop, err := serveMetrics(addr, reg, allowedHosts, log)
	if err != nil {
		// The reader is not attached to a provider yet: nothing to stop.
		return nil, "", nil, err
	}
	return exp, bound, stop, nil
}
