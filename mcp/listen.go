package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// subscriptions/listen, the 2026-07-28 revision's way to hear of changes:
// a request whose answer is a stream of notifications, relayed by the
// engine beside the 2025 sessions' own (Engine.Notify, ResourceUpdated).

// listenEnd is the result that ends a subscription the server closes.
type listenEnd struct{ id json.RawMessage }

// listener is one open subscriptions/listen.
type listener struct {
	r      *Request
	ctx    context.Context // the listen request's, for an Audience
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
	uris := make(map[string]bool)
	if e.caps.Resources != nil {
		list, err := e.listened(ctx, r, p.Notifications.ResourceSubscriptions, uris)
		if err != nil {
			return nil, err
		}
		size := 0
		for _, u := range list {
			size += subscriptionSize(u)
		}
		if err := e.holdSubscriptions("params.notifications.resourceSubscriptions", size); err != nil {
			return nil, err
		}
		defer e.letGoSubscriptions(size)
		agreed.ResourceSubscriptions = list
	}
	ctx, end := context.WithCancelCause(ctx)
	defer end(errRequestDone)
	l := &listener{r: r, ctx: ctx, filter: agreed, uris: uris, end: end}
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

// listened checks the resource subscriptions of a listen and returns
// them once each, in the order asked, each also in set. It refuses what
// the stream would hold for nothing, or without bound: a list of more than
// MaxSubscriptions, a URI longer than MaxURILength, a resource the server
// does not serve (whose update it will never announce).
func (e *Engine) listened(ctx context.Context, r *Request, uris []string, set map[string]bool) ([]string, error) {
	const field = "params.notifications.resourceSubscriptions"
	if limit := e.opts.MaxSubscriptions; len(uris) > limit {
		return nil, tooManyListened(field, len(uris), limit)
	}
	for i, u := range uris {
		if err := checkURI(fmt.Sprintf("%s[%d]", field, i), u); err != nil {
			return nil, err
		}
	}
	var list []string
	for _, u := range uris {
		if set[u] {
			continue
		}
		if err := e.srv.Resources.CheckResource(ctx, r, u); err != nil {
			return nil, withURI(err, u)
		}
		set[u] = true
		list = append(list, u)
	}
	return list, nil
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
func (e *Engine) notifyListeners(method, uri string, params map[string]any, to Audience) {
	e.lmu.Lock()
	var ls []*listener
	for l := range e.listeners {
		if l.wants(method, uri) && (to == nil || to(l.ctx, l.r)) {
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
