//go:build linux

package main

// The tests in this file run the built binary and read what it logs on
// stderr: what a person starting flowyprompt, or a client's log window,
// sees.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runBinary runs the built flowyprompt with args and env as its whole
// environment, stdin empty, and returns its stdout, stderr and exit code.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = serverEnv(t, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("flowyprompt %v did not exit within 30s\nstderr: %s", args, errOut.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestBinaryServingMeansServing: "serving" is logged only once the HTTP
// listener is up; an address without a host, or a port another process
// holds, ends serve with the error, a non-zero status and no such line.
func TestBinaryServingMeansServing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name    string
		addr    string
		wantErr []string
	}{
		{name: "port without a host", addr: "3917", wantErr: []string{`listen address "3917"`, "HOST:PORT"}},
		{name: "port taken", addr: taken.Addr().String(), wantErr: []string{"address already in use", "how to fix"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runBinary(t, nil, "serve", "--transport", "http", "--addr", tt.addr)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero\nstderr: %s", stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "serving") {
				t.Errorf("stderr says serving though nothing listens:\n%s", stderr)
			}
		})
	}

	// A server that does listen says so, after the listener is up.
	s := startHTTP(t, 0)
	waitFor(t, 5*time.Second, "the serving line", func() (bool, string) {
		out := s.Output()
		return strings.Contains(out, `msg="flowyprompt serving"`), out
	})
}
