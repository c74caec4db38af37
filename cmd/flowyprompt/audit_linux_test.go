//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinaryAuditLinesAtExit: the audit log writes its lines in batches,
// off the requests' path; a clean exit (the end of stdin, SIGTERM,
// SIGINT) still writes every line, in the order the requests ended,
// before the process ends. The server is stopped as soon as the last
// answer arrives, while the last batch is still waiting to be written.
func TestBinaryAuditLinesAtExit(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		name string
		stop func(cmd *exec.Cmd, stdin io.Closer) error
	}{
		{"end of stdin", func(_ *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
		{"SIGTERM", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(cmd *exec.Cmd, _ io.Closer) error { return cmd.Process.Signal(syscall.SIGINT) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, "serve", "--log-format", "json")
			cmd.Env = serverEnv(t)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			answers := bufio.NewScanner(stdout)
			answers.Buffer(nil, 1<<20)
			t.Cleanup(func() {
				cmd.Process.Kill()
				stdin.Close()
			})
			send := func(msg string) {
				t.Helper()
				if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			answer := func(id int) {
				t.Helper()
				if !answers.Scan() {
					t.Fatalf("no answer %d: %v; stderr: %s", id, answers.Err(), stderr.String())
				}
				var a struct{ ID json.RawMessage }
				if err := json.Unmarshal(answers.Bytes(), &a); err != nil || string(a.ID) != strconv.Itoa(id) {
					t.Fatalf("want answer %d, got %.200s (%v)", id, answers.Text(), err)
				}
			}
			send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"audit-test","version":"1"}}}`)
			answer(0)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			// One at a time, so the order of the lines is the order sent.
			const n = 100
			for id := 1; id <= n; id++ {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"-a\n+b\n"}}}`, id))
				answer(id)
			}
			if err := tt.stop(cmd, stdin); err != nil {
				t.Fatal(err)
			}
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after %s; stderr: %s", tt.name, stderr.String())
			}
			var ids []string
			for line := range strings.Lines(stderr.String()) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("stderr line %q: %v", line, err)
				}
				if m["msg"] == "prompt used" {
					ids = append(ids, fmt.Sprint(m["request_id"]))
				}
			}
			if len(ids) != n {
				t.Fatalf("%d audit lines, want %d; stderr: %s", len(ids), n, stderr.String())
			}
			for i, id := range ids {
				if id != strconv.Itoa(i+1) {
					t.Fatalf("audit line %d is request %s: %v", i, id, ids)
				}
			}
		})
	}
}
