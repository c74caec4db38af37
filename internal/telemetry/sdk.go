//go:build !desktop

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/hostguard"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// install builds what Setup was asked for, traces, metrics or the
// Prometheus listener (at least one of them), with the OpenTelemetry SDK.
func install(ctx context.Context, opts Options, getenv func(string) string, log *slog.Logger, traces, metrics bool) (_ *Telemetry, err error) {
	t := &Telemetry{}
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
		if readers, err = metricReaders(ctx, getenv, &u, log, opts.AllowedHosts, &t.shutdowns); err != nil {
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
		r, addr, stop, err := prometheusReader(net.JoinHostPort(host, port), opts.AllowedHosts, log)
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
// returns, so a taken port fails serve at once. It answers the Host
// values the MCP listener would on its port (hostguard): the loopback
// names, its own address, and allowedHosts.
func serveMetrics(addr string, reg *prometheus.Registry, allowedHosts []string, log *slog.Logger) (string, func(context.Context) error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics listener: %w", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hosts := hostguard.New(hostguard.Config{ListenHost: host, Port: port, Allowed: allowedHosts})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	srv := &http.Server{Handler: hostChecked(hosts, port, mux, log), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
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

// hostChecked refuses, with 403 and what to do instead, a request whose
// Host is not on hosts: a page whose name is rebound to this machine
// reads nothing.
func hostChecked(hosts *hostguard.Hosts, port string, next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r.Host) {
			log.Warn("refused a metrics request for a foreign Host", "host", r.Host)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "Host %q is not allowed: requests must name this listener by an allowed host, which protects it from DNS rebinding by web pages; "+
				"scrape http://127.0.0.1:%s/metrics, or add the name with --allowed-hosts\n", r.Host, port)
			return
		}
		next.ServeHTTP(w, r)
	})
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
