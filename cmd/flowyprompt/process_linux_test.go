package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// process is a server under test started as a process of its own.
type process struct {
	cmd   *exec.Cmd
	out   *tail
	lines *expecter // what tests wait to see in its output
	done  chan struct{}
	err   error // from Wait, valid once done is closed
}

// startProcess runs `flowyprompt serve --transport http` as command and
// waits, for at most wait, until it says that it listens on addr: it prints
// its URL, http://addr, once its listener is open. Its stdout and stderr
// are kept (their last few KB) for failure messages.
func startProcess(command []string, addr string, wait time.Duration) (*process, error) {
	cmd := exec.Command(command[0], command[1:]...)
	p := &process{cmd: cmd, out: &tail{max: 8 << 10}, lines: &expecter{}, done: make(chan struct{})}
	listening := p.expect("http://" + addr)
	out := io.MultiWriter(p.out, p.lines)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", command, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	select {
	case <-listening:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("the server exited before listening (%v): %s", p.err, bytes.TrimSpace(p.out.Bytes()))
	case <-time.After(wait):
		p.Stop()
		return nil, fmt.Errorf("the server did not say it listens on %s within %s: %s", addr, wait, bytes.TrimSpace(p.out.Bytes()))
	}
}

// expect returns a channel closed once the server's output from now on
// contains text: a test registers before it provokes what the server
// logs, then waits on the channel.
func (p *process) expect(text string) <-chan struct{} { return p.lines.expect(text) }

// PID is the server's process id.
func (p *process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the server has exited: a test that provokes the
// server can tell a crash from a refusal.
func (p *process) Exited() <-chan struct{} { return p.done }

// ExitErr waits for the server to exit and returns how it did.
func (p *process) ExitErr() error {
	<-p.done
	return p.err
}

// Output is the tail of the server's stdout and stderr.
func (p *process) Output() string { return string(p.out.Bytes()) }

// stopBound is how long Stop waits for a server to exit after SIGTERM
// before it kills it: above the server's own bounds on its shutdown
// (shutdownGrace for its requests, then 5 s each to flush telemetry and
// audit lines), which a loaded machine may use up, so that only a hung
// server is killed, and a test that asks for a clean exit gets one.
const stopBound = 30 * time.Second

// Stop sends SIGTERM, waits up to stopBound, then kills the server.
func (p *process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopBound):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// memory is a process's resident set now and at its peak, in bytes.
type memory struct{ RSS, HWM int64 }

// readMemory reads VmRSS and VmHWM from /proc/PID/status.
func readMemory(pid int) (memory, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memory{}, fmt.Errorf("read process status: %w", err)
	}
	kb := func(field string) (int64, error) {
		i := bytes.Index(status, []byte(field))
		if i < 0 {
			return 0, fmt.Errorf("no %s in process status", field)
		}
		f := bytes.Fields(status[i+len(field):])
		if len(f) == 0 {
			return 0, errors.New("malformed process status")
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n << 10, err
	}
	rss, err1 := kb("VmRSS:")
	hwm, err2 := kb("VmHWM:")
	return memory{RSS: rss, HWM: hwm}, errors.Join(err1, err2)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
	// wrote, when set, is closed at the next write (waitOutput).
	wrote chan struct{}
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	if t.wrote != nil {
		close(t.wrote)
		t.wrote = nil
	}
	return len(p), nil
}

// waitOutput waits, for at most wait, until the server's output holds s:
// a line it logs once something has happened. It reports whether it did.
func (p *process) waitOutput(s string, wait time.Duration) bool {
	timeout := time.After(wait)
	for {
		p.out.mu.Lock()
		if bytes.Contains(p.out.b, []byte(s)) {
			p.out.mu.Unlock()
			return true
		}
		if p.out.wrote == nil {
			p.out.wrote = make(chan struct{})
		}
		wrote := p.out.wrote
		p.out.mu.Unlock()
		select {
		case <-wrote:
		case <-p.done:
			return bytes.Contains(p.out.Bytes(), []byte(s))
		case <-timeout:
			return false
		}
	}
}

func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
