//go:build !desktop

package edition

// Desktop reports whether this is the desktop build.
const Desktop = false
