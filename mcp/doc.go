// Package mcp is flowyprompt's Model Context Protocol core: the wire
// framing that answers every bad frame instead of dropping the session, the
// lifecycle and version negotiation, one method table, the mapping from
// errors to JSON-RPC codes, and the engine that every transport feeds.
//
// The engine is the "Void Lab" model made concurrent: a transport turns
// bytes into frames and hands them to a Session. A request goes straight to
// an idle worker of a pool that grows under bursts, or waits on one bounded
// input queue once the pool is at its largest; for an InlineSink, requests
// that never wait on the client run on the transport's own goroutine
// instead. Every message a session sends leaves through that session's
// outbox, which hands the transport one batch at a time, never two at once:
// a writer goroutine started while there is something to write does, or,
// for a NonBlockingSink, the goroutine that produced a message. The package
// never imports a transport, r3labs/sse or go-github.
package mcp
