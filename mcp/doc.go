// Package mcp is flowyprompt's Model Context Protocol core: the wire
// framing that answers every bad frame instead of dropping the session,
// version negotiation, one method table, the mapping from errors to
// JSON-RPC codes, and the session layer every transport feeds.
//
// The core is centred on the request: a handler gets an *Request holding
// its method, id and params, what the client is (Peer), and what it may
// do while it runs, whatever transport and protocol era it came from. The
// 2025-era session (Session) is a layer on top: it answers initialize,
// supplies the Peer, and owns the outbox through which messages that
// belong to no request's Route reach its Sink. transport.go states the
// contract with the transports, both ways.
//
// The files follow a request's way through: decode.go (bytes to a frame),
// session.go (the 2025 era's layer) and outbox.go, dispatch.go (the one
// lifecycle of a request of either era: admission, context, run), the
// handler, encode.go (the answer's bytes, handed to the transport). The
// package never imports a transport, net/http, r3labs/sse or go-github.
package mcp
