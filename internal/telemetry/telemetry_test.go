package telemetry

import (
	"context"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestWants: only the standard variables turn a signal on.
func TestWants(t *testing.T) {
	tests := []struct {
		name            string
		env             []string
		traces, metrics bool
	}{
		{name: "nothing set"},
		{name: "service name alone", env: []string{"OTEL_SERVICE_NAME", "x"}},
		{name: "endpoint", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, traces: true, metrics: true},
		{name: "traces endpoint", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"}, traces: true},
		{name: "metrics endpoint", env: []string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://c:4318/v1/metrics"}, metrics: true},
		{name: "exporter named", env: []string{"OTEL_TRACES_EXPORTER", "otlp"}, traces: true},
		{name: "endpoint, metrics none", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "OTEL_METRICS_EXPORTER", "none"}, traces: true},
		{name: "sdk disabled", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "OTEL_SDK_DISABLED", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := envOf(tt.env...)
			if got := wants(env, "TRACES"); got != tt.traces {
				t.Errorf("traces %v, want %v", got, tt.traces)
			}
			if got := wants(env, "METRICS"); got != tt.metrics {
				t.Errorf("metrics %v, want %v", got, tt.metrics)
			}
		})
	}
}

// TestSetupOff: with nothing asked for, nothing is installed: no hook.
func TestSetupOff(t *testing.T) {
	tel, err := Setup(context.Background(), Options{Stdio: true, Getenv: envOf("OTEL_SERVICE_NAME", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Observer != nil || tel.MetricsAddr != "" {
		t.Errorf("installed %+v with no exporter asked for", tel)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestSetupRefusesStdout: over stdio, an exporter writing to stdout would
// corrupt the protocol.
func TestSetupRefusesStdout(t *testing.T) {
	for _, signal := range []string{"TRACES", "METRICS"} {
		_, err := Setup(context.Background(), Options{Stdio: true, Getenv: envOf("OTEL_"+signal+"_EXPORTER", "otlp,console")})
		if err == nil || !strings.Contains(err.Error(), "OTEL_"+signal+"_EXPORTER=console") {
			t.Errorf("%s: err %v, want a refusal naming the variable", signal, err)
		}
	}
}

// TestMetricsListenerLoopback: an address without a host binds loopback.
func TestMetricsListenerLoopback(t *testing.T) {
	tel, err := Setup(context.Background(), Options{MetricsAddr: ":0", Getenv: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if !strings.HasPrefix(tel.MetricsAddr, "127.0.0.1:") || tel.Observer == nil {
		t.Errorf("listener %q, observer %v: want loopback and a hook", tel.MetricsAddr, tel.Observer)
	}
}

// TestSpanName: prompts and tools name their span; a resource URI never
// does.
func TestSpanName(t *testing.T) {
	tests := []struct {
		info mcp.RequestInfo
		want string
	}{
		{mcp.RequestInfo{Method: "prompts/get", Target: "Commit_Message"}, "prompts/get Commit_Message"},
		{mcp.RequestInfo{Method: "tools/call", Target: "flowyprompt_render_template"}, "tools/call flowyprompt_render_template"},
		{mcp.RequestInfo{Method: "resources/read", Target: "template://x"}, "resources/read"},
		{mcp.RequestInfo{Method: "tools/list"}, "tools/list"},
	}
	for _, tt := range tests {
		if got := SpanName(&tt.info); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.info, got, tt.want)
		}
	}
}
