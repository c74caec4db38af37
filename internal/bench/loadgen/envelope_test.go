package loadgen

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnvelope(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		want    envelope
		wantErr bool
	}{
		{"response", `{"jsonrpc":"2.0","id":7,"result":{"id":99,"method":"x"}}`, envelope{ID: json.RawMessage(`7`)}, false},
		{"id after a nested result", `{"result":{"a":[1,{"id":2}],"s":"}\"{"},"id":"abc"}`, envelope{ID: json.RawMessage(`"abc"`)}, false},
		{"request from the server", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, envelope{ID: json.RawMessage(`1`), Method: "ping"}, false},
		{"notification", ` { "method" : "notifications/message" , "params" : {} } `, envelope{Method: "notifications/message"}, false},
		{"error", `{"id":3,"error":{"code":-32601,"message":"no"}}`, envelope{ID: json.RawMessage(`3`), Error: json.RawMessage(`{"code":-32601,"message":"no"}`)}, false},
		{"escaped method", `{"method":"a\/b"}`, envelope{Method: "a/b"}, false},
		{"escaped key falls back to encoding/json", `{"\u0069d":5}`, envelope{ID: json.RawMessage(`5`)}, false},
		{"null id", `{"id":null,"result":{}}`, envelope{ID: json.RawMessage(`null`)}, false},
		{"empty object", `{}`, envelope{}, false},
		{"not json", `{"id":`, envelope{}, true},
		{"array", `[{"id":1}]`, envelope{}, true},
		{"trailing garbage", `{"id":1} x`, envelope{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEnvelope([]byte(tt.msg))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzScanEnvelope holds the fast scanner to encoding/json: for every
// valid JSON object it must read the same id, method and error (keys
// matched exactly, as JSON-RPC's are), or decline so the caller falls back.
func FuzzScanEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a \"quoted\" {x}"}]}}`,
		`{"id":"s-1","method":"ping"}`,
		`{"method":"notifications/progress","params":{"progressToken":1}}`,
		`{"id":1,"error":{"code":-32602,"message":"bad","data":{"id":2}}}`,
		`{"id":1,"id":2}`,
		`{"method":null}`,
		`{"id":-1.5e3}`,
		`{"a":[[],{}],"id":true}`,
		`{"id":1,"result":{"a":}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got, ok := scanEnvelope([]byte(msg))
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(msg), &fields); err != nil || fields == nil {
			if ok && json.Valid([]byte(msg)) {
				t.Fatalf("scanner read a valid non-object %q", msg)
			}
			return // invalid JSON: the scanner may read it or not; the top level is what matters
		}
		if !ok {
			return // declined: parseEnvelope falls back to encoding/json
		}
		want := envelope{ID: fields["id"], Error: fields["error"]}
		if m, has := fields["method"]; has {
			if err := json.Unmarshal(m, &want.Method); err != nil {
				t.Fatalf("scanner read a non-string method %s in %q", m, msg)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("scan %q (-encoding/json +scanner):\n%s", msg, diff)
		}
	})
}

func BenchmarkParseEnvelope(b *testing.B) {
	text := make([]byte, 2000)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"` + string(text) + `"}}]}}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseEnvelope(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var env envelope
			if err := json.Unmarshal(msg, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestResultType(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{"complete", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","messages":[]}}`, "complete"},
		{"after a long text", `{"id":1,"result":{"messages":[{"content":{"text":"\"resultType\":\"x\" {"}}],"resultType":"complete"}}`, "complete"},
		{"input required", `{"id":1,"result":{"resultType":"input_required"}}`, "input_required"},
		{"none", `{"id":1,"result":{"messages":[]}}`, ""},
		{"nested only", `{"id":1,"result":{"_meta":{"resultType":"complete"}}}`, ""},
		{"at the top level only", `{"id":1,"resultType":"complete","result":{}}`, ""},
		{"an error", `{"id":1,"error":{"code":-32602,"message":"no"}}`, ""},
		{"null result", `{"id":1,"result":null}`, ""},
		{"result not an object", `{"id":1,"result":["resultType","complete"]}`, ""},
		{"not a string", `{"id":1,"result":{"resultType":1}}`, ""},
		{"null", `{"id":1,"result":{"resultType":null}}`, ""},
		{"later duplicate wins", `{"id":1,"result":{"resultType":"complete","resultType":"input_required"}}`, "input_required"},
		{"later non-string duplicate wins", `{"id":1,"result":{"resultType":"complete","resultType":true}}`, ""},
		{"escaped value", `{"id":1,"result":{"resultType":"compl\u0065te"}}`, "complete"},
		{"escaped key falls back", `{"id":1,"result":{"result\u0054ype":"complete"}}`, "complete"},
		{"keys are matched exactly", `{"id":1,"result":{"ResultType":"complete"}}`, ""},
		{"not json", `{"id":1,"result":{"resultType":"complete"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resultType([]byte(tt.msg)); got != tt.want {
				t.Errorf("resultType = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzResultType holds the scanner to encoding/json: for every valid JSON
// message it must read the same resultType, or decline so the caller falls
// back.
func FuzzResultType(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"messages":[{"role":"user","content":{"type":"text","text":"a \"quoted\" {x}"}}],"resultType":"complete"}}`,
		`{"id":1,"result":{"resultType":"complete","resultType":2}}`,
		`{"id":1,"result":{"resultType":"a\/b"}}`,
		`{"id":1,"result":{"resultType":[1,{"a":"}"}]}}`,
		`{"id":1,"result":null,"result":{"resultType":"x"}}`,
		`{"id":1,"result":"{\"resultType\":\"complete\"}"}`,
		`{"result":{"resultType":-0.5e1}}`,
		`{"result":{"resultType":"complete"},"x":}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got, ok := scanResultType([]byte(msg))
		if !ok || !json.Valid([]byte(msg)) {
			return // declined, or invalid JSON: what the scanner reads of it does not matter
		}
		if want := decodeResultType([]byte(msg)); got != want {
			t.Fatalf("scan %q = %q, encoding/json reads %q", msg, got, want)
		}
	})
}

func BenchmarkResultType(b *testing.B) {
	text := make([]byte, 2000)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"` + string(text) + `"}}],"resultType":"complete"}}`)
	for b.Loop() {
		if resultType(msg) != "complete" {
			b.Fatal("not complete")
		}
	}
}
