package mcp

import (
	"context"
	"encoding/json"
	"errors"
)

// Peer is what a request knows of the client that sent it. A session
// learns it at initialize and supplies it to every request it delivers,
// so a handler reads it the same way whatever the transport.
type Peer struct {
	ProtocolVersion string
	Info            Implementation
	Capabilities    ClientCapabilities
}

// Request is one request being handled: its method, id and params, what
// it knows of its client, and what a handler may do while it runs
// (report progress, log, ask the client something). A handler never
// learns the transport or the session it came on.
//
// Its methods may be called from several goroutines at once; they must
// not be called after the handler has returned.
type Request struct {
	Method string
	ID     json.RawMessage
	Params json.RawMessage

	peer          *Peer    // never nil; never changed after initialize
	s             *Session // the session it came on
	route         Route    // its reply path, or nil for the session's Sink
	progressToken json.RawMessage
}

// ProtocolVersion returns the protocol revision the client speaks.
func (r *Request) ProtocolVersion() string { return r.peer.ProtocolVersion }

// ClientInfo returns the client's name and version.
func (r *Request) ClientInfo() Implementation { return r.peer.Info }

// ClientCapabilities returns what the client declared it can do.
func (r *Request) ClientCapabilities() ClientCapabilities { return r.peer.Capabilities }

// SessionID returns the id of the session the request came on: a key for
// what an application keeps per client, such as the values it used before.
func (r *Request) SessionID() string { return r.s.id }

// ProgressToken returns the request's progress token, or nil.
func (r *Request) ProgressToken() json.RawMessage { return r.progressToken }

// Progress sends notifications/progress when the request asked for it.
func (r *Request) Progress(progress, total float64, message string) {
	if r.progressToken == nil {
		return
	}
	r.s.notify(r.route, NotificationProgress, &ProgressParams{
		ProgressToken: r.progressToken, Progress: progress, Total: total, Message: message})
}

// Log sends notifications/message with the request's messages when the
// level the client set lets it through.
func (r *Request) Log(level Level, logger string, data any) {
	r.s.log(r.route, level, logger, data)
}

// Call sends the client a request (sampling, elicitation) that belongs to
// this one and waits for the answer: the client's response decoded into
// result, or its error. The wait ends with ctx, with the session, or after
// the engine's call timeout, whichever comes first; then the client is told
// the call is abandoned, and an error says it did not answer.
func (r *Request) Call(ctx context.Context, method string, params, result any) error {
	return r.s.call(ctx, r.route, method, params, result)
}

// EndStream asks the transport to close the stream that carries this
// request's messages without ending the request, so that a long-running
// handler holds no connection (SEP-1699): the client reconnects, and the
// messages sent after this call, the response included, reach it on the
// resumed stream. It reports false, and does nothing, when the request's
// transport cannot resume streams.
func (r *Request) EndStream() bool {
	if r.route == nil || !r.route.Resumable() {
		return false
	}
	r.route.Push(Outgoing{Kind: KindEndStream})
	return true
}

// Decode unmarshals the request's params into p and records the progress
// token. Absent or null params decode as an empty object.
func (r *Request) Decode(p any) error {
	if len(r.Params) > 0 && string(r.Params) != "null" {
		if r.Params[0] != '{' {
			return protocolError(CodeInvalidParams, "invalid params for "+r.Method,
				"params must be a JSON object", "send params as an object, e.g. {}")
		}
		if fd, ok := p.(fastDecoder); ok && fd.decodeFast(r.Params) {
			return nil // the fast shape has no _meta
		}
		if err := json.Unmarshal(r.Params, p); err != nil {
			return protocolError(CodeInvalidParams, "invalid params for "+r.Method,
				describeJSONError(err), "check the parameter types against the MCP schema for "+r.Method)
		}
	}
	if m, ok := p.(interface{ requestMeta() *RequestMeta }); ok {
		if meta := m.requestMeta(); meta != nil {
			r.progressToken = meta.ProgressToken
		}
	}
	return nil
}

// Errors a request's context ends with (context.Cause tells them apart;
// ctx.Err() is context.Canceled for all of them).
var (
	// ErrCancelledByClient: the client sent notifications/cancelled.
	ErrCancelledByClient = errors.New("the client cancelled the request")
	// ErrSessionClosed: the session ended (the client went away, it was
	// deleted or idle too long, or the server is shutting down).
	ErrSessionClosed = errors.New("the session ended")
	// errRequestDone: the handler returned; what it started is no longer
	// wanted.
	errRequestDone = errors.New("the request is over")
)
