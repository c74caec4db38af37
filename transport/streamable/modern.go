package streamable

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// The modern era (revision 2026-07-28 and later) on /mcp: no session.
// Every POST carries one message that names its revision in
// MCP-Protocol-Version and in its _meta, mirrors its method and name in
// Mcp-Method and Mcp-Name, and is answered on its own response, so any
// replica could answer it. GET and DELETE are the legacy era's.

const (
	// HeaderMethod and HeaderName mirror a modern request's method and
	// its params.name (or params.uri).
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// modernVersionHeader reports whether r's MCP-Protocol-Version names a
// revision that is not a legacy one: the request is the modern era's (an
// unknown revision included, to be told which ones are served).
func modernVersionHeader(r *http.Request) bool {
	v := r.Header.Get(HeaderProtocolVersion)
	return v != "" && !mcp.IsSupportedVersion(v)
}

// modern serves one modern POST whose body has been read; in is its
// message, when already parsed.
func (h *Handler) modern(w http.ResponseWriter, r *http.Request, body []byte, in *mcp.Inbound, acceptJSON, acceptEvents bool) {
	if in == nil {
		var err error
		if in, err = mcp.ParseInbound(body); err != nil {
			httpx.WriteError(w, r, http.StatusBadRequest, err)
			return
		}
	}
	if !in.IsRequest() {
		// A notification (notifications/cancelled belongs to stdio; on HTTP
		// closing the stream cancels) or a response (no server→client
		// requests in this era): accepted, and nothing to do.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := checkHeaders(r, in); err != nil {
		h.writeModernError(w, r, http.StatusBadRequest, in, err)
		return
	}
	x, err := h.e.Prepare(in)
	if err == nil && in.Method() == mcp.MethodToolsCall {
		err = h.checkParamHeaders(r, in)
	}
	if err != nil {
		h.writeModernError(w, r, errorStatus(mcp.ErrorObjectFor(err, true).Code), in, err)
		return
	}
	rt := &route{events: acceptEvents, wake: make(chan struct{}, 1)}
	if x.Quick() {
		x.Run(r.Context(), rt)
	} else {
		go x.Run(r.Context(), rt)
	}
	h.answerModern(w, r, rt, acceptJSON && !(h.opts.PreferStreams && acceptEvents), acceptJSON)
}

// writeModernError answers a modern request refused before it ran: a
// JSON-RPC error naming its id, with the status the revision gives it.
func (h *Handler) writeModernError(w http.ResponseWriter, r *http.Request, status int, in *mcp.Inbound, err error) {
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	hdr["Cache-Control"] = noStore
	w.WriteHeader(status)
	w.Write(h.e.ErrorResponse(in.ID(), err, true))
}

// answerModern writes rt's messages: the response as JSON when it comes
// first and the client takes JSON, otherwise an event stream until the
// response, the client's leaving or the end of the server.
func (h *Handler) answerModern(w http.ResponseWriter, r *http.Request, rt *route, acceptJSON, acceptsJSON bool) {
	defer rt.abandon()
	for {
		select {
		case <-rt.wake:
		case <-r.Context().Done():
			return
		}
		msgs := rt.take()
		if len(msgs) == 0 {
			continue
		}
		if msgs[0].Kind == mcp.KindUnanswered {
			return
		}
		// An error is answered as JSON whenever the client takes it: the
		// revision gives errors an HTTP status of their own, which a
		// stream, already 200, could not carry.
		if m := msgs[0]; m.Kind == mcp.KindResponse && (acceptJSON || m.ErrorCode != 0 && acceptsJSON) {
			hdr := w.Header()
			hdr["Content-Type"] = jsonContentType
			hdr["Cache-Control"] = noStore
			hdr["Content-Length"] = []string{strconv.Itoa(len(m.Data))}
			w.WriteHeader(errorStatus(m.ErrorCode))
			w.Write(m.Data)
			return
		}
		rt.putBack(msgs)
		break
	}
	ew := httpx.NewEventWriter(w, h.opts.WriteTimeout)
	if ew.Start() == nil {
		h.relay(r, rt, ew, nil)
	}
}

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

// errorStatus is the HTTP status of a modern response whose error has
// JSON-RPC code code (0: a result).
func errorStatus(code int64) int {
	switch code {
	case 0:
		return http.StatusOK
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
