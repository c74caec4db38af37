package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

type refWireMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc2.Error `json:"error"`
}

// decodeFrameReference is the encoding/json decoder scanEnvelope replaced; it
// parses one message. On failure it returns the id to answer
// with (null when the id could not be read) and the fault to send.
func decodeFrameReference(data []byte) (frame, json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	var m refWireMessage
	if err := json.Unmarshal(data, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" {
			if len(data) > 0 && data[0] == '[' {
				return frame{}, nullID, protocolError(CodeInvalidRequest, "batch requests are not supported",
					"MCP 2025-06-18 and later removed JSON-RPC batching", "send each message on its own")
			}
			return frame{}, nullID, protocolError(CodeInvalidRequest, "the message is not a JSON-RPC object",
				"a JSON-RPC message must be a JSON object", `send an object such as {"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		if !json.Valid(data) {
			return frame{}, nullID, protocolError(CodeParseError, "the message is not valid JSON",
				err.Error(), "send one complete JSON object per message")
		}
		// Valid JSON, wrong member types: report what was wrong and answer
		// with the id when we can still read it.
		id := refSalvageID(data)
		return frame{}, id, protocolError(CodeInvalidRequest, "the message has a member of the wrong type",
			describeJSONError(err), "check the JSON-RPC 2.0 message shape")
	}
	idOK, idErr := checkID(m.ID)
	answerID := nullID
	if idOK {
		answerID = m.ID
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return frame{}, answerID, protocolError(CodeInvalidRequest, `"jsonrpc" must be "2.0"`,
			"the message is missing the JSON-RPC version or has another one", `add "jsonrpc":"2.0"`)
	}
	if idErr != nil {
		return frame{}, nullID, idErr
	}
	f := frame{id: m.ID, params: m.Params}
	switch {
	case m.Method != nil:
		if *m.Method == "" {
			return frame{}, answerID, protocolError(CodeInvalidRequest, "the method is empty",
				"a request names the method to call", `set "method", e.g. "ping"`)
		}
		f.method = *m.Method
		if m.ID == nil {
			f.kind = kindNotification
		} else {
			f.kind = kindRequest
		}
	case m.Result != nil || m.Error != nil:
		if m.ID == nil {
			return frame{}, nullID, protocolError(CodeInvalidRequest, "a response has no id",
				"responses must name the request they answer", "echo the request's id")
		}
		f.kind = kindResponse
		f.result = m.Result
		f.err = m.Error
	default:
		return frame{}, answerID, protocolError(CodeInvalidRequest, "the message has no method",
			"a request or notification must name a method", `set "method", e.g. "ping"`)
	}
	return f, nil, nil
}

// refSalvageID reads just the id of a message whose other members were bad.
func refSalvageID(data []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &m) != nil {
		return nullID
	}
	if ok, _ := checkID(m.ID); ok {
		return m.ID
	}
	return nullID
}

// FuzzScanMatchesEncodingJSON: the single-pass scanner classifies every
// input as the encoding/json decoder did: the same kind, id, method,
// params and result, or the same JSON-RPC error code with the same answer
// id. Inputs whose member names differ from the JSON-RPC ones only in case
// are left out: encoding/json matched them, JSON-RPC (and the scanner) do not.
func FuzzScanMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"a":[1,2.5e3,true,null]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"m","data":{"x":"y"}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `[{"jsonrpc":"2.0"}]`, `[]`, `"s"`, `12`, `{`, ``, `nul`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `{"jsonrpc":"2.0","id":{},"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":7}`, `{"jsonrpc":2,"id":1,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"method":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, `{"jsonrpc":"2.0","id":1,"result":null}`,
		`{"jsonrpc":"2.0","id":1,"error":null}`, `{"jsonrpc":"2.0","id":1,"error":"bad"}`,
		`{"\u006aSONRPC":"2.0"}`, `{"jsonrpc":"2.0","method":"m\u00e9\n","id":"\ud83d\ude00"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m"} x`, `{"a":"\x"}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`,
		"{\"a\":\"\x01\"}", `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"jsonrpc":"2.0","id":1,"method":"m","method":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if caseVariantKey(data) {
			return
		}
		got, gotID, gotErr := decodeFrame(data)
		want, wantID, wantErr := decodeFrameReference(data)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: scanner err %v, reference err %v", data, gotErr, wantErr)
		}
		if gotErr != nil {
			gc, wc := ErrorObject(gotErr).Code, ErrorObject(wantErr).Code
			if gc != wc || !bytes.Equal(gotID, wantID) {
				t.Fatalf("%q: scanner %d id %s (%v), reference %d id %s (%v)", data, gc, gotID, gotErr, wc, wantID, wantErr)
			}
			return
		}
		if got.kind != want.kind || got.method != want.method || !bytes.Equal(got.id, want.id) ||
			!sameRaw(got.params, want.params) || !bytes.Equal(got.result, want.result) || (got.err == nil) != (want.err == nil) {
			t.Fatalf("%q:\nscanner   %+v\nreference %+v", data, got, want)
		}
		if got.err != nil && (got.err.Code != want.err.Code || got.err.Message != want.err.Message) {
			t.Fatalf("%q: error objects differ: %+v vs %+v", data, got.err, want.err)
		}
	})
}

// sameRaw treats absent and null params alike (both decode as {}).
func sameRaw(a, b json.RawMessage) bool {
	norm := func(r json.RawMessage) string {
		if string(r) == "null" {
			return ""
		}
		return string(r)
	}
	return norm(a) == norm(b)
}

// caseVariantKey reports whether data has a member name equal to a
// JSON-RPC member name case-insensitively but not exactly, at any depth.
func caseVariantKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	names := []string{"jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data"}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if k, ok := tok.(string); ok {
			for _, n := range names {
				if k != n && strings.EqualFold(k, n) {
					return true
				}
			}
		}
	}
}
