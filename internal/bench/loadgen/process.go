package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a server started for an HTTP run: the drivers need its
// address, and its PID for CPU and memory.
type Process struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{}
	err    error // from Wait, valid after done
}

// ErrExited is returned by StartProcess when the server exits before it
// listens: typically a server that does not support the transport asked
// for. The error wraps it with the server's last words on stderr.
var ErrExited = errors.New("the server exited before listening")

// StartProcess runs command and waits until addr accepts TCP connections,
// for at most wait. Its stdout and stderr are kept (the last few KB) for
// error messages.
func StartProcess(ctx context.Context, command []string, addr string, wait time.Duration) (*Process, error) {
	if len(command) == 0 {
		return nil, errors.New("start server: empty command")
	}
	cmd := exec.Command(command[0], command[1:]...)
	p := &Process{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, done: make(chan struct{})}
	cmd.Stdout = p.stderr
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", command, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()

	deadline := time.Now().Add(wait)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%w (%v): %s", ErrExited, p.err, bytes.TrimSpace(p.stderr.Bytes()))
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("server did not listen on %s within %s: %w", addr, wait, err)
		}
		select {
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-p.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// PID is the server's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Output is the tail of the server's stdout and stderr.
func (p *Process) Output() string { return string(p.stderr.Bytes()) }

// Stop sends SIGTERM, waits up to five seconds, then kills the server.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago. Another process may take it before the server binds it; on this
// harness's quiet loopback that has not been seen.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
