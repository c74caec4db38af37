//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/internal/otlptest"
)

// The trace context a client sends in params._meta, and a value no log
// line, span or metric may ever hold.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	traceparent   = "00-" + clientTraceID + "-" + clientSpanID + "-01"
	secretArg     = "zebra-7c1f-never-logged"
)

// otelEnv is the whole telemetry configuration a user gives: an endpoint
// and a service name.
func otelEnv(recv *otlptest.Receiver, level string) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=flowyprompt-test", "LOG_LEVEL=" + level}
}

// wantSpan is a span the receiver must hold, by name, with attributes
// (a value of "*" only needs the key).
type wantSpan struct {
	name      string
	attrs     map[string]string
	errorType string
	parent    bool // the client's traceparent is its parent
}

func checkSpans(t *testing.T, recv *otlptest.Receiver, transport string, want []wantSpan) {
	t.Helper()
	spans := recv.Spans()
	for _, w := range want {
		var found *otlptest.Span
		for i := range spans {
			s := &spans[i]
			if s.Name != w.name || s.Attrs["jsonrpc.request.id"] != w.attrs["jsonrpc.request.id"] {
				continue
			}
			found = s
		}
		if found == nil {
			t.Errorf("no span %q (id %s); got %v", w.name, w.attrs["jsonrpc.request.id"], spanNames(spans))
			continue
		}
		if found.Kind != "SPAN_KIND_SERVER" || found.Service != "flowyprompt-test" {
			t.Errorf("span %q: kind %s, service %q", w.name, found.Kind, found.Service)
		}
		all := map[string]string{"network.transport": transport}
		for k, v := range w.attrs {
			all[k] = v
		}
		for k, v := range all {
			got, ok := found.Attrs[k]
			if !ok || (v != "*" && got != v) {
				t.Errorf("span %q: %s = %q (present %v), want %q; attributes %v", w.name, k, got, ok, v, found.Attrs)
			}
		}
		if got := found.Attrs["error.type"]; got != w.errorType || found.StatusError != (w.errorType != "") {
			t.Errorf("span %q: error.type %q, error status %v; want %q", w.name, got, found.StatusError, w.errorType)
		}
		if w.parent && (found.TraceID != clientTraceID || found.ParentSpanID != clientSpanID) {
			t.Errorf("span %q: trace %s parent %s, want the client's %s / %s", w.name, found.TraceID, found.ParentSpanID, clientTraceID, clientSpanID)
		}
		if !w.parent && found.TraceID == clientTraceID {
			t.Errorf("span %q joined the client's trace without a traceparent", w.name)
		}
	}
}

func spanNames(spans []otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"#"+s.Attrs["jsonrpc.request.id"])
	}
	return out
}

// checkMetrics asserts the two histograms were exported with their
// attributes.
func checkMetrics(t *testing.T, recv *otlptest.Receiver, transport string) {
	t.Helper()
	var op, okPrompt, failed, session bool
	for _, p := range recv.Points() {
		if p.Unit != "s" || p.Service != "flowyprompt-test" {
			t.Errorf("%s: unit %q, service %q", p.Metric, p.Unit, p.Service)
		}
		switch p.Metric {
		case "mcp.server.operation.duration":
			op = true
			if p.Attrs["network.transport"] != transport || p.Attrs["mcp.method.name"] == "" || p.Attrs["mcp.protocol.version"] == "" {
				t.Errorf("operation point without its attributes: %v", p.Attrs)
			}
			if p.Attrs["mcp.method.name"] == "prompts/get" && p.Attrs["gen_ai.prompt.name"] == "Commit_Message" && p.Attrs["error.type"] == "" {
				okPrompt = true
			}
			if p.Attrs["error.type"] == "-32602" {
				failed = true
				if _, named := p.Attrs["gen_ai.prompt.name"]; named {
					t.Errorf("a failed request's made-up name became a series: %v", p.Attrs)
				}
			}
		case "mcp.server.session.duration":
			session = true
			if p.Attrs["network.transport"] != transport || p.Attrs["mcp.protocol.version"] != "2025-06-18" || p.Count != 1 {
				t.Errorf("session point: %v, count %d", p.Attrs, p.Count)
			}
		}
	}
	if !op || !okPrompt || !failed || !session {
		t.Errorf("metrics: operation %v (prompt ok %v, failed %v), session %v; points %v", op, okPrompt, failed, session, recv.Points())
	}
}

// checkAudit asserts the audit lines and that the secret argument
// appears nowhere in the server's output.
func checkAudit(t *testing.T, stderr string, era string) {
	t.Helper()
	if strings.Contains(stderr, secretArg) {
		t.Errorf("an argument value reached the log:\n%s", stderr)
	}
	var prompt, tool bool
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.Contains(line, `msg="prompt used"`) && strings.Contains(line, "prompt=Commit_Message") && strings.Contains(line, "era="+era):
			prompt = true
			for _, f := range []string{"template=Commit_Message", "template_version=1.0.0", "source=embedded",
				"client_name=", "client_version=", "protocol_version=", "request_id=", "duration=", "outcome=ok"} {
				if !strings.Contains(line, f) {
					t.Errorf("audit line without %s: %s", f, line)
				}
			}
		case strings.Contains(line, `msg="tool used"`) && strings.Contains(line, "tool=flowyprompt_render_template") && !strings.Contains(line, "outcome=tool_error"):
			tool = true
			if !strings.Contains(line, "template=Commit_Message") || !strings.Contains(line, "outcome=ok") {
				t.Errorf("tool audit line: %s", line)
			}
		}
	}
	if !prompt || !tool {
		t.Errorf("audit lines: prompt %v, tool %v:\n%s", prompt, tool, stderr)
	}
	if !strings.Contains(stderr, `msg="prompt used" prompt=Nope`) || !strings.Contains(stderr, "error_code=-32602") {
		t.Errorf("no audit line for the failed prompts/get:\n%s", stderr)
	}
}

const meta2026 = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"modern-client","version":"2"}`

// TestBinaryTelemetryStdio: with only an OTLP endpoint and a service name
// set, a stdio server exports a span per request and both histograms, and
// flushes them when stdin closes.
func TestBinaryTelemetryStdio(t *testing.T) {
	recv := otlptest.New()
	defer recv.Close()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = serverEnv(t, otelEnv(recv, "debug")...)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		initializeMsg,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"` + secretArg + `"},"_meta":{"traceparent":"` + traceparent + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"Nope"}}`,
		`{"jsonrpc":"2.0","id":"t4","method":"tools/call","params":{"name":"flowyprompt_render_template","arguments":{"name":"Commit_Message","arguments":{"diff":"` + secretArg + `"}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"` + secretArg + `"},"_meta":{` + meta2026 + `,"traceparent":"` + traceparent + `"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"flowyprompt_render_template","arguments":{"name":"Nope"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"template://Commit_Message"}}`,
	}, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 8 {
		t.Fatalf("%d answers, want 8:\n%s", n, stdout.String())
	}
	checkSpans(t, recv, "pipe", []wantSpan{
		{name: "prompts/get Commit_Message", parent: true, attrs: map[string]string{"jsonrpc.request.id": "2",
			"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "Commit_Message", "mcp.protocol.version": "2025-06-18", "mcp.session.id": "*"}},
		{name: "prompts/get Nope", errorType: "-32602", attrs: map[string]string{"jsonrpc.request.id": "3",
			"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "Nope", "rpc.response.status_code": "-32602"}},
		{name: "tools/call flowyprompt_render_template", attrs: map[string]string{"jsonrpc.request.id": "t4",
			"mcp.method.name": "tools/call", "gen_ai.tool.name": "flowyprompt_render_template", "gen_ai.operation.name": "execute_tool"}},
		{name: "prompts/get Commit_Message", parent: true, attrs: map[string]string{"jsonrpc.request.id": "5",
			"mcp.protocol.version": "2026-07-28"}},
		{name: "tools/list", attrs: map[string]string{"jsonrpc.request.id": "6", "mcp.method.name": "tools/list"}},
		{name: "tools/call flowyprompt_render_template", errorType: "tool_error", attrs: map[string]string{"jsonrpc.request.id": "7"}},
		{name: "resources/read", attrs: map[string]string{"jsonrpc.request.id": "8", "mcp.resource.uri": "template://Commit_Message"}},
	})
	for _, s := range recv.Spans() {
		if s.Attrs["jsonrpc.request.id"] == "5" {
			if _, ok := s.Attrs["mcp.session.id"]; ok {
				t.Errorf("a 2026 request has no session, its span says %v", s.Attrs)
			}
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secretArg) {
				t.Errorf("span %q attribute %s holds an argument value", s.Name, k)
			}
		}
	}
	checkMetrics(t, recv, "pipe")
	checkAudit(t, stderr.String(), "2025")
	if !strings.Contains(stderr.String(), "request_id=7") || !strings.Contains(stderr.String(), "outcome=tool_error") {
		t.Errorf("no audit line with outcome=tool_error:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "client_name=modern-client client_version=2 era=2026") {
		t.Errorf("no audit line for the 2026 request with its _meta clientInfo:\n%s", stderr.String())
	}
}

// TestBinaryTelemetryStdioRefusesConsole: a console exporter would write
// into the protocol's stdout; serve refuses it before it reads stdin.
func TestBinaryTelemetryStdioRefusesConsole(t *testing.T) {
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = serverEnv(t, "OTEL_TRACES_EXPORTER=console")
	cmd.Stdin = strings.NewReader(initializeMsg + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil || stdout.Len() != 0 || !strings.Contains(stderr.String(), "OTEL_TRACES_EXPORTER=console") {
		t.Fatalf("err %v, stdout %q, stderr %q; want a refusal on stderr and nothing on stdout", err, stdout.String(), stderr.String())
	}
}

// TestBinaryTelemetryGRPCNotSupported: this build speaks OTLP over HTTP
// only. A user whose environment asks for gRPC gets one error line naming
// the setting and the fix, and the prompts all the same; the collector
// gets nothing, which the receiver shows once the server has exited (its
// exit flushes whatever exporter there is).
func TestBinaryTelemetryGRPCNotSupported(t *testing.T) {
	recv := otlptest.New()
	defer recv.Close()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = serverEnv(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	cmd.Stdin = strings.NewReader(initializeMsg + "\n" + `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"x"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 || !strings.Contains(stdout.String(), `"id":2,"result"`) {
		t.Errorf("answers %q, want initialize and the prompt", stdout.String())
	}
	var errs []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			errs = append(errs, line)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") || !strings.Contains(errs[0], "http/protobuf") ||
		!strings.Contains(errs[0], "4318") {
		t.Errorf("want one error line naming the setting, http/protobuf and the OTLP/HTTP port; got %q", errs)
	}
	if n := recv.Exports(); n != 0 {
		t.Errorf("the collector got %d exports", n)
	}
}

// postMCP sends one message to /mcp with headers and returns the body.
func postMCP(t *testing.T, s *httpServer, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		s.fatalf(t, "POST /mcp: %v", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(data)
}

// TestBinaryTelemetryHTTP: the same over HTTP, a 2025 session and a 2026
// request, flushed on SIGTERM; and the Prometheus listener of
// FLOWYPROMPT_METRICS_ADDR serves the same histogram.
func TestBinaryTelemetryHTTP(t *testing.T) {
	recv := otlptest.New()
	defer recv.Close()
	metricsAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// Info, not debug: the process keeps only the tail of its output; the
	// stdio test holds the whole of a debug log to the secret.
	s := startHTTP(t, 0, append(otelEnv(recv, "info"), "FLOWYPROMPT_METRICS_ADDR="+metricsAddr)...)
	res, body := postMCP(t, s, initializeMsg)
	sid := res.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %s %s", res.Status, body)
	}
	hdr := []string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-06-18"}
	postMCP(t, s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"` + secretArg + `"},"_meta":{"traceparent":"` + traceparent + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"Nope"}}`,
		`{"jsonrpc":"2.0","id":"t4","method":"tools/call","params":{"name":"flowyprompt_render_template","arguments":{"name":"Commit_Message","arguments":{"diff":"` + secretArg + `"}}}}`,
	} {
		if res, body := postMCP(t, s, msg, hdr...); res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", msg, res.Status, body)
		}
	}
	res, body = postMCP(t, s, `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"`+secretArg+`"},"_meta":{`+meta2026+`,"traceparent":"`+traceparent+`"}}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/get", "Mcp-Name", "Commit_Message")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("2026 prompts/get: %s %s", res.Status, body)
	}

	scrape := promScrape(t, metricsAddr)
	if !strings.Contains(scrape, "mcp_server_operation_duration") || !strings.Contains(scrape, `mcp_method_name="prompts/get"`) {
		t.Errorf("/metrics has no mcp_server_operation_duration series for prompts/get:\n%s", scrape)
	}
	// A page whose name is rebound to 127.0.0.1 reads nothing.
	req, err := http.NewRequest(http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example.com:" + metricsAddr[strings.LastIndexByte(metricsAddr, ':')+1:]
	foreign, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics for a foreign Host: %v", err)
	}
	foreign.Body.Close()
	if foreign.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics for a foreign Host: %s, want 403", foreign.Status)
	}

	s.Stop() // SIGTERM: the spans and metrics must be flushed before exit
	if err := s.ExitErr(); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.Output())
	}
	checkSpans(t, recv, "tcp", []wantSpan{
		{name: "prompts/get Commit_Message", parent: true, attrs: map[string]string{"jsonrpc.request.id": "2",
			"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "Commit_Message", "mcp.protocol.version": "2025-06-18", "mcp.session.id": logid.Digest(sid)}},
		{name: "prompts/get Nope", errorType: "-32602", attrs: map[string]string{"jsonrpc.request.id": "3"}},
		{name: "tools/call flowyprompt_render_template", attrs: map[string]string{"jsonrpc.request.id": "t4", "gen_ai.tool.name": "flowyprompt_render_template"}},
		{name: "prompts/get Commit_Message", parent: true, attrs: map[string]string{"jsonrpc.request.id": "5", "mcp.protocol.version": "2026-07-28"}},
	})
	// The id acts in the session: a trace names it by its digest only.
	for _, s := range recv.Spans() {
		for k, v := range s.Attrs {
			if strings.Contains(v, sid) {
				t.Errorf("span %q attribute %s holds the session id", s.Name, k)
			}
		}
	}
	checkMetrics(t, recv, "tcp")
	checkAudit(t, s.Output(), "2025")
}

// promScrape reads the Prometheus listener's /metrics.
func promScrape(t *testing.T, addr string) string {
	t.Helper()
	res, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer res.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fmt.Fprintln(&b, sc.Text())
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	return b.String()
}
