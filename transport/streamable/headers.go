package streamable

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// What a POST of the 2026-07-28 era mirrors in its headers, checked
// against its body before it runs: that revision has no session, so every
// POST names its revision in MCP-Protocol-Version as well as in its
// _meta, mirrors its method and name in Mcp-Method and Mcp-Name, and a
// tool's marked arguments in Mcp-Param-*, so that any replica, or a
// gateway, can route it on its headers alone.

const (
	// HeaderMethod and HeaderName mirror a modern request's method and
	// its params.name (or params.uri).
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// checkHeaders checks what a modern POST mirrors in its headers against
// its body, as the revision requires of a server that reads the body: a
// load balancer or gateway may have routed or authorised the request on
// the headers alone.
func checkHeaders(r *http.Request, in *mcp.Inbound) error {
	if v := r.Header.Get(HeaderProtocolVersion); v == "" {
		return mismatch("missing "+HeaderProtocolVersion+" header",
			"every POST of revision "+mcp.Version20260728+" names its revision in a header as well as in params._meta",
			fmt.Sprintf("send %s: %s", HeaderProtocolVersion, in.ProtocolVersion()))
	} else if body := in.ProtocolVersion(); body != "" && body != v {
		return mismatch(fmt.Sprintf("%s header %q does not match params._meta %q", HeaderProtocolVersion, v, body),
			"the header and the body must name the same revision",
			"send the same revision in both")
	}
	method := in.Method()
	if v, ok := headerValue(r, HeaderMethod); !ok {
		return mismatch("missing "+HeaderMethod+" header", "every request of this revision mirrors its method in "+HeaderMethod,
			fmt.Sprintf("send %s: %s", HeaderMethod, method))
	} else if v != method {
		return mismatch(fmt.Sprintf("%s header %q does not match the body's method %q", HeaderMethod, v, method),
			"the header and the body must name the same method", "send the same method in both")
	}
	if !mcp.NamedMethod(method) {
		return nil
	}
	name, _ := in.Name()
	raw, ok := headerValue(r, HeaderName)
	if !ok {
		return mismatch("missing "+HeaderName+" header", method+" mirrors params."+nameField(method)+" in "+HeaderName,
			fmt.Sprintf("send %s: %s", HeaderName, name))
	}
	v, err := decodeHeaderValue(raw)
	if err != nil {
		return mismatch(fmt.Sprintf("%s header is not valid: %v", HeaderName, err),
			"a value outside printable ASCII is sent as =?base64?…?=", "encode the value as the revision says")
	}
	if v != name {
		return mismatch(fmt.Sprintf("%s header %q does not match params.%s %q", HeaderName, v, nameField(method), name),
			"the header and the body must name the same "+nameField(method), "send the same value in both")
	}
	return nil
}

func nameField(method string) string {
	if method == mcp.MethodResourcesRead {
		return "uri"
	}
	return "name"
}

// headerValue returns the header's value when it is present, even empty.
func headerValue(r *http.Request, name string) (string, bool) {
	v, ok := r.Header[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// decodeHeaderValue undoes the revision's encoding of a header value that
// is not plain printable ASCII: =?base64?…?= around its UTF-8 bytes, in
// padded standard Base64. Anything not wrapped that way is the value
// itself.
func decodeHeaderValue(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, nil
	}
	if inner, ok = strings.CutSuffix(inner, "?="); !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil {
		return "", fmt.Errorf("%q is not padded standard Base64: %w", inner, err)
	}
	return string(b), nil
}

// errorStatus is the HTTP status the 2026-07-28 era gives a response
// that answers with err (nil: a result). Its JSON-RPC code comes from
// mcp.ErrorObjectFor, the one mapping of errors to codes.
func errorStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	switch mcp.ErrorObjectFor(err, true).Code {
	case jsonrpcMethodNotFound:
		return http.StatusNotFound
	case jsonrpcInvalidParams, mcp.RPCHeaderMismatch, mcp.RPCMissingCapability, mcp.RPCUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

const (
	jsonrpcMethodNotFound = -32601
	jsonrpcInvalidParams  = -32602
)

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call
// against its arguments: every argument the tool's input schema marks with
// x-mcp-header, when present in the call, must be mirrored, and match.
func (h *Handler) checkParamHeaders(r *http.Request, in *mcp.Inbound) error {
	name, _ := in.Name()
	mirrored, err := h.e.ParamHeaders(r.Context(), name)
	if err != nil || len(mirrored) == 0 {
		return nil // an unknown tool is the call's own error
	}
	var args map[string]json.RawMessage
	if a := in.Arguments(); len(a) > 0 {
		if json.Unmarshal(a, &args) != nil {
			return nil // the call reports its bad arguments
		}
	}
	for _, p := range mirrored {
		raw, ok := args[p.Property]
		if !ok || string(raw) == "null" {
			continue
		}
		header := "Mcp-Param-" + p.Header
		hv, present := headerValue(r, header)
		if !present {
			return mismatch(fmt.Sprintf("missing %s header for argument %q", header, p.Property),
				"tool "+name+" mirrors that argument in a header, so gateways can route on it",
				fmt.Sprintf("send %s with the argument's value", header))
		}
		v, err := decodeHeaderValue(hv)
		if err != nil {
			return mismatch(fmt.Sprintf("%s header is not valid: %v", header, err),
				"a value outside printable ASCII is sent as =?base64?…?=", "encode the value as the revision says")
		}
		if !mcp.SameParamValue(raw, v) {
			return mismatch(fmt.Sprintf("%s header %q does not match argument %q", header, v, p.Property),
				"the header and the body must carry the same value", "send the same value in both")
		}
	}
	return nil
}

func mismatch(what, why, how string) error {
	return &fault.Error{Code: mcp.CodeHeaderMismatch, What: what, Why: why, How: how}
}
