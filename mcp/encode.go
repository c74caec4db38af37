package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/sourcegraph/jsonrpc2"
)

// This file is the encode stage: a request's answer becomes the bytes
// handed to its transport, once, into a buffer of its own (see
// transport.go). Both eras' responses are written here; a 2026-07-28
// result also carries what that revision puts on every result.

// ErrorResponse encodes the JSON-RPC error response to request id (nil:
// an id that could not be read), with the codes of the era modern says.
func (e *Engine) ErrorResponse(id json.RawMessage, err error, modern bool) []byte {
	return e.errorResponse(id, err, modern)
}

// errorReply is the response to request id that answers it with err.
func errorReply(e *Engine, id json.RawMessage, err error, modern bool) Outgoing {
	return Outgoing{Kind: KindResponse, Data: e.errorResponse(id, err, modern), Err: err}
}

func (e *Engine) errorResponse(id json.RawMessage, err error, modern bool) []byte {
	data, encErr := encodeResponse(id, nil, ErrorObjectFor(err, modern))
	if encErr != nil {
		e.log.Error("encode error response", "err", encErr)
	}
	return data
}

// respond encodes the response to r, an admitted request, and hands it
// over, giving back its in-flight slot.
func (e *Engine) respond(r *Request, res any, err error) {
	data, sent := e.answer(r, res, err)
	handOver(r.s, r.route, Outgoing{Kind: KindResponse, Data: data, Err: sent}, r.s != nil)
}

// handOver gives a response to rt, or, when it has none, to the outbox of
// session s. slot says that it answers a request admitted on s, whose
// in-flight slot is given back once the transport has the response, so no
// handler waits on a slow client.
func handOver(s *Session, rt Route, m Outgoing, slot bool) {
	if rt != nil {
		rt.Push(m)
		if slot {
			<-s.slots
		}
		return
	}
	if slot {
		// Its slot reserved room for it: it never waits for the outbox.
		s.push(m, true)
		return
	}
	s.enqueue(m)
}

// answer encodes the response to r: for a modern request with the
// members that era puts on every result. It returns the error the
// response carries (nil for a result), for a transport that gives errors
// a status of their own.
func (e *Engine) answer(r *Request, res any, err error) ([]byte, error) {
	res, err = inputRequired(r, res, err)
	var rpcErr *jsonrpc2.Error
	if err != nil {
		res, rpcErr = nil, ErrorObjectFor(err, r.modern)
	}
	if !r.modern || rpcErr != nil {
		data, encErr := encodeResponse(r.ID, res, rpcErr)
		if encErr != nil {
			e.log.Error("encode response", "method", r.Method, "err", encErr)
			err = encErr
		}
		return data, err
	}
	data, encErr := encodeModernResponse(r.ID, res, e.resultHead(r, res))
	if encErr != nil {
		e.log.Error("encode response", "method", r.Method, "err", encErr)
		data, _ = encodeResponse(r.ID, nil, ErrorObjectFor(encErr, true))
		return data, encErr
	}
	return data, nil
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

// serverInfoMember encodes the _meta member naming the server.
func serverInfoMember(info Implementation) []byte {
	b, err := json.Marshal(info)
	if err != nil {
		b = []byte(`{"name":"","version":""}`)
	}
	return append([]byte(`"`+MetaServerInfo+`":`), b...)
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
