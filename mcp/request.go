package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	s             *Session // the session it came on; nil for a modern request on HTTP
	route         Route    // its reply path, or nil for the session's Sink
	progressToken json.RawMessage
	lease         *Lease // what its bytes hold of a budget until its run ends

	// modern: the request carried its own context in _meta (revision
	// 2026-07-28 and later), and is answered as that era says.
	modern bool
	level  Level // a modern request's log level (levelNone: no messages)
	trace  traceContext
}

// traceContext is the W3C trace context a modern request's _meta carries.
type traceContext struct{ parent, state string }

// ProtocolVersion returns the protocol revision the client speaks.
func (r *Request) ProtocolVersion() string { return r.peer.ProtocolVersion }

// ClientInfo returns the client's name and version.
func (r *Request) ClientInfo() Implementation { return r.peer.Info }

// ClientCapabilities returns what the client declared it can do.
func (r *Request) ClientCapabilities() ClientCapabilities { return r.peer.Capabilities }

// SessionID returns the id of the session the request came on: a key for
// what an application keeps per client, such as the values it used before.
// A modern request belongs to no session: its SessionID is "".
func (r *Request) SessionID() string {
	if r.modern || r.s == nil {
		return ""
	}
	return r.s.id
}

// Modern reports whether the request follows the modern era (revision
// 2026-07-28 and later): it carried its own context, it has no session,
// and it cannot Call the client; a handler that needs the client's input
// returns an InputRequiredResult instead.
func (r *Request) Modern() bool { return r.modern }

// TraceContext returns the W3C traceparent and tracestate a modern
// request's _meta carried ("" when it had none).
func (r *Request) TraceContext() (parent, state string) { return r.trace.parent, r.trace.state }

// Meta returns the member key of the request's params._meta, or nil when
// it has none: what a client says about the request beyond the protocol's
// own keys (e.g. "io.flowyprompt/label"). A request of either era may
// carry one. It reads the params each time; call it once per request.
func (r *Request) Meta(key string) json.RawMessage {
	// Params without a backslash write every key as it reads: when key
	// is not among their bytes, no member of _meta is key, and the
	// params need not be decoded (most requests name no key of ours).
	if len(r.Params) == 0 || bytes.IndexByte(r.Params, '\\') < 0 && !bytes.Contains(r.Params, []byte(key)) {
		return nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return nil
	}
	return p.Meta[key]
}

// ProgressToken returns the request's progress token, or nil.
func (r *Request) ProgressToken() json.RawMessage { return r.progressToken }

// Progress sends notifications/progress when the request asked for it.
func (r *Request) Progress(progress, total float64, message string) {
	if r.progressToken == nil {
		return
	}
	r.notify(NotificationProgress, &ProgressParams{
		ProgressToken: r.progressToken, Progress: progress, Total: total, Message: message})
}

// notify sends a notification that belongs to the request. A modern
// request on HTTP has no session: what its route cannot carry (a POST
// answered with JSON) has nowhere else to go and is dropped.
func (r *Request) notify(method string, params any) {
	if r.s != nil {
		r.s.notify(r.route, method, params)
		return
	}
	data, err := encodeRequest(-1, method, params)
	if err == nil && r.route != nil {
		r.route.Push(Outgoing{Kind: KindMessage, Data: data})
	}
}

// Log sends notifications/message with the request's messages when the
// level the client set lets it through.
// A modern request gets them only when its _meta asked for a level.
func (r *Request) Log(level Level, logger string, data any) {
	if r.modern {
		if level >= r.level {
			r.notify(NotificationMessage, &LoggingMessageParams{Level: level.String(), Logger: logger, Data: data})
		}
		return
	}
	r.s.log(r.route, level, logger, data)
}

// Call sends the client a request (sampling, elicitation) that belongs to
// this one and waits for the answer: the client's response decoded into
// result, or its error. The wait ends with ctx, with the session, or after
// the engine's call timeout, whichever comes first; then the client is told
// the call is abandoned, and an error says it did not answer.
//
// A modern request cannot call its client (ErrNoCalls): the revision
// replaced such calls with InputRequiredResult.
func (r *Request) Call(ctx context.Context, method string, params, result any) error {
	if r.modern || r.s == nil {
		return fmt.Errorf("%s: %w", method, ErrNoCalls)
	}
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
		if fd, ok := p.(fastDecoder); ok && fd.decodeFast(r.Params, r.modern) {
			return nil // a legacy fast shape has no _meta
		}
		if err := json.Unmarshal(r.Params, p); err != nil {
			if key, raw, ok := nonStringArgument(r.Params, err); ok {
				return protocolError(CodeInvalidParams, fmt.Sprintf("invalid params for %s: argument %q is a JSON %s, not a string", r.Method, key, strings.Replace(kindOf(raw), "bool", "boolean", 1)),
					"every value of arguments is a string in MCP, whatever the template does with it",
					fmt.Sprintf("send it as a string: \"%s\": %q", key, string(raw)))
			}
			return protocolError(CodeInvalidParams, "invalid params for "+r.Method,
				describeJSONError(err), "check the parameter types against the MCP schema for "+r.Method)
		}
	}
	if r.modern {
		return nil // the progress token was read with the rest of _meta
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
	// ErrNoCalls: a modern request asked to call its client, which that
	// era does not allow.
	ErrNoCalls = errors.New("requests of revision 2026-07-28 and later cannot call the client; return an InputRequiredResult instead")
)

// nonStringArgument finds the argument that made err, when err is a
// string field of arguments given another JSON type (a number, a
// boolean): encoding/json names the field, arguments, but not the key.
// It returns the first such key in the order of the message.
func nonStringArgument(params json.RawMessage, err error) (key string, raw json.RawMessage, ok bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil || te.Type.Kind() != reflect.String || te.Field != "arguments" {
		return "", nil, false
	}
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(p.Arguments))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", nil, false
		}
		if len(v) > 0 && v[0] != '"' {
			return k, v, true
		}
	}
	return "", nil, false
}
