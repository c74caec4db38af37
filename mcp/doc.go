// Package mcp is flowyprompt's Model Context Protocol core: the wire
// framing that answers every bad frame instead of dropping the session, the
// lifecycle and version negotiation, one method table, the mapping from
// errors to JSON-RPC codes, and the engine that every transport feeds.
//
// The engine is the "Void Lab" model made concurrent: a transport turns
// bytes into frames and hands them to a Session; requests go onto one
// bounded input queue served by a worker pool; every message a session
// sends leaves through that session's outbox, whose single goroutine is the
// only writer to the transport. The package never imports a transport,
// r3labs/sse or go-github.
package mcp
