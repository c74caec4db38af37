//go:build !desktop

package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
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

// TestMetricsListenerChecksHost: the Prometheus listener answers the Host
// values the MCP listener would on its port, so that a web page whose name
// is rebound to 127.0.0.1 cannot read the metrics; a refusal says what to
// do instead.
func TestMetricsListenerChecksHost(t *testing.T) {
	tel, err := Setup(context.Background(), Options{MetricsAddr: "127.0.0.1:0", AllowedHosts: []string{"metrics.internal"}, Getenv: envOf()})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	_, port, _ := net.SplitHostPort(tel.MetricsAddr)
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"metrics.internal", http.StatusOK},
		{"metrics.internal:9464", http.StatusOK},
		{"evil.example.com:" + port, http.StatusForbidden},
		{"evil.example.com", http.StatusForbidden},
		{"localhost:1", http.StatusForbidden},
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range tests {
		req, err := http.NewRequest(http.MethodGet, "http://"+tel.MetricsAddr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("Host %s: %d %s, want %d", tc.host, res.StatusCode, body, tc.want)
		}
		if tc.want == http.StatusForbidden && (!strings.Contains(string(body), "--allowed-hosts") || !strings.Contains(string(body), "DNS rebinding")) {
			t.Errorf("Host %s: the refusal says %q; want why and how", tc.host, body)
		}
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
