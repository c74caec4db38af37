package mcp

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/sourcegraph/jsonrpc2"
)

// This file is the decode stage: bytes a transport read become a frame
// (one JSON-RPC message, its members slices of the bytes), or the fault to
// answer instead. The envelope and the hot methods' params are read by the
// validating scanner of decode_scan.go and decode_params.go in one pass.

// DefaultMaxMessageSize caps one inbound message (4 MiB).
const DefaultMaxMessageSize = 4 << 20

// frameKind says what a decoded frame is.
type frameKind uint8

const (
	kindInvalid frameKind = iota
	kindRequest
	kindNotification
	kindResponse
)

// frame is one decoded inbound JSON-RPC message. We decode into our own
// struct rather than jsonrpc2.Request because that type cannot carry a
// negative id, re-encodes params through a map, and takes "id": null for a
// notification (see LIBRARIES.md).
type frame struct {
	kind   frameKind
	id     json.RawMessage // raw id, echoed exactly in the response
	method string
	params json.RawMessage
	result json.RawMessage
	err    *jsonrpc2.Error
}

var nullID = json.RawMessage("null")

// decodeFrame parses one message in a single pass (scanEnvelope). On
// failure it returns the id to answer with (null when the id could not be
// read) and the fault to send.
func decodeFrame(data []byte) (frame, json.RawMessage, error) {
	// The frame is the session's (see transport.go): its raw members are
	// slices of it, with no copy.
	data = bytes.TrimSpace(data)
	env, err := scanEnvelope(data)
	var te *typeError
	switch {
	case err == nil, errors.As(err, &te):
		// An object: whatever else is wrong with it, its id (when valid) is
		// the one to answer with.
	case errors.Is(err, errBatch):
		return frame{}, nullID, protocolError(CodeInvalidRequest, "batch requests are not supported",
			"MCP 2025-06-18 and later removed JSON-RPC batching", "send each message on its own")
	case errors.Is(err, errNotObject):
		return frame{}, nullID, protocolError(CodeInvalidRequest, "the message is not a JSON-RPC object",
			"a JSON-RPC message must be a JSON object", `send an object such as {"jsonrpc":"2.0","id":1,"method":"ping"}`)
	default: // a *syntaxError, scanEnvelope's only other failure
		return frame{}, nullID, protocolError(CodeParseError, "the message is not valid JSON",
			err.Error(), "send one complete JSON object per message")
	}
	idOK, idErr := checkID(env.id)
	answerID := nullID
	if idOK {
		answerID = env.id
	}
	if te != nil {
		return frame{}, answerID, protocolError(CodeInvalidRequest, "the message has a member of the wrong type",
			te.Error(), "check the JSON-RPC 2.0 message shape")
	}
	var rpcErr *jsonrpc2.Error
	if env.errRaw != nil {
		if rpcErr, err = decodeError(env.errRaw); err != nil {
			return frame{}, answerID, protocolError(CodeInvalidRequest, "the message has a member of the wrong type",
				"error must be a JSON-RPC error object", "check the JSON-RPC 2.0 message shape")
		}
	}
	if !env.hasJSONRPC || env.jsonrpc != "2.0" {
		return frame{}, answerID, protocolError(CodeInvalidRequest, `"jsonrpc" must be "2.0"`,
			"the message is missing the JSON-RPC version or has another one", `add "jsonrpc":"2.0"`)
	}
	if idErr != nil {
		return frame{}, nullID, idErr
	}
	f := frame{id: env.id, params: env.params}
	switch {
	case env.hasMethod:
		if env.method == "" {
			return frame{}, answerID, protocolError(CodeInvalidRequest, "the method is empty",
				"a request names the method to call", `set "method", e.g. "ping"`)
		}
		f.method = env.method
		if env.id == nil {
			f.kind = kindNotification
		} else {
			f.kind = kindRequest
		}
	case env.result != nil || rpcErr != nil:
		if env.id == nil {
			return frame{}, nullID, protocolError(CodeInvalidRequest, "a response has no id",
				"responses must name the request they answer", "echo the request's id")
		}
		f.kind = kindResponse
		f.result = env.result
		f.err = rpcErr
	default:
		return frame{}, answerID, protocolError(CodeInvalidRequest, "the message has no method",
			"a request or notification must name a method", `set "method", e.g. "ping"`)
	}
	return f, nil, nil
}

// checkID validates an id: absent, a string, or an integer. A null id is
// refused: JSON-RPC reserves it, and MCP requests must carry a real one.
func checkID(id json.RawMessage) (ok bool, err error) {
	if id == nil {
		return false, nil
	}
	switch id[0] {
	case '"':
		return true, nil
	case 'n':
		return false, protocolError(CodeInvalidRequest, "the id is null",
			"MCP request ids must be a string or an integer", "use a string or integer id, or omit it for a notification")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if bytes.ContainsAny(id, ".eE") {
			return false, protocolError(CodeInvalidRequest, "the id is not an integer",
				"MCP request ids must be a string or an integer", "use an integer or string id")
		}
		return true, nil
	}
	return false, protocolError(CodeInvalidRequest, "the id must be a string or an integer",
		"MCP request ids must be a string or an integer", "use an integer or string id")
}

// idKey normalises an id for map lookups: "1" and 1 differ, "\u0041" and "A"
// do not. Ids come from the envelope scanner or a json.RawMessage, neither
// of which keeps the white space around a value.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(id)
}

// ParseInbound reads one message. The error, for bytes that are not a
// JSON-RPC message, is a *FrameError. data belongs to the Inbound from
// then on (see transport.go).
func ParseInbound(data []byte) (*Inbound, error) {
	f, answerID, err := decodeFrame(data)
	if err != nil {
		fe := fault.As(err)
		if fe == nil {
			fe = protocolError(CodeInvalidRequest, "the message cannot be read", err.Error(), "send one JSON-RPC object")
		}
		return nil, &FrameError{ID: answerID, Err: fe}
	}
	return &Inbound{f: f, size: len(data)}, nil
}

// paramsHead is the part of a request's params an Inbound reads.
type paramsHead struct {
	Meta      json.RawMessage `json:"_meta"`
	Name      *string         `json:"name"`
	URI       *string         `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
}

// decodeFast reads the params of the common shape in one pass of the
// scanner, as the hot methods' params are (see decode_params.go): every
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
	if in.read {
		return
	}
	in.read = true
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
	in.readParams()
	if in.meta == nil || in.meta.ProtocolVersion == nil {
		return ""
	}
	return *in.meta.ProtocolVersion
}

// Modern reports whether the message follows the modern era's rules: its
// _meta names a revision that is not a legacy one, or it is
// server/discover, which only the modern era has. Params that do not
// hold the _meta key of the revision as written are not read at all.
func (in *Inbound) Modern() bool {
	if in.f.method == MethodServerDiscover {
		return true
	}
	if !bytes.Contains(in.f.params, modernPrefilter) {
		return false
	}
	v := in.ProtocolVersion()
	return v != "" && !IsSupportedVersion(v)
}

// Name returns what the Mcp-Name header mirrors: params.name of tools/call
// and prompts/get, params.uri of resources/read. ok is false for other
// methods and when the params lack it.
func (in *Inbound) Name() (name string, ok bool) {
	in.readParams()
	return in.name, in.named
}

// Arguments returns params.arguments of a tools/call, or nil.
func (in *Inbound) Arguments() json.RawMessage {
	in.readParams()
	return in.args
}

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
	return in, in.Modern()
}
