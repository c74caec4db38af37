//go:build !desktop

package telemetry

import (
	"context"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
)

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
