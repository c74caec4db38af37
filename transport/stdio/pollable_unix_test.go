//go:build unix

package stdio_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/flowyprompt/flowyprompt/transport/stdio"
)

// nonblocking reads the flag by fd: os.File.Fd would reset it.
func nonblocking(t *testing.T, fd uintptr) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// TestPollable: a pipe is switched to non-blocking (so reads park on the
// poller) and switched back by restore; data still flows; a regular file is
// left alone.
func TestPollable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Fd makes the read end blocking, which is what a parent process hands
	// a child as stdin.
	fd := r.Fd()
	pr, restore := stdio.Pollable(r)
	if pr == r || !nonblocking(t, fd) {
		t.Fatal("pipe not made pollable")
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, err := pr.Read(buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Fatalf("read %d %v %q", n, err, buf)
	}
	restore()
	if nonblocking(t, fd) {
		t.Fatal("restore left the pipe non-blocking")
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pf, restore := stdio.Pollable(f); pf != f {
		restore()
		t.Fatal("a regular file was changed")
	}
}
