package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

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

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer: a buffer grown past this (a 100 KB prompt) is left to
// the garbage collector rather than kept for every later message.
const maxPooledBuffer = 64 << 10

func getBuffer() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		b.Reset()
		bufPool.Put(b)
	}
}

// encodeJSON appends v's compact JSON without HTML escaping (prompts are
// full of <, > and &; escaping them bloats every message).
func encodeJSON(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case json.RawMessage:
		buf.Write(v)
		return nil
	case []byte:
		buf.Write(v)
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// encodeResponse builds one response message, as appendResponse writes
// it, in a buffer of its own: the hot results tell their size (fastSize),
// so it is allocated once, at the size it ends up, and handed over as is.
func encodeResponse(id json.RawMessage, result any, rpcErr *jsonrpc2.Error) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+fastSize(result)))
	err := appendResponse(buf, id, result, rpcErr)
	return buf.Bytes(), err
}

// appendResponse writes one response message into buf, replacing what it
// held. A result that cannot be encoded is answered with an internal error
// saying so, and the encoding error is returned for the caller to log: the
// message in buf is complete either way, so the request is still answered.
func appendResponse(buf *bytes.Buffer, id json.RawMessage, result any, rpcErr *jsonrpc2.Error) error {
	err := writeResponse(buf, id, result, rpcErr)
	if err != nil {
		// ErrorObject's data is JSON it marshalled itself: this one encodes.
		_ = writeResponse(buf, id, nil, ErrorObject(err))
	}
	return err
}

func writeResponse(buf *bytes.Buffer, id json.RawMessage, result any, rpcErr *jsonrpc2.Error) error {
	buf.Reset()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if id == nil {
		id = nullID
	}
	buf.Write(id)
	if rpcErr != nil {
		buf.WriteString(`,"error":`)
		if err := encodeJSON(buf, rpcErr); err != nil {
			return err
		}
	} else {
		buf.WriteString(`,"result":`)
		if result == nil {
			buf.WriteString("{}")
		} else if err := appendResult(buf, result); err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
	}
	buf.WriteByte('}')
	return nil
}

// appendResult writes result's JSON, by hand for the hot shapes. Room for
// what they can tell of their size is made first, so that appending into
// the buffer's free space does not outgrow it: that would copy the result
// into a new array, and then again into the buffer.
func appendResult(buf *bytes.Buffer, result any) error {
	buf.Grow(fastSize(result))
	if fast, ok := appendFast(buf.AvailableBuffer(), result); ok {
		buf.Write(fast)
		return nil
	}
	return encodeJSON(buf, result)
}

// encodeRequest builds a notification (id < 0 means none) or a server→client request.
func encodeRequest(id int64, method string, params any) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(`{"jsonrpc":"2.0",`)
	if id >= 0 {
		buf.WriteString(`"id":`)
		buf.WriteString(strconv.FormatInt(id, 10))
		buf.WriteByte(',')
	}
	buf.WriteString(`"method":`)
	if err := encodeJSON(buf, method); err != nil {
		return nil, err
	}
	if params != nil {
		buf.WriteString(`,"params":`)
		if err := encodeJSON(buf, params); err != nil {
			return nil, fmt.Errorf("encode params of %s: %w", method, err)
		}
	}
	buf.WriteByte('}')
	return bytes.Clone(buf.Bytes()), nil
}
