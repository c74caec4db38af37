// Package arch holds no code: its test enforces the import rules listed in
// docs/architecture.md (mcp never imports a transport, r3labs/sse or
// go-github; templates never imports mcp; render does no I/O; transports
// never know templates).
package arch
