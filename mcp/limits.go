package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// What a client can make the engine keep for it beyond one request is
// bounded here: the resource subscriptions of a session or a
// subscriptions/listen stream, and what initialize (or a modern request's
// _meta) tells of the client. A request over a bound is refused with
// -32602, naming the field and the limit, before anything of it is kept.

const (
	// DefaultMaxSubscriptions is how many resources one session, or one
	// subscriptions/listen stream, may subscribe to. A client subscribes
	// to what it shows the user, a handful of resources; a thousand is
	// more than any library's client has open, and keeps what one client
	// can make the server hold to MaxURILength times that (2 MiB) however
	// large the library is. --max-subscriptions raises it for a client
	// that follows a whole large library.
	DefaultMaxSubscriptions = 1000

	// MaxURILength is the longest resource URI a subscription may name,
	// in bytes. The resources a server serves have names and paths of a
	// few dozen bytes; 2 KiB leaves room for any real one many times over,
	// while a client can no longer make a subscription cost a megabyte.
	MaxURILength = 2 << 10

	// DefaultMaxSubscriptionBytes bounds what the resource subscriptions
	// of all sessions and subscriptions/listen streams take together,
	// each its URI's length and SubscriptionCost. Without it, every
	// session could keep DefaultMaxSubscriptions of the longest URIs,
	// 2 MiB a session and 20 GiB at the default --max-sessions; with it,
	// the server keeps at most 16 MiB of them, which is some 150,000
	// subscriptions to URIs of a usual 50 bytes: a thousand clients each
	// following a library of a hundred resources.
	DefaultMaxSubscriptionBytes = 16 << 20

	// SubscriptionCost is what one subscription takes besides its URI:
	// its map entry and string header.
	SubscriptionCost = 64

	// MaxClientInfoField is the longest clientInfo name, title or version,
	// in bytes. Clients send a product name and a version number; 256
	// bytes holds any of them, and a session keeps them for its life (the
	// logs and telemetry name the client by them).
	MaxClientInfoField = 256

	// MaxCapabilitiesSize is the largest capabilities object a client may
	// declare, in bytes. The capabilities of today's clients take well
	// under 1 KiB (sampling, elicitation, roots, experimental flags);
	// 16 KiB leaves room for those of tomorrow, and a session keeps
	// what it acts on of them for its life.
	MaxCapabilitiesSize = 16 << 10
)

// limitError is the -32602 refusal of a value over a bound; its details
// name the field, the value's size and the limit.
func limitError(what, why, how, field string, size, limit int) error {
	return &fault.Error{Code: CodeInvalidParams, What: what, Why: why, How: how,
		Details: map[string]any{"field": field, "size": size, "limit": limit}}
}

// checkURI refuses a subscription to a URI longer than MaxURILength.
func checkURI(field, uri string) error {
	if len(uri) <= MaxURILength {
		return nil
	}
	return limitError(fmt.Sprintf("%s is %d bytes long, over the limit of %d", field, len(uri), MaxURILength),
		"the server serves no resource with a longer URI, so it keeps no subscription to one",
		"subscribe to a uri from resources/list", field, len(uri), MaxURILength)
}

// tooManySubscriptions refuses a session's subscription past limit.
func tooManySubscriptions(limit int) error {
	return limitError(fmt.Sprintf("params.uri would be the session's resource subscription number %d, over the limit of %d", limit+1, limit),
		"the server keeps at most that many resource subscriptions per session",
		"unsubscribe from resources you no longer show, or ask the operator to raise --max-subscriptions",
		"params.uri", limit+1, limit)
}

// subscriptionsFull refuses a subscription of size bytes that would take
// the server's subscriptions (now bytes) over limit, which all sessions
// and listen streams share.
func subscriptionsFull(field string, size int, now, limit int64) error {
	return limitError(fmt.Sprintf("%s would take the server's resource subscriptions from %d to %d bytes, over its limit of %d", field, now, now+int64(size), limit),
		"the server keeps at most that many bytes of resource subscriptions for all sessions and subscriptions/listen streams together, so that no number of clients can make it hold more",
		"retry later, once other subscriptions have ended, or subscribe to fewer resources; unsubscribe from those you no longer show",
		field, size, int(limit))
}

// subscriptionSize is what a subscription to uri takes of the server's
// MaxSubscriptionBytes.
func subscriptionSize(uri string) int { return len(uri) + SubscriptionCost }

// holdSubscriptions counts size more bytes of subscriptions, unless that
// would take the server's over MaxSubscriptionBytes; field names what is
// refused.
func (e *Engine) holdSubscriptions(field string, size int) error {
	limit := e.opts.MaxSubscriptionBytes
	for {
		now := e.subscribed.Load()
		if now+int64(size) > limit {
			return subscriptionsFull(field, size, now, limit)
		}
		if e.subscribed.CompareAndSwap(now, now+int64(size)) {
			return nil
		}
	}
}

// letGoSubscriptions uncounts size bytes of subscriptions that ended.
func (e *Engine) letGoSubscriptions(size int) { e.subscribed.Add(-int64(size)) }

// tooManyListened refuses a subscriptions/listen that names more than
// limit resources.
func tooManyListened(field string, n, limit int) error {
	return limitError(fmt.Sprintf("%s lists %d resources, over the limit of %d", field, n, limit),
		"the server keeps at most that many resource subscriptions per subscriptions/listen stream",
		"listen to the resources you show, or ask the operator to raise --max-subscriptions", field, n, limit)
}

// checkPeer refuses what a client says of itself when it is over the
// bounds a session (or a listen stream) keeps it under: each clientInfo
// field at most MaxClientInfoField bytes, the capabilities object at most
// MaxCapabilitiesSize. info and capsField name the fields as the client's
// message has them.
func checkPeer(info string, impl Implementation, capsField string, caps json.RawMessage) error {
	for _, f := range []struct{ name, v string }{{"name", impl.Name}, {"title", impl.Title}, {"version", impl.Version}} {
		if len(f.v) > MaxClientInfoField {
			field := info + "." + f.name
			return limitError(fmt.Sprintf("%s is %d bytes long, over the limit of %d", field, len(f.v), MaxClientInfoField),
				"the server keeps what a client says of itself for as long as it serves it",
				"send the client's product name and version, not more", field, len(f.v), MaxClientInfoField)
		}
	}
	if len(caps) > MaxCapabilitiesSize {
		return limitError(fmt.Sprintf("%s is %d bytes long, over the limit of %d", capsField, len(caps), MaxCapabilitiesSize),
			"the server keeps what a client declares it can do for as long as it serves it",
			"declare the capabilities the client has (sampling, elicitation, roots), without payloads", capsField, len(caps), MaxCapabilitiesSize)
	}
	return nil
}
