// Package arch holds no code: its test enforces the import rules of
// docs/architecture.md (mcp never imports a transport, r3labs/sse or
// go-github; templates never imports mcp; render does no I/O).
package arch
