//go:build !desktop

package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/otlptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestExportersOf: OTEL_<SIGNAL>_EXPORTER is a list of the exporters the
// specification names for the signal; anything else is refused, naming
// what is accepted.
func TestExportersOf(t *testing.T) {
	tests := []struct {
		signal, value string
		want          []string
		err           string
	}{
		{signal: "TRACES", want: []string{"otlp"}},
		{signal: "TRACES", value: "none", want: nil},
		{signal: "TRACES", value: "otlp,console", want: []string{"otlp", "console"}},
		{signal: "TRACES", value: " console , otlp,console", want: []string{"console", "otlp"}},
		{signal: "METRICS", value: "prometheus", want: []string{"prometheus"}},
		{signal: "TRACES", value: "prometheus", err: `unknown exporter "prometheus"; use one or more of otlp, console, none`},
		{signal: "METRICS", value: "otlp,jaeger", err: `OTEL_METRICS_EXPORTER=otlp,jaeger: unknown exporter "jaeger"; use one or more of otlp, console, prometheus, none`},
	}
	for _, tt := range tests {
		t.Run(tt.signal+"="+tt.value, func(t *testing.T) {
			got, err := exportersOf(envOf("OTEL_"+tt.signal+"_EXPORTER", tt.value), tt.signal)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("%q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestOTLPProtocol: the signal's own variable wins over the general one;
// neither means http/protobuf.
func TestOTLPProtocol(t *testing.T) {
	tests := []struct {
		env           []string
		proto, source string
	}{
		{proto: "http/protobuf"},
		{env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, proto: "grpc", source: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
			proto: "http/protobuf", source: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", " grpc "}, proto: "grpc", source: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"}, proto: "http/protobuf"},
	}
	for _, tt := range tests {
		if proto, source := otlpProtocol(envOf(tt.env...), "TRACES"); proto != tt.proto || source != tt.source {
			t.Errorf("%v: %q from %q, want %q from %q", tt.env, proto, source, tt.proto, tt.source)
		}
	}
}

// errorRecords are the ERROR records of a JSON log.
func errorRecords(t *testing.T, log []byte) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, l := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["level"] == "ERROR" {
			m := map[string]string{}
			for k, v := range rec {
				m[k] = fmt.Sprint(v)
			}
			out = append(out, m)
		}
	}
	return out
}

// request records one tools/list through the observer, as the engine
// does.
func request(obs mcp.Observer) {
	_, end := obs.StartRequest(context.Background(), &mcp.RequestInfo{Method: "tools/list", ID: "1", ProtocolVersion: "2025-06-18"})
	end(mcp.Outcome{})
}

// TestSetupGRPC: OTLP over gRPC is not in this build. Asking for it
// leaves that signal's OTLP exporter out, says so in one error line that
// names the setting and the fix, and the server runs on: the other
// signal is still exported, and with neither there is no hook at all.
// What the receiver holds after Shutdown, which flushes, proves what was
// and was not sent.
func TestSetupGRPC(t *testing.T) {
	tests := []struct {
		name                  string
		env                   []string
		setting, notExported  string
		wantSpans, wantPoints bool
	}{
		{name: "both", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
			setting: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", notExported: "traces, metrics"},
		{name: "traces only", env: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"},
			setting: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc", notExported: "traces", wantPoints: true},
		{name: "metrics only, other variable wins for traces",
			env:     []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
			setting: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", notExported: "metrics", wantSpans: true},
		{name: "http/json", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
			setting: "OTEL_EXPORTER_OTLP_PROTOCOL=http/json", notExported: "traces, metrics"},
		{name: "http/protobuf", env: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}, wantSpans: true, wantPoints: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recv := otlptest.New()
			defer recv.Close()
			// The OTLP exporters read the process environment.
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
			var log bytes.Buffer
			tel, err := Setup(context.Background(), Options{
				Getenv: envOf(append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL}, tt.env...)...),
				Logger: slog.New(slog.NewJSONHandler(&log, nil)),
			})
			if err != nil {
				t.Fatalf("Setup refused: %v", err)
			}
			if (tel.Observer != nil) != (tt.wantSpans || tt.wantPoints) {
				t.Errorf("observer %v, want one: %v", tel.Observer, tt.wantSpans || tt.wantPoints)
			}
			if tel.Observer != nil {
				request(tel.Observer)
			}
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			recs := errorRecords(t, log.Bytes())
			switch {
			case tt.setting == "":
				if len(recs) != 0 {
					t.Errorf("errors logged: %v", recs)
				}
			case len(recs) != 1:
				t.Errorf("%d error lines, want one: %v", len(recs), recs)
			default:
				r := recs[0]
				if r["setting"] != tt.setting || r["not_exported"] != tt.notExported || !strings.Contains(r["msg"], "http/protobuf") ||
					!strings.Contains(r["fix"], "unset "+strings.Split(tt.setting, "=")[0]) || !strings.Contains(r["fix"], "4318") {
					t.Errorf("want the line to name %s, %s, the supported protocol and the fix; got %v", tt.setting, tt.notExported, r)
				}
			}
			if got := len(recv.Spans()) > 0; got != tt.wantSpans {
				t.Errorf("spans exported %v, want %v", got, tt.wantSpans)
			}
			if got := len(recv.Points()) > 0; got != tt.wantPoints {
				t.Errorf("metrics exported %v, want %v", got, tt.wantPoints)
			}
		})
	}
}

// TestSetupPrometheusExporter: OTEL_METRICS_EXPORTER=prometheus starts the
// listener the specification describes (OTEL_EXPORTER_PROMETHEUS_HOST and
// _PORT), serving the histograms; Shutdown closes it.
func TestSetupPrometheusExporter(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host, port, _ := net.SplitHostPort(addr)
	tel, err := Setup(context.Background(), Options{Getenv: envOf("OTEL_METRICS_EXPORTER", "prometheus",
		"OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_PROMETHEUS_HOST", host, "OTEL_EXPORTER_PROMETHEUS_PORT", port)})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Observer == nil {
		t.Fatal("no hook")
	}
	request(tel.Observer)
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "mcp_server_operation_duration_seconds_count{") || !strings.Contains(string(body), `mcp_method_name="tools/list"`) {
		t.Errorf("/metrics has no operation histogram:\n%s", body)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the listener still answers after Shutdown")
	}
}
