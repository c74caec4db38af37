package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryDesktopBuild: the desktop build (go build -tags desktop, the
// Claude Desktop bundle's) says what it is, refuses the team-server
// settings at start with what, why and how, reports OTEL_* exporters in
// one error line and serves on.
func TestBinaryDesktopBuild(t *testing.T) {
	bin := binaryTagged(t, "desktop")
	const fix = "run the full binary: make install, or a release archive"
	tests := []struct {
		name   string
		args   []string
		env    []string
		stdin  string
		code   int
		stdout string   // in stdout
		stderr []string // in stderr
	}{
		{name: "version", args: []string{"version"}, stdout: "(desktop build, commit "},
		{name: "--nats", args: []string{"serve", "--nats", "nats://127.0.0.1:4222"}, code: 2,
			stderr: []string{"--nats (NATS_URL): this is the Claude Desktop bundle's build, which has no cluster support; replicas " + fix}},
		{name: "NATS_URL", args: []string{"serve", "--transport", "http", "--addr", "127.0.0.1:0"}, env: []string{"NATS_URL=nats://127.0.0.1:4222"}, code: 2,
			stderr: []string{"--nats (NATS_URL): this is the Claude Desktop bundle's build"}},
		{name: "--metrics-addr", args: []string{"serve", "--metrics-addr", "127.0.0.1:0"}, code: 2,
			stderr: []string{"--metrics-addr (FLOWYPROMPT_METRICS_ADDR): this is the Claude Desktop bundle's build, which has no Prometheus endpoint; servers scraped by Prometheus " + fix}},
		{name: "FLOWYPROMPT_METRICS_ADDR", args: []string{"serve"}, env: []string{"FLOWYPROMPT_METRICS_ADDR=127.0.0.1:0"}, code: 2,
			stderr: []string{"--metrics-addr (FLOWYPROMPT_METRICS_ADDR): this is the Claude Desktop bundle's build"}},
		{name: "OTEL_* serves on", args: []string{"serve"}, env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_METRICS_EXPORTER=prometheus"},
			stdin: initializeMsg + "\n", stdout: `"serverInfo":{"name":"flowyprompt"`,
			stderr: []string{"level=ERROR", "OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT: this is the Claude Desktop bundle's build, which has no OpenTelemetry export; servers that export telemetry " + fix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = serverEnv(t, tt.env...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			switch {
			case tt.code == 0 && err != nil:
				t.Fatalf("%v\n%s", err, stderr.String())
			case tt.code != 0 && (!errors.As(err, &ee) || ee.ExitCode() != tt.code):
				t.Fatalf("err %v, want exit status %d\n%s", err, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			for _, want := range tt.stderr {
				if n := strings.Count(stderr.String(), want); n != 1 {
					t.Errorf("stderr has %q %d times, want once:\n%s", want, n, stderr.String())
				}
			}
		})
	}
}
