//go:build unix

package folder

import (
	"os"
	"syscall"
)

// openFlags open a file for reading without blocking: opening a named pipe
// blocks until something writes to it, and a pipe named *.json in the
// folder must not hold a load forever. (It is then refused as no regular
// file.) Reads of regular files ignore the flag.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
