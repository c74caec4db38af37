package mcp

// This file is the contract between the engine and the transports: what a
// transport hands a session, what it gets back, who owns each buffer, and
// which calls may run at once.
//
// A transport turns bytes into frames and hands each to Session.Deliver,
// saying how the frame's answer travels (Delivery). Messages leave a
// session in one of two ways:
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
// Ownership, the one rule: a byte slice that crosses this contract is
// never written again, by either side, and the receiver may keep it for as
// long as it likes. So a transport hands Deliver a frame whose memory it
// will not reuse (the session keeps slices of it, and does not copy it);
// the session hands Sink.Send and Route.Push messages it will not touch
// again (one broadcast may go to many sinks at once). No pooled memory
// crosses in either direction.

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
	// ErrorCode is, for the KindResponse of a modern request run by
	// Exchange.Run, the JSON-RPC code of its error (0 for a result): the
	// modern era gives some errors an HTTP status of their own.
	ErrorCode int64
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
// Deliver with the request's frame.
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

// Delivery says how a transport wants one frame handled.
type Delivery struct {
	// Route carries the messages of the request in the frame; nil sends
	// them through the session's Sink.
	Route Route
	// Inline says that the calling goroutine waits for the answer anyway
	// (an HTTP handler does): a request whose method never waits on the
	// client then runs on it, before Deliver returns, instead of on a
	// goroutine of its own. Requests that may ask the client something
	// never run inline, since their questions travel on streams the
	// transport serves only once Deliver has returned.
	Inline bool
	// ReturnParseErrors makes Deliver return, rather than answer on the
	// session, a frame that is not valid JSON: HTTP answers it with status
	// 400 instead.
	ReturnParseErrors bool
	// LegacyOnly refuses requests of the modern era (revision 2026-07-28
	// and later), for a transport that revision does not define (the
	// legacy HTTP+SSE one): a dual-era client's probe fails, and it falls
	// back to initialize.
	LegacyOnly bool
}
