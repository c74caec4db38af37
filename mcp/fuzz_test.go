package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeFrame: any bytes either decode to a frame or produce an error
// whose answer id is null or a valid id; never a panic.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9007199254740992,"method":"a","params":{"_meta":{"progressToken":1}}}`,
		`{"id":1}`, `"x"`, `{`, ``, `{"jsonrpc":"2.0","id":{},"method":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, answerID, err := decodeFrame(data)
		if err != nil {
			if !json.Valid(answerID) {
				t.Fatalf("answer id %q is not JSON", answerID)
			}
			obj := ErrorObject(err)
			if obj.Code == 0 {
				t.Fatal("error code 0")
			}
			if _, encErr := encodeResponse(answerID, nil, obj); encErr != nil {
				t.Fatalf("cannot encode the error answer: %v", encErr)
			}
			return
		}
		switch fr.kind {
		case kindRequest:
			if fr.method == "" || fr.id == nil {
				t.Fatalf("request without method or id: %+v", fr)
			}
			resp, encErr := encodeResponse(fr.id, emptyObject, nil)
			if encErr != nil || !json.Valid(resp) {
				t.Fatalf("response for id %s is not JSON: %s", fr.id, resp)
			}
		case kindNotification:
			if fr.method == "" || fr.id != nil {
				t.Fatalf("bad notification: %+v", fr)
			}
		case kindResponse:
			if fr.id == nil {
				t.Fatal("response without id")
			}
		default:
			t.Fatalf("no kind: %+v", fr)
		}
	})
}
