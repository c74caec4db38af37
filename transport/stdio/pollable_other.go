//go:build !unix

package stdio

import "os"

// Pollable returns f unchanged where the trick is not available.
func Pollable(f *os.File) (*os.File, func()) { return f, func() {} }
