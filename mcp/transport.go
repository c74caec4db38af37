package mcp

import (
	"encoding/json"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// This file is the contract between the engine and the transports: what a
// transport hands the engine, what it gets back, who owns each buffer, and
// which calls may run at once.
//
// # Inbound
//
// A transport turns bytes into messages and hands them in one of three
// ways, from any goroutine, and as many at once as it likes:
//
//   - Session.Deliver(frame, rt): a transport that hands over frames as
//     they come (stdio) gives the session the bytes; a frame it cannot
//     read is answered with its JSON-RPC error like any other message.
//     Session.RejectTooLarge answers a frame the transport would not read
//     whole.
//   - ParseInbound, then Session.DeliverInbound(from, in, rt): a transport that
//     must look at a message before it is served (its era, the headers
//     that mirror it) reads it first; bytes that are no JSON-RPC message
//     come back as a *FrameError for the transport to answer its own way
//     (HTTP: status 400 for bytes that are not JSON).
//   - ParseInbound, Engine.Prepare, then Exchange.Run(ctx, rt): a request
//     of revision 2026-07-28 or later that came without a session; what
//     Prepare refuses is the transport's to answer (Engine.ErrorResponse).
//
// Deliver and DeliverInbound return how many responses the message gets
// (0 or 1): a notification or a response gets none. They block while the
// session has its maximum of requests in flight, which slows down the
// client that floods it. A request given a Route runs on the caller's
// goroutine, before Deliver (or Run) returns, when its method never waits
// on the client (the caller waits for the answer anyway); so a Route must
// take Push calls from the moment it is handed over, and the caller must
// hold no lock a handler could need. Any other request runs on a
// goroutine of its own.
//
// # Outbound
//
// Messages leave in one of two ways:
//
//   - through the session's Sink, its stream to the client (stdio's
//     stdout, a legacy SSE stream, a Streamable HTTP GET stream): every
//     message that belongs to no request's Route;
//   - through the Route of the request they belong to, for transports that
//     answer a request on the connection that carried it (a Streamable HTTP
//     POST, the legacy POST /sse): the request's progress and log
//     notifications, the requests to the client made while handling it,
//     and last its response.
//
// HTTP's own concerns come back as typed values, never as flags: a
// *FrameError for a message that cannot be read, and on a response the
// error it answers with (Outgoing.Err), whose JSON-RPC code, from
// ErrorObjectFor, gives the status of an error of the 2026-07-28 era.
//
// # Ownership
//
// The one rule: a byte slice that crosses this contract is never written
// again, by either side, and the receiver may keep it for as long as it
// likes. So a transport hands Deliver and ParseInbound bytes whose memory
// it will not reuse (the engine keeps slices of them, and does not copy
// them); the engine hands Sink.Send and Route.Push messages it will not
// touch again (one broadcast may go to many sinks at once). No pooled
// memory crosses in either direction.

// Kind says what an Outgoing message is.
type Kind uint8

const (
	// KindMessage is a notification or a request to the client.
	KindMessage Kind = iota
	// KindResponse is the response to a request: on a Route, the last
	// message of its request.
	KindResponse
	// KindUnanswered ends a request that gets no response, because the
	// client cancelled it: the last message of its Route, with no Data.
	// It reaches only Routes.
	KindUnanswered
	// KindEndStream asks the transport to close the stream that carries
	// a Route now, while the request goes on (SEP-1699): the client
	// reconnects and receives the rest, the response included, on the
	// resumed stream. It has no Data and reaches only Routes whose
	// Resumable reports true.
	KindEndStream
)

// Outgoing is one message leaving a session.
type Outgoing struct {
	Kind Kind
	// Data is one compact JSON-RPC message without a trailing newline;
	// nil for KindUnanswered and KindEndStream.
	Data []byte
	// Err is, for a KindResponse, the error the response answers with
	// (nil for a result). A transport that gives errors a status of their
	// own (revision 2026-07-28 over HTTP) reads its JSON-RPC code from
	// ErrorObjectFor, the one mapping of errors to codes.
	Err error
}

// A Sink is a session's stream to its client.
//
// Send and Close are called by one goroutine at a time, the session's
// writer, never concurrently: a Sink needs no locking for its own writes.
// Send may block while the client is slow to read; the session's outbox
// takes what arrives meanwhile, up to its bound, and a session whose
// client lets it fill up is closed. Send receives KindMessage and
// KindResponse messages only, every one with Data, in the order they were
// sent; a batch holds everything that was ready, so a transport can write
// it at once. An error from Send closes the session. Close is called once,
// after the last Send has returned, when the session ends.
type Sink interface {
	Send(batch []Outgoing) error
	Close()
}

// A Route is the reply path of one request, made by a transport that
// answers the request on the connection that carried it, and passed to
// Deliver, DeliverInbound or Exchange.Run with the request.
//
// Push may be called from several goroutines at once (a handler's and the
// engine's) and must never block: it hands the message over and returns.
// A message pushed after the request's last one (KindResponse or
// KindUnanswered) has nowhere to go and is dropped by the route.
type Route interface {
	// Push hands over one message of the request. It reports false, for a
	// KindMessage only, when the route cannot carry it: it carries no
	// notifications (a POST answered with JSON), or its client has let too
	// many pile up. The session then sends the message through its Sink
	// instead; a request with no session drops it, and a subscription
	// ends (its client listens again). For the other kinds its result is
	// ignored.
	Push(m Outgoing) bool
	// Resumable reports whether the stream carrying the route may be
	// closed before the response and resumed by the client, so that
	// Request.EndStream can ask for it. It may be called from any
	// goroutine.
	Resumable() bool
}

// Inbound is one message read ahead of serving it, so a transport can
// tell its era, check what it mirrors in headers against the body, and
// answer a message it cannot read its own way, before handing it on
// (Session.DeliverInbound, or Engine.Prepare for a request of revision
// 2026-07-28 with no session). A transport that hands over bytes as they
// come (Session.Deliver) never sees one.
//
// Its params are read once, when first asked about (its era, its name):
// an Inbound belongs to one goroutine at a time.
type Inbound struct {
	f    frame
	size int         // bytes of the message, for the session's cap
	read bool        // readParams has run
	meta *modernMeta // nil when the params carry no _meta
	// metaErr: the params or their _meta are not what the revision
	// defines; reported when the request is prepared.
	metaErr error
	name    string // params.name (tools/call, prompts/get) or params.uri (resources/read)
	named   bool
	args    json.RawMessage // params.arguments of tools/call
	lease   *Lease          // its bytes' share of the transport's budget (Keep)
}

// A FrameError is ParseInbound's answer to bytes that are no JSON-RPC
// message: the transport answers it, with ID, through ErrorResponse (and
// ErrorObject, through which it reaches the fault), or with an HTTP
// status of its own when NotJSON.
type FrameError struct {
	// ID is the id to answer with: the message's own when it could be
	// read, else null.
	ID  json.RawMessage
	Err *fault.Error // CodeParseError or CodeInvalidRequest
}

func (e *FrameError) Error() string { return e.Err.Error() }
func (e *FrameError) Unwrap() error { return e.Err }

// NotJSON reports whether the bytes are not JSON at all (CodeParseError):
// a stream answers that with -32700, HTTP with status 400.
func (e *FrameError) NotJSON() bool { return e.Err.Code == CodeParseError }

// Exchange is one request of revision 2026-07-28 or later that came
// without a session, checked and ready to run.
type Exchange struct {
	e   *Engine
	req Request
	m   method
}
