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
// The engine reaches it through mcp.Observer only: package mcp never
// imports OpenTelemetry.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

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
	MetricsAddr    string
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

// writesStdout reports whether a signal's exporter list names one that
// writes to stdout.
func writesStdout(getenv func(string) string, signal string) bool {
	for _, e := range strings.Split(getenv("OTEL_"+signal+"_EXPORTER"), ",") {
		if strings.TrimSpace(e) == "console" {
			return true
		}
	}
	return false
}

// Setup installs the exporters the environment asks for, and the
// Prometheus listener when opts.MetricsAddr is set. With neither it
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
	t := &Telemetry{}
	if !traces && !metrics && opts.MetricsAddr == "" {
		return t, nil
	}
	if opts.Stdio {
		for _, signal := range []string{"TRACES", "METRICS"} {
			if writesStdout(getenv, signal) && wants(getenv, signal) {
				return nil, fmt.Errorf("OTEL_%s_EXPORTER=console writes to stdout, which carries the protocol on the stdio transport: "+
					"send telemetry to a collector (OTEL_EXPORTER_OTLP_ENDPOINT), or serve over HTTP", signal)
			}
		}
	}
	defer func() {
		if err != nil {
			_ = t.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceVersion(opts.ServiceVersion)))
	if err != nil {
		// A schema clash between the SDK's default resource and ours
		// still leaves a usable resource.
		log.Debug("telemetry resource", "err", err)
	}
	if name := getenv("OTEL_SERVICE_NAME"); name == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("flowyprompt")))
	}

	// Exporters and readers not yet handed to a provider are stopped
	// here if Setup fails.
	var exps []sdktrace.SpanExporter
	var readers []sdkmetric.Reader
	defer func() {
		if err != nil {
			stop := context.WithoutCancel(ctx)
			for _, exp := range exps {
				_ = exp.Shutdown(stop)
			}
			for _, r := range readers {
				_ = r.Shutdown(stop)
			}
		}
	}()
	var u unsupported
	var tracer trace.Tracer = tracenoop.NewTracerProvider().Tracer(ScopeName)
	if traces {
		if exps, err = spanExporters(ctx, getenv, &u); err != nil {
			return nil, err
		}
		traces = len(exps) > 0
	}
	if traces {
		// The sampler comes from OTEL_TRACES_SAMPLER (parent-based,
		// always on, by default).
		topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		for _, exp := range exps {
			topts = append(topts, sdktrace.WithBatcher(exp))
		}
		tp := sdktrace.NewTracerProvider(topts...)
		exps = nil // the provider's Shutdown stops them
		t.shutdowns = append(t.shutdowns, tp.Shutdown)
		// Global, so that the GitHub client's spans (package github)
		// reach the same exporter.
		otel.SetTracerProvider(tp)
		tracer = tp.Tracer(ScopeName)
	}

	var meter metric.Meter = metricnoop.NewMeterProvider().Meter(ScopeName)
	if metrics {
		// A reader's listener is stopped by Shutdown, even when the
		// provider never comes to be.
		if readers, err = metricReaders(ctx, getenv, &u, log, &t.shutdowns); err != nil {
			return nil, err
		}
		metrics = len(readers) > 0
	}
	if opts.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(opts.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr %q: %w", opts.MetricsAddr, err)
		}
		if host == "" {
			host = "127.0.0.1"
		}
		r, addr, stop, err := prometheusReader(net.JoinHostPort(host, port), log)
		if err != nil {
			return nil, err
		}
		readers = append(readers, r)
		t.MetricsAddr = addr
		t.shutdowns = append(t.shutdowns, stop)
	}
	u.report(log)
	if len(readers) > 0 {
		mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			mopts = append(mopts, sdkmetric.WithReader(r))
		}
		mp := sdkmetric.NewMeterProvider(mopts...)
		readers = nil // the provider's Shutdown stops them
		t.shutdowns = append(t.shutdowns, mp.Shutdown)
		otel.SetMeterProvider(mp)
		meter = mp.Meter(ScopeName)
	} else if !traces {
		// Every exporter asked for was left out (reported above).
		return t, nil
	}
	obs, err := newObserver(tracer, meter, traces)
	if err != nil {
		return nil, err
	}
	t.Observer = obs
	log.Info("telemetry on", "traces", traces, "metrics", metrics, "prometheus", t.MetricsAddr)
	return t, nil
}

// serveMetrics starts the Prometheus listener. It binds before it
// returns, so a taken port fails serve at once.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (string, func(context.Context) error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return ln.Addr().String(), func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		return nil
	}, nil
}

// propagator reads a request's _meta trace context.
var propagator = propagation.TraceContext{}
