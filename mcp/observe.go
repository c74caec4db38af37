package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// Observer is the one hook through which the rest of the server watches
// the requests the engine runs: tracing and metrics (internal/telemetry)
// and the audit log of prompt usage (internal/audit) both sit behind it,
// so the core carries no telemetry library and pays nothing when
// EngineOptions.Observer is nil.
//
// StartRequest is called for every request of either era, on the goroutine
// that runs its handler, just before the handler runs. The context it
// returns is the handler's (so a span started there is the parent of what
// the handler does); end is called exactly once, on the same goroutine,
// after the handler returned and before the response is encoded. info is
// the observer's to keep.
//
// SessionEnded is called once for each 2025-era session that was
// initialized, when it closes. A 2026-era request has no session.
//
// Both are called on the request path: an implementation must be quick and
// safe for concurrent use, and must never block on the network.
type Observer interface {
	StartRequest(ctx context.Context, info *RequestInfo) (_ context.Context, end func(Outcome))
	SessionEnded(SessionInfo)
}

// The network.transport values a transport names its sessions with
// (Session.SetTransport), as OpenTelemetry spells them.
const (
	TransportPipe = "pipe" // stdio
	TransportTCP  = "tcp"  // HTTP: /sse and /mcp
)

// RequestInfo describes one request to an Observer. It never holds the
// request's arguments.
type RequestInfo struct {
	Method string
	// Target is the prompt or tool name of prompts/get and tools/call, the
	// URI of resources/read, else "".
	Target string
	// ID is the JSON-RPC id as text: a string id without its quotes.
	ID              string
	ProtocolVersion string
	Client          Implementation
	// Modern: the request follows the 2026-07-28 revision (no session).
	Modern bool
	// SessionID is the 2025-era session's id, "" for a modern request.
	SessionID string
	// Transport is TransportPipe, TransportTCP, or "" when the transport
	// did not say.
	Transport string
	// TraceParent and TraceState are the W3C trace context of the
	// request's params._meta ("" when absent), read for both eras.
	TraceParent, TraceState string
}

// Outcome is how a request ended, as the client will see it.
type Outcome struct {
	// Err is the handler's error (nil on success). An input-required
	// answer of the 2026 revision is a success.
	Err error
	// Code is the JSON-RPC error code the response carries, 0 on success.
	Code int64
	// ToolError: tools/call answered with a result whose isError is true.
	ToolError bool
}

// SessionInfo describes a 2025-era session that ended.
type SessionInfo struct {
	ID              string
	ProtocolVersion string
	Client          Implementation
	Transport       string
	Duration        time.Duration
}

// SetTransport names the network transport of the session's requests
// (TransportPipe, TransportTCP) for the engine's Observer. A transport
// calls it right after NewSession, before the first Deliver.
func (s *Session) SetTransport(network string) { s.transport.Store(&network) }

// network is the session's transport as SetTransport named it, or "".
func (s *Session) network() string {
	if p := s.transport.Load(); p != nil {
		return *p
	}
	return ""
}

var errPanicked = &fault.Error{Code: fault.Internal, What: "internal error", Why: "the handler failed unexpectedly"}

// observe runs the handler under the engine's Observer.
func (e *Engine) observe(ctx context.Context, m method, r *Request) (any, error) {
	info := requestInfo(r)
	ctx, end := e.opts.Observer.StartRequest(ctx, info)
	done := false
	defer func() {
		if !done {
			// The handler panicked: call turns it into an internal error,
			// and the observer must still see the request end.
			end(Outcome{Err: errPanicked, Code: ErrorObjectFor(errPanicked, r.modern).Code})
		}
	}()
	res, err := m.handle(ctx, r)
	done = true
	var o Outcome
	_, asks := res.(*InputRequiredResult)
	if err != nil || asks {
		// What the client is answered: an input-required error is a
		// result, and a result the era does not allow is an error.
		if _, ierr := inputRequired(r, res, err); ierr != nil {
			o.Err, o.Code = ierr, ErrorObjectFor(ierr, r.modern).Code
		}
	} else if tr, ok := res.(*CallToolResult); ok && tr != nil && tr.IsError {
		o.ToolError = true
	}
	end(o)
	return res, err
}

// requestInfo reads what an Observer is told about r. It decodes the
// params once more, which only an engine with an Observer pays for.
func requestInfo(r *Request) *RequestInfo {
	info := &RequestInfo{Method: r.Method, ID: idText(r.ID), ProtocolVersion: r.peer.ProtocolVersion,
		Client: r.peer.Info, Modern: r.modern, SessionID: r.SessionID()}
	if r.s != nil {
		info.Transport = r.s.network()
	} else {
		// A request without a session came on its own POST (Exchange).
		info.Transport = TransportTCP
	}
	info.TraceParent, info.TraceState = r.trace.parent, r.trace.state
	if len(r.Params) == 0 || r.Params[0] != '{' {
		return info
	}
	named := r.Method == MethodPromptsGet || r.Method == MethodToolsCall
	if named {
		// The scanner the handlers' params use: a modern request's _meta
		// was read already, and a legacy params object without one needs
		// no more than its name.
		if name, _, ok := nameAndArguments(r.Params, r.modern); ok {
			info.Target = name
			return info
		}
	} else if r.Method != MethodResourcesRead && (r.modern || !bytes.Contains(r.Params, []byte(`"_meta"`))) {
		return info
	}
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
		Meta *struct {
			TraceParent string `json:"traceparent"`
			TraceState  string `json:"tracestate"`
		} `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return info
	}
	switch {
	case named && p.Name != nil:
		info.Target = *p.Name
	case r.Method == MethodResourcesRead && p.URI != nil:
		info.Target = *p.URI
	}
	if p.Meta != nil && !r.modern {
		info.TraceParent, info.TraceState = p.Meta.TraceParent, p.Meta.TraceState
	}
	return info
}

// idText is a JSON-RPC id as text: a string without its quotes, a number
// as written.
func idText(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// sessionEnded tells the Observer that an initialized session closed.
func (s *Session) sessionEnded() {
	obs := s.engine.opts.Observer
	started := s.started.Load()
	if obs == nil || started == 0 {
		return
	}
	p := s.peer.Load()
	obs.SessionEnded(SessionInfo{ID: s.id, ProtocolVersion: p.ProtocolVersion, Client: p.Info,
		Transport: s.network(), Duration: time.Since(time.Unix(0, started))})
}

// JoinObservers returns an Observer that calls each of obs in turn (nil
// ones left out): StartRequest in order, each given the context the one
// before returned, and the ends in reverse order. It returns nil when
// none is left, so an engine without observers stays without one.
func JoinObservers(obs ...Observer) Observer {
	var j joined
	for _, o := range obs {
		if o != nil {
			j = append(j, o)
		}
	}
	switch len(j) {
	case 0:
		return nil
	case 1:
		return j[0]
	}
	return j
}

type joined []Observer

func (j joined) StartRequest(ctx context.Context, info *RequestInfo) (context.Context, func(Outcome)) {
	ends := make([]func(Outcome), len(j))
	for i, o := range j {
		ctx, ends[i] = o.StartRequest(ctx, info)
	}
	return ctx, func(out Outcome) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](out)
		}
	}
}

func (j joined) SessionEnded(si SessionInfo) {
	for _, o := range j {
		o.SessionEnded(si)
	}
}
