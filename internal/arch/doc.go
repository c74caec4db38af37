// Package arch holds no code: its tests enforce the import rules listed in
// docs/architecture.md (mcp never imports a transport, r3labs/sse or
// go-github; templates never imports mcp; templates and render do no I/O of
// their own, and render uses no unsafe; transports never know templates).
package arch
