package telemetry

import (
	"context"
	"testing"
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
