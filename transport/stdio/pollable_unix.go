//go:build unix

package stdio

import (
	"os"
	"syscall"
)

// Pollable returns a version of f (stdin or stdout) that Go's network
// poller can wait on, and a function that undoes the change. A read or
// write on a plain pipe blocks its OS thread and the thread's P with it, so
// a worker woken by that goroutine waits for the scheduler to take the P
// back; through the poller the goroutine parks and the worker runs at once.
// Only pipes and sockets are switched: setting O_NONBLOCK on a terminal
// would leak into the shell that shares it.
func Pollable(f *os.File) (*os.File, func()) {
	var st syscall.Stat_t
	fd := int(f.Fd())
	if err := syscall.Fstat(fd, &st); err != nil {
		return f, func() {}
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO, syscall.S_IFSOCK:
	default:
		return f, func() {}
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		return f, func() {}
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return f, func() {}
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	return nf, func() {
		// The flag lives on the shared open file description: put it back
		// for whoever reads or writes it after us.
		_ = syscall.SetNonblock(dup, false)
		nf.Close()
	}
}
