package mcp

import (
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

// peerOf checks a modern request's _meta and returns the peer it describes
// and the log level it asks for (levelNone: none).
func peerOf(in *Inbound) (*Peer, Level, error) {
	in.readParams()
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
	var info Implementation
	if m.ClientInfo != nil {
		info = *m.ClientInfo
	}
	// Bounded as initialize's: a subscriptions/listen stream keeps its
	// request's peer for as long as it lasts.
	if err := checkPeer(fmt.Sprintf("params._meta[%q]", MetaClientInfo), info,
		fmt.Sprintf("params._meta[%q]", MetaClientCapabilities), m.ClientCapabilities); err != nil {
		return nil, levelNone, err
	}
	p := &Peer{ProtocolVersion: v, Info: info}
	_ = json.Unmarshal(m.ClientCapabilities, &p.Capabilities) // unknown shapes are simply not acted on
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
