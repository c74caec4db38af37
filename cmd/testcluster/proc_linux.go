package main

import "syscall"

// childAttrs makes a replica die with this process even when it is killed
// without a chance to end its children, so no test leaves servers behind.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
