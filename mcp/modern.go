package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/sourcegraph/jsonrpc2"
)

// This file serves the modern era (see era.go): requests that carry their
// own context and need no session. On HTTP each one stands alone
// (Engine.Prepare, then Exchange.Run); on a stream shared by many
// requests, such as stdio, a session delivers them (Session.Deliver), and
// only its in-flight table (for notifications/cancelled) and its outbox
// are used: nothing one request does is seen by the next.

// Exchange is one modern request, checked and ready to run with no session.
type Exchange struct {
	e   *Engine
	req Request
	m   method
}

// Prepare checks a modern request: its _meta (revision, capabilities,
// log level) and its method. The error, a fault, is what to answer
// instead of running it: CodeUnsupportedVersion, CodeInvalidParams or
// CodeMethodNotFound; a transport answers it with ErrorResponse.
func (e *Engine) Prepare(in *Inbound) (*Exchange, error) {
	if !in.IsRequest() {
		return nil, protocolError(CodeInvalidRequest, "only requests are prepared",
			"notifications and responses get no answer", "send a request with an id")
	}
	peer, level, err := peerOf(in)
	if err != nil {
		return nil, err
	}
	m, err := e.lookup(in.f.method, true)
	if err != nil {
		return nil, err
	}
	return &Exchange{e: e, req: modernRequest(in, peer, level, nil, nil), m: m}, nil
}

// Method returns the request's method.
func (x *Exchange) Method() string { return x.req.Method }

// Run handles the request on the calling goroutine and pushes its
// messages to rt: its notifications (dropped when Push reports false),
// then its response. The request is cancelled when ctx is, which is how
// a client closing its response stream cancels it; it then ends with
// KindUnanswered and no response. Run may be called once.
func (x *Exchange) Run(ctx context.Context, rt Route) {
	e := x.e
	x.req.route = rt
	if !e.admit() {
		rt.Push(Outgoing{Kind: KindResponse, Data: e.errorResponse(x.req.ID, errShuttingDown, true)})
		return
	}
	defer e.running.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errRequestDone)
	if !x.m.long {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, e.opts.RequestTimeout)
		defer stop()
	}
	res, err := e.call(ctx, x.m, &x.req)
	if errors.Is(ctx.Err(), context.Canceled) {
		// The client went away (or stopped reading a subscription): there
		// is nobody to answer.
		rt.Push(Outgoing{Kind: KindUnanswered})
		return
	}
	var code int64
	if _, err := inputRequired(&x.req, res, err); err != nil {
		code = ErrorObjectFor(err, true).Code
	}
	rt.Push(Outgoing{Kind: KindResponse, Data: e.answer(&x.req, res, err), ErrorCode: code})
}

var errShuttingDown = protocolError(CodeInvalidRequest, "the server is shutting down",
	"it no longer accepts requests", "retry once it is back")

// ErrorResponse encodes the JSON-RPC error response to request id (nil:
// an id that could not be read), with the codes of the era modern says.
func (e *Engine) ErrorResponse(id json.RawMessage, err error, modern bool) []byte {
	return e.errorResponse(id, err, modern)
}

func (e *Engine) errorResponse(id json.RawMessage, err error, modern bool) []byte {
	data, encErr := encodeResponse(id, nil, ErrorObjectFor(err, modern))
	if encErr != nil {
		e.log.Error("encode error response", "err", encErr)
	}
	return data
}

// modernRequest builds the Request of a modern message.
func modernRequest(in *Inbound, peer *Peer, level Level, s *Session, rt Route) Request {
	r := Request{Method: in.f.method, ID: in.f.id, Params: in.f.params, peer: peer, s: s, route: rt,
		modern: true, level: level}
	if m := in.meta; m != nil {
		r.progressToken = m.ProgressToken
		r.trace = traceContext{parent: m.TraceParent, state: m.TraceState}
	}
	return r
}

// lookup finds method in the table, for a request of the era modern says.
func (e *Engine) lookup(name string, modern bool) (method, error) {
	m, ok := e.methods[name]
	if ok && (modern && m.era == eraLegacy || !modern && m.era == eraModern) {
		ok = false
	}
	if !ok {
		how := "see the capabilities returned by initialize"
		if modern {
			how = "see the capabilities returned by " + MethodServerDiscover
		}
		why := "this server does not implement it"
		switch {
		case modern && name == MethodInitialize:
			why = "revision " + Version20260728 + " has no handshake: every request carries its revision and capabilities in params._meta"
			how = "leave out the _meta protocol version to initialize a session of an older revision"
		case modern && m.handle != nil:
			why = "revision " + Version20260728 + " removed it"
		case !modern && m.handle != nil:
			why = "it belongs to revision " + Version20260728 + " and later, and this session speaks an older one"
			how = fmt.Sprintf("send it with params._meta naming %s, without a session", Version20260728)
		}
		return method{}, protocolError(CodeMethodNotFound, fmt.Sprintf("unknown method %q", name), why, how)
	}
	return m, nil
}

// deliverModern admits a modern request that came on a session's stream.
func (s *Session) deliverModern(in *Inbound, d Delivery) {
	peer, level, err := peerOf(in)
	var m method
	if err == nil {
		m, err = s.engine.lookup(in.f.method, true)
	}
	if err != nil {
		s.respond(d.Route, s.engine.errorResponse(in.f.id, err, true), false)
		return
	}
	s.admit(modernRequest(in, peer, level, s, d.Route), m, d)
}

// answer encodes the response to r: for a modern request with the
// members that era puts on every result.
func (e *Engine) answer(r *Request, res any, err error) []byte {
	res, err = inputRequired(r, res, err)
	var rpcErr *jsonrpc2.Error
	if err != nil {
		res, rpcErr = nil, ErrorObjectFor(err, r.modern)
	}
	if !r.modern || rpcErr != nil {
		data, encErr := encodeResponse(r.ID, res, rpcErr)
		if encErr != nil {
			e.log.Error("encode response", "method", r.Method, "err", encErr)
		}
		return data
	}
	data, encErr := encodeModernResponse(r.ID, res, e.resultHead(r, res))
	if encErr != nil {
		e.log.Error("encode response", "method", r.Method, "err", encErr)
		data, _ = encodeResponse(r.ID, nil, ErrorObjectFor(encErr, true))
	}
	return data
}

// cacheable are the methods whose complete results carry cache hints.
var cacheable = map[string]bool{
	MethodServerDiscover: true, MethodToolsList: true, MethodPromptsList: true, MethodResourcesList: true,
	MethodResourceTemplatesList: true, MethodResourcesRead: true,
}

// resultHead returns the members a modern result starts with: resultType,
// _meta with the server's identity, and for cacheable methods ttlMs and
// cacheScope. A retry with inputResponses or requestState is never
// cacheable, so its result says ttlMs 0 and private.
func (e *Engine) resultHead(r *Request, res any) []byte {
	buf := make([]byte, 0, 160)
	switch v := res.(type) {
	case *InputRequiredResult:
		buf = append(buf, `"resultType":"input_required","_meta":{`...)
		return append(append(buf, e.serverInfoMember...), '}')
	case *listenEnd:
		buf = append(buf, `"resultType":"complete","_meta":{`...)
		buf = append(buf, e.serverInfoMember...)
		buf = append(buf, `,"`+MetaSubscriptionID+`":`...)
		return append(append(buf, v.id...), '}')
	}
	buf = append(buf, `"resultType":"complete","_meta":{`...)
	buf = append(append(buf, e.serverInfoMember...), '}')
	if !cacheable[r.Method] {
		return buf
	}
	hint := CacheHint{Scope: CachePrivate}
	if !bytes.Contains(r.Params, []byte(`"requestState"`)) && !bytes.Contains(r.Params, []byte(`"inputResponses"`)) {
		hint = e.cacheHint(r.Method)
	}
	ttl := max(0, hint.TTL.Milliseconds())
	scope := hint.Scope
	if scope == "" {
		scope = CachePublic
	}
	buf = append(buf, `,"ttlMs":`...)
	buf = strconv.AppendInt(buf, ttl, 10)
	buf = append(buf, `,"cacheScope":"`...)
	buf = append(buf, scope...)
	return append(buf, '"')
}

func (e *Engine) cacheHint(method string) CacheHint {
	if e.srv.Cache == nil {
		return CacheHint{}
	}
	return e.srv.Cache(method)
}

// encodeModernResponse writes a response whose result object starts with
// head (members, without braces). The result is encoded as
// appendResponse does, and must be a JSON object: its opening brace is
// overwritten with the comma that follows head, so nothing is copied.
func encodeModernResponse(id json.RawMessage, result any, head []byte) ([]byte, error) {
	if id == nil {
		id = nullID
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":{}}`)+len(id)+len(head)+fastSize(result)))
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"result":{`)
	buf.Write(head)
	mark := buf.Len()
	if result != nil {
		if err := appendResult(buf, result); err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
	}
	b := buf.Bytes()
	switch body := b[mark:]; {
	case len(body) == 0 || string(body) == "{}":
		buf.Truncate(mark)
		buf.WriteByte('}')
	case body[0] == '{':
		body[0] = ','
	default:
		return nil, fmt.Errorf("encode result: a result must be a JSON object, not %s", kindOf(body))
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// discover answers server/discover.
func (e *Engine) discover(context.Context, *Request) (any, error) {
	return &DiscoverResult{SupportedVersions: AllVersions(), Capabilities: e.caps, Instructions: e.srv.Instructions}, nil
}

// listenEnd is the result that ends a subscription the server closes.
type listenEnd struct{ id json.RawMessage }

// listener is one open subscriptions/listen.
type listener struct {
	r      *Request
	filter SubscriptionFilter
	uris   map[string]bool
	end    context.CancelCauseFunc
}

// errListenerBehind ends a subscription whose client does not keep up.
var errListenerBehind = &fault.Error{Code: fault.Internal, What: "the subscription ended",
	Why: "its client stopped reading its notifications", How: "send " + MethodSubscriptionsListen + " again"}

// listen serves subscriptions/listen: it acknowledges the subscription
// with what the server agrees to send, then relays those notifications,
// tagged with the subscription's id, until the client cancels (closes
// the stream, or notifications/cancelled on stdio) or the server shuts
// down, which ends it with a result.
func (e *Engine) listen(ctx context.Context, r *Request) (any, error) {
	var p SubscriptionsListenParams
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	agreed := SubscriptionFilter{
		ToolsListChanged:     p.Notifications.ToolsListChanged && e.caps.Tools != nil,
		PromptsListChanged:   p.Notifications.PromptsListChanged && e.caps.Prompts != nil,
		ResourcesListChanged: p.Notifications.ResourcesListChanged && e.caps.Resources != nil,
	}
	if e.caps.Resources != nil {
		agreed.ResourceSubscriptions = p.Notifications.ResourceSubscriptions
	}
	ctx, end := context.WithCancelCause(ctx)
	defer end(errRequestDone)
	l := &listener{r: r, filter: agreed, uris: make(map[string]bool), end: end}
	for _, u := range agreed.ResourceSubscriptions {
		l.uris[u] = true
	}
	ack, err := encodeTagged(NotificationSubscriptionsAcknowledged, r.ID, map[string]any{"notifications": agreed})
	if err != nil {
		return nil, err
	}
	// The acknowledgement and the registration are one step under lmu
	// (Push never blocks): a change announced once the client holds the
	// acknowledgement reaches it, and none is sent ahead of it.
	e.lmu.Lock()
	acked := l.send(ack)
	if acked {
		e.listeners[l] = struct{}{}
	}
	e.lmu.Unlock()
	if !acked {
		return nil, protocolError(CodeInvalidRequest, MethodSubscriptionsListen+" needs an event stream",
			"its notifications travel on the response stream, and this request accepts only a JSON answer",
			"send Accept: application/json, text/event-stream")
	}
	defer func() {
		e.lmu.Lock()
		delete(e.listeners, l)
		e.lmu.Unlock()
	}()
	select {
	case <-ctx.Done():
		if context.Cause(ctx) == errListenerBehind {
			return nil, errListenerBehind
		}
		return nil, context.Cause(ctx)
	case <-e.stop:
		return &listenEnd{id: r.ID}, nil
	}
}

// send hands one message to the subscription's stream.
func (l *listener) send(data []byte) bool {
	m := Outgoing{Kind: KindMessage, Data: data}
	if l.r.route != nil {
		return l.r.route.Push(m)
	}
	if l.r.s == nil {
		return false
	}
	l.r.s.offer(m)
	return true
}

// wants reports whether the subscription asked for method (about uri,
// for resource updates).
func (l *listener) wants(method, uri string) bool {
	switch method {
	case NotificationToolsListChanged:
		return l.filter.ToolsListChanged
	case NotificationPromptsListChanged:
		return l.filter.PromptsListChanged
	case NotificationResourcesChanged:
		return l.filter.ResourcesListChanged
	case NotificationResourceUpdated:
		return l.uris[uri]
	}
	return false
}

// notifyListeners relays a change notification to the subscriptions that
// asked for it, each tagged with its id.
func (e *Engine) notifyListeners(method, uri string, params map[string]any) {
	e.lmu.Lock()
	var ls []*listener
	for l := range e.listeners {
		if l.wants(method, uri) {
			ls = append(ls, l)
		}
	}
	e.lmu.Unlock()
	for _, l := range ls {
		data, err := encodeTagged(method, l.r.ID, params)
		if err != nil {
			e.log.Error("encode notification", "method", method, "err", err)
			continue
		}
		if !l.send(data) {
			l.end(errListenerBehind)
		}
	}
}

// encodeTagged encodes a notification of subscription id: params with
// _meta naming it.
func encodeTagged(method string, id json.RawMessage, params map[string]any) ([]byte, error) {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	p["_meta"] = map[string]json.RawMessage{MetaSubscriptionID: id}
	return encodeRequest(-1, method, p)
}

// Listeners returns the number of open subscriptions/listen streams.
func (e *Engine) Listeners() int {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	return len(e.listeners)
}

// serverInfoMember encodes the _meta member naming the server.
func serverInfoMember(info Implementation) []byte {
	b, err := json.Marshal(info)
	if err != nil {
		b = []byte(`{"name":"","version":""}`)
	}
	return append([]byte(`"`+MetaServerInfo+`":`), b...)
}

// Quick reports whether the request may run on its transport's goroutine
// before the transport starts writing its answer: it never sends anything
// before its response that a client would need to see as it happens.
func (x *Exchange) Quick() bool { return x.m.quick && !x.m.long }

// ParamHeader is a tool argument its input schema marks with x-mcp-header:
// a modern HTTP client mirrors it in the header Mcp-Param-<Header>.
type ParamHeader struct {
	Property string
	Header   string
}

// ParamHeaders returns the arguments tool mirrors in headers (none for an
// unknown tool).
func (e *Engine) ParamHeaders(ctx context.Context, tool string) ([]ParamHeader, error) {
	if e.srv.Tools == nil {
		return nil, nil
	}
	tools, err := e.srv.Tools.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		if t.Name != tool {
			continue
		}
		// Every modern tools/call over HTTP asks, and a schema seldom
		// changes: it is read once for as long as its bytes stay the same.
		if c, ok := e.paramHeaders.Load(tool); ok && bytes.Equal(c.(*paramHeaders).schema, t.InputSchema) {
			return c.(*paramHeaders).headers, nil
		}
		headers := readParamHeaders(t.InputSchema)
		e.paramHeaders.Store(tool, &paramHeaders{schema: bytes.Clone(t.InputSchema), headers: headers})
		return headers, nil
	}
	return nil, nil
}

// paramHeaders is what ParamHeaders read from one tool's input schema.
type paramHeaders struct {
	schema  json.RawMessage
	headers []ParamHeader
}

// readParamHeaders lists the properties schema marks with x-mcp-header
// (none when it is not an object schema).
func readParamHeaders(schema json.RawMessage) []ParamHeader {
	var s struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []ParamHeader
	for name, p := range s.Properties {
		if p.Header != "" {
			out = append(out, ParamHeader{Property: name, Header: p.Header})
		}
	}
	return out
}

// SameParamValue reports whether a header value v mirrors the argument
// raw: a string as it is, a number numerically (42 and 42.0 agree), a
// boolean as true or false.
func SameParamValue(raw json.RawMessage, v string) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == v
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b) == v
	}
	var n, hv float64
	if json.Unmarshal(raw, &n) == nil {
		var err error
		hv, err = strconv.ParseFloat(v, 64)
		return err == nil && hv == n
	}
	return false
}

// inputRequired turns a handler's InputRequired error into the result it
// stands for, where the revision allows one, and refuses an input-required
// result where it does not.
func inputRequired(r *Request, res any, err error) (any, error) {
	var ir *InputRequired
	if errors.As(err, &ir) {
		res, err = &ir.Result, nil
	}
	if _, ok := res.(*InputRequiredResult); ok && (!r.modern || !mayNeedInput[r.Method]) {
		return nil, &fault.Error{Code: fault.Internal, What: "internal error while handling " + r.Method,
			Why: "the handler asked for input the way only revision " + Version20260728 + " allows, on prompts/get, tools/call and resources/read",
			How: "report it with the server's log"}
	}
	return res, err
}
