package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// StatelessConfig describes a run over Streamable HTTP at protocol
// revision 2026-07-28 or later, which has neither initialize nor sessions:
// every POST stands alone. Its headers name the protocol revision, the
// method and, for prompts/get, tools/call and resources/read, the name (or
// URI) the request is about; its params carry the revision, the client and
// its capabilities in _meta. The answer is JSON or an event stream carrying
// the response, whose result says "resultType":"complete".
type StatelessConfig struct {
	URL string // the MCP endpoint, e.g. http://127.0.0.1:3000/mcp
	// Work's Params must be a JSON object (or empty); the driver adds
	// _meta to it.
	Work
	Clients int // concurrent clients, one request in flight each
	// Protocol is the revision sent; default "2026-07-28".
	Protocol string
	// PID, when set, is the server process to read CPU and memory from.
	PID int
}

// StatelessProtocol is the protocol revision Stateless speaks by default,
// the first without sessions.
const StatelessProtocol = "2026-07-28"

// Stateless runs cfg: all clients warm up, meet at a barrier, then each
// makes Requests requests one after another on a keep-alive connection of
// its own. Latency and checks are as for Streamable; besides, every result
// must say "resultType":"complete".
func Stateless(ctx context.Context, cfg StatelessConfig) (Stats, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return Stats{}, fmt.Errorf("stateless url: %w", err)
	}
	proto := cfg.Protocol
	if proto == "" {
		proto = StatelessProtocol
	}
	params, headers, err := statelessRequest(cfg.Method, cfg.Params, proto)
	if err != nil {
		return Stats{}, err
	}
	work := cfg.Work
	work.Params = params
	open := func(ctx context.Context) (rpcSession, error) {
		// Nothing to open: the connection is dialled by the first request.
		return newHTTPSession(ctx, u, headers), nil
	}
	return load{sessions: cfg.Clients, work: work, pid: cfg.PID, open: open, complete: true}.run(ctx)
}

// Keys of the request _meta that replaces initialize from 2026-07-28 on.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// statelessClient is the clientInfo the driver sends.
var statelessClient = json.RawMessage(`{"name":"mcpbench","version":"1"}`)

// statelessRequest returns params with the request _meta added (its
// protocol version and client set, client capabilities {} unless params
// has some, other keys kept), and the headers
// every POST of the run carries: the Streamable ones, MCP-Protocol-Version,
// Mcp-Method and, for a method about a named thing, Mcp-Name.
func statelessRequest(method string, params json.RawMessage, proto string) (json.RawMessage, []header, error) {
	if method == "" {
		return nil, nil, errors.New("stateless: no method")
	}
	fields := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &fields); err != nil || fields == nil {
			return nil, nil, fmt.Errorf("stateless: params must be a JSON object: %.100s", params)
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil || meta == nil {
			return nil, nil, fmt.Errorf("stateless: params._meta must be a JSON object: %.100s", m)
		}
	}
	v, err := json.Marshal(proto)
	if err != nil {
		return nil, nil, err
	}
	meta[metaProtocolVersion] = v
	meta[metaClientInfo] = statelessClient
	if _, ok := meta[metaClientCapabilities]; !ok {
		meta[metaClientCapabilities] = json.RawMessage(`{}`)
	}
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, err
	}

	if !headerSafe(method) {
		return nil, nil, fmt.Errorf("stateless: method %q cannot travel in a header as it is", method)
	}
	headers := append(postHeaders(), header{"MCP-Protocol-Version", proto}, header{"Mcp-Method", method})
	if key := nameKey(method); key != "" {
		var name string
		if err := json.Unmarshal(fields[key], &name); err != nil || name == "" {
			return nil, nil, fmt.Errorf("stateless: %s needs a string params.%s for its Mcp-Name header", method, key)
		}
		// A value that is not plain ASCII travels base64-encoded, which
		// not every server decodes; the benchmarks' names need none.
		if !headerSafe(name) {
			return nil, nil, fmt.Errorf("stateless: params.%s %q would need encoding in Mcp-Name", key, name)
		}
		headers = append(headers, header{"Mcp-Name", name})
	}
	return out, headers, nil
}

// nameKey is the params member a method's Mcp-Name header repeats, or "".
func nameKey(method string) string {
	switch method {
	case "prompts/get", "tools/call":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// headerSafe reports whether s can be a header value as it is: printable
// ASCII without surrounding blanks, and not in the form of an encoded
// value (=?base64?…?=).
func headerSafe(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return !(len(s) >= 11 && s[:9] == "=?base64?" && s[len(s)-2:] == "?=")
}
