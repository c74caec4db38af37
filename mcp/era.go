package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// MCP has two eras. Revisions up to 2025-11-25 ("legacy") open with an
// initialize handshake, and a session keeps what it negotiated. From
// 2026-07-28 on ("modern") there is no handshake and no session: every
// request names its revision, client and capabilities in its _meta, and is
// answered on its own. A request is modern when its _meta names a
// revision other than a legacy one (server/discover always is); everything
// else follows the legacy rules. Both eras are served at once, on the same
// transports, by the same method table.

// Version20260728 is the first modern revision.
const Version20260728 = "2026-07-28"

// ModernVersions are the modern revisions served, newest first.
var ModernVersions = []string{Version20260728}

// AllVersions lists every revision served, newest first: server/discover's
// supportedVersions, and the list an unsupported-version error offers.
func AllVersions() []string {
	out := slices.Clone(ModernVersions)
	for i := len(SupportedVersions) - 1; i >= 0; i-- {
		out = append(out, SupportedVersions[i])
	}
	return out
}

// IsModernVersion reports whether v is a modern revision this server serves.
func IsModernVersion(v string) bool { return slices.Contains(ModernVersions, v) }

// The _meta keys of the modern era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Methods of the modern era.
const (
	MethodServerDiscover      = "server/discover"
	MethodSubscriptionsListen = "subscriptions/listen"

	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
)

// modernMeta is the _meta of a modern request.
type modernMeta struct {
	ProtocolVersion    *string         `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo         *Implementation `json:"io.modelcontextprotocol/clientInfo"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	LogLevel           *string         `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      json.RawMessage `json:"progressToken"`
	TraceParent        string          `json:"traceparent"`
	TraceState         string          `json:"tracestate"`
}

// Inbound is one message read ahead of serving it, so a transport can
// tell its era and check what it mirrors in headers against the body
// before handing it on. Only the modern era's transports need it; a
// session reads its frames itself.
type Inbound struct {
	f    frame
	meta *modernMeta // nil when the params carry no _meta
	// metaErr: the params or their _meta are not what the revision
	// defines; reported when the request is prepared.
	metaErr error
	name    string // params.name (tools/call, prompts/get) or params.uri (resources/read)
	named   bool
	args    json.RawMessage // params.arguments of tools/call
}

// ParseInbound reads one message. The error, for a message that is not a
// JSON-RPC message at all, is a fault whose code is CodeParseError or
// CodeInvalidRequest. data belongs to the Inbound from then on (see
// transport.go).
func ParseInbound(data []byte) (*Inbound, error) {
	f, _, err := decodeFrame(data)
	if err != nil {
		return nil, err
	}
	in := &Inbound{f: f}
	in.readParams()
	return in, nil
}

// paramsHead is the part of a request's params an Inbound reads.
type paramsHead struct {
	Meta      json.RawMessage `json:"_meta"`
	Name      *string         `json:"name"`
	URI       *string         `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
}

// decodeFast reads the params of the common shape in one pass of the
// scanner, as the hot methods' params are (see fastparams.go): every
// modern request passes here and again through Request.Decode, and
// encoding/json would cost more than the rest of the read. Anything else
// (a member it does not know, one repeated, a name that is not a plain
// string) is left to encoding/json.
func (h *paramsHead) decodeFast(data []byte) bool {
	s := &scanner{data: data}
	str := func(dst **string) bool {
		if *dst != nil {
			return false
		}
		v, ok := s.stringValue()
		*dst = &v
		return ok
	}
	raw := func(dst *json.RawMessage) bool {
		start := s.i
		if *dst != nil || s.value(1) != nil {
			return false
		}
		*dst = s.data[start:s.i:s.i]
		return true
	}
	ok := s.fields(func(key []byte) bool {
		switch string(key) {
		case `"_meta"`:
			return raw(&h.Meta)
		case `"name"`:
			return str(&h.Name)
		case `"uri"`:
			return str(&h.URI)
		case `"arguments"`:
			return raw(&h.Arguments)
		}
		return false
	})
	return ok && s.end() == nil
}

// readParams picks out of the params what the era and the headers depend
// on: _meta, and the name a transport mirrors in a header.
func (in *Inbound) readParams() {
	p := in.f.params
	if len(p) == 0 || string(p) == "null" {
		return
	}
	var head paramsHead
	if !head.decodeFast(p) {
		head = paramsHead{}
		if err := json.Unmarshal(p, &head); err != nil {
			in.metaErr = protocolError(CodeInvalidParams, "invalid params for "+in.f.method,
				describeJSONError(err), "send params as an object, with _meta as the revision defines it")
			return
		}
	}
	switch in.f.method {
	case MethodToolsCall, MethodPromptsGet:
		if head.Name != nil {
			in.name, in.named = *head.Name, true
		}
		in.args = head.Arguments
	case MethodResourcesRead:
		if head.URI != nil {
			in.name, in.named = *head.URI, true
		}
	}
	if len(head.Meta) == 0 || string(head.Meta) == "null" {
		return
	}
	var m modernMeta
	if err := json.Unmarshal(head.Meta, &m); err != nil {
		in.metaErr = protocolError(CodeInvalidParams, "invalid _meta for "+in.f.method,
			describeJSONError(err), "send _meta as the revision defines it: "+MetaProtocolVersion+" a string, "+
				MetaClientCapabilities+" an object")
		return
	}
	in.meta = &m
}

// Method returns the message's method ("" for a response).
func (in *Inbound) Method() string { return in.f.method }

// IsRequest reports whether the message is a request (it has an id and a
// method): a notification or a response gets no answer.
func (in *Inbound) IsRequest() bool { return in.f.kind == kindRequest }

// ID returns the request's id as sent, or nil.
func (in *Inbound) ID() json.RawMessage { return in.f.id }

// ProtocolVersion returns the revision the params' _meta names, or "".
func (in *Inbound) ProtocolVersion() string {
	if in.meta == nil || in.meta.ProtocolVersion == nil {
		return ""
	}
	return *in.meta.ProtocolVersion
}

// Modern reports whether the message follows the modern era's rules: its
// _meta names a revision that is not a legacy one, or it is
// server/discover, which only the modern era has.
func (in *Inbound) Modern() bool {
	if in.f.method == MethodServerDiscover {
		return true
	}
	v := in.ProtocolVersion()
	return v != "" && !IsSupportedVersion(v)
}

// Name returns what the Mcp-Name header mirrors: params.name of tools/call
// and prompts/get, params.uri of resources/read. ok is false for other
// methods and when the params lack it.
func (in *Inbound) Name() (name string, ok bool) { return in.name, in.named }

// Arguments returns params.arguments of a tools/call, or nil.
func (in *Inbound) Arguments() json.RawMessage { return in.args }

// NamedMethod reports whether method's requests carry a name that
// transports mirror (the Mcp-Name header).
func NamedMethod(method string) bool {
	return method == MethodToolsCall || method == MethodPromptsGet || method == MethodResourcesRead
}

// modernPrefilter is what every modern request's params hold: a cheap
// test that spares legacy frames a second look at their params.
var modernPrefilter = []byte(MetaProtocolVersion)

// modernFrame reports whether a frame a session received is a modern
// request, and returns it read.
func modernFrame(f frame) (*Inbound, bool) {
	if f.kind != kindRequest {
		return nil, false
	}
	if f.method != MethodServerDiscover && !bytes.Contains(f.params, modernPrefilter) {
		return nil, false
	}
	in := &Inbound{f: f}
	in.readParams()
	return in, in.Modern()
}

// peerOf checks a modern request's _meta and returns the peer it describes
// and the log level it asks for (levelNone: none).
func peerOf(in *Inbound) (*Peer, Level, error) {
	if in.metaErr != nil {
		return nil, levelNone, in.metaErr
	}
	m := in.meta
	if m == nil || m.ProtocolVersion == nil || *m.ProtocolVersion == "" {
		return nil, levelNone, protocolError(CodeInvalidParams, in.f.method+" has no "+MetaProtocolVersion+" in its _meta",
			"every request of revision "+Version20260728+" and later names its revision in params._meta",
			fmt.Sprintf(`add "_meta": {%q: %q, %q: {}} to the params, or send initialize first to speak an older revision`,
				MetaProtocolVersion, Version20260728, MetaClientCapabilities))
	}
	v := *m.ProtocolVersion
	if !IsModernVersion(v) {
		return nil, levelNone, UnsupportedVersion(v)
	}
	if len(m.ClientCapabilities) == 0 || m.ClientCapabilities[0] != '{' {
		return nil, levelNone, protocolError(CodeInvalidParams, in.f.method+" has no "+MetaClientCapabilities+" object in its _meta",
			"revision "+v+" requires the client's capabilities on every request",
			fmt.Sprintf(`add %q: {} to params._meta, with the capabilities the client has`, MetaClientCapabilities))
	}
	p := &Peer{ProtocolVersion: v}
	_ = json.Unmarshal(m.ClientCapabilities, &p.Capabilities) // unknown shapes are simply not acted on
	if m.ClientInfo != nil {
		p.Info = *m.ClientInfo
	}
	level := levelNone
	if m.LogLevel != nil {
		l, ok := parseLevel(*m.LogLevel)
		if !ok {
			return nil, levelNone, protocolError(CodeInvalidParams, fmt.Sprintf("unknown log level %q in %s", *m.LogLevel, MetaLogLevel),
				"MCP log levels are syslog's", "use one of "+strings.Join(levelNames[:], ", "))
		}
		level = l
	}
	return p, level, nil
}

// UnsupportedVersion is the error for a request naming revision v, which
// this server does not serve; its data lists the ones it does.
func UnsupportedVersion(v string) error {
	return &fault.Error{Code: CodeUnsupportedVersion,
		What:    fmt.Sprintf("unsupported protocol version %q", v),
		Why:     "this server speaks " + strings.Join(AllVersions(), ", "),
		How:     fmt.Sprintf("retry with %s, or send initialize to speak an older revision", Version20260728),
		Details: map[string]any{"supported": AllVersions(), "requested": v}}
}
