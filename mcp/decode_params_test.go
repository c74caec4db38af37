package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFastParams(t *testing.T) {
	tests := []struct {
		name   string
		params string
		fast   bool // taken by the fast path
	}{
		{"name and arguments", `{"name":"Code_Review","arguments":{"code":"x","language":"go"}}`, true},
		{"arguments first, spaces", ` { "arguments" : { } , "name" : "n" } `, true},
		{"name only", `{"name":"n"}`, true},
		{"empty object", `{}`, true},
		{"escapes and non-ASCII", `{"name":"n\u00e9","arguments":{"k":"line\nbreak \"quoted\" 한국어"}}`, true},
		{"repeated argument keeps the last", `{"name":"n","arguments":{"a":"1","a":"2"}}`, true},
		{"_meta goes to encoding/json", `{"_meta":{"progressToken":7},"name":"n"}`, false},
		{"key in other case", `{"Name":"n"}`, false},
		{"unknown member", `{"name":"n","extra":1}`, false},
		{"repeated arguments merge in encoding/json", `{"arguments":{"a":"1"},"arguments":{"b":"2"}}`, false},
		{"number argument", `{"name":"n","arguments":{"a":1}}`, false},
		{"null arguments", `{"name":"n","arguments":null}`, false},
		{"escaped member name", `{"na\u006de":"n"}`, false},
		{"trailing data", `{"name":"n"} {}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fast, want GetPromptParams
			if got := fast.decodeFast([]byte(tc.params), false); got != tc.fast {
				t.Fatalf("fast path taken = %v, want %v", got, tc.fast)
			}
			if !tc.fast {
				if diff := cmp.Diff(GetPromptParams{}, fast); diff != "" {
					t.Fatalf("a refused fast decode left values behind (-zero +got):\n%s", diff)
				}
				return
			}
			if err := json.Unmarshal([]byte(tc.params), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, fast); diff != "" {
				t.Errorf("fast decode differs from encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeStringObject(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]any // nil: not taken
	}{
		{`{"name":"n","arguments":{"a":"1"}}`, map[string]any{"name": "n", "arguments": map[string]any{"a": "1"}}},
		{`{}`, map[string]any{}},
		{`{"a":"x","a":"y"}`, map[string]any{"a": "y"}},
		{`{"a":{"b":{"c":"deep"}}}`, nil},
		{`{"a":1}`, nil},
		{`{"a":["x"]}`, nil},
		{`{"a":null}`, nil},
		{`["a"]`, nil},
		{`{"a":"x"}x`, nil},
	}
	for _, tc := range tests {
		got, ok := DecodeStringObject([]byte(tc.in))
		if ok != (tc.want != nil) {
			t.Errorf("%s: ok = %v", tc.in, ok)
			continue
		}
		if diff := cmp.Diff(tc.want, got); ok && diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzFastParamsMatchEncodingJSON: whenever a fast path takes the input,
// encoding/json decodes it without error to the same value.
func FuzzFastParamsMatchEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"n","arguments":{"a":"1","b":"\u00e9\n"}}`, `{"arguments":{},"name":""}`, `{}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":[1,{"y":null}]},"name":"n","arguments":{"a":"b"}}`, `{"name":"n","_meta":{},"_meta":{}}`,
		`{"name":"n","arguments":{"a":{"b":"c"}}}`, `{"name":"\xff","arguments":{"\xfe":"\xfd"}}`,
		`{"name":"n\ud800","arguments":{"k":"\ud83d\ude00"}}`, `{"name":"n","arguments":{"a":1}}`,
		`{"name":"n","name":"m"}`, `{"name":"n"}  `, `{"uri":"x://y","_meta":null}`, `{"name":null}`, `{"name":"n"`, `{"name":"n",}`,
		`{"_meta":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skipMeta := range []bool{false, true} {
			var gp, gpWant GetPromptParams
			if gp.decodeFast(data, skipMeta) {
				ref := data
				if skipMeta {
					// A modern request's _meta is read and checked apart
					// (paramsHead): the fast path steps over it, whatever
					// it holds, so the reference is the params without it.
					ref = withoutMeta(t, data)
				}
				if err := json.Unmarshal(ref, &gpWant); err != nil {
					t.Fatalf("%q: fast GetPromptParams took what encoding/json refuses: %v", data, err)
				}
				if !skipMeta && gpWant.Meta != nil {
					t.Fatalf("%q: the legacy fast path stepped over _meta", data)
				}
				gpWant.Meta = nil // read apart for a modern request
				if diff := cmp.Diff(gpWant, gp); diff != "" {
					t.Fatalf("%q: GetPromptParams (-encoding/json +fast):\n%s", data, diff)
				}
			}
		}
		var ct, ctWant CallToolParams
		if ct.decodeFast(data, false) {
			if err := json.Unmarshal(data, &ctWant); err != nil {
				t.Fatalf("%q: fast CallToolParams took what encoding/json refuses: %v", data, err)
			}
			if ct.Name != ctWant.Name || !bytes.Equal(ct.Arguments, ctWant.Arguments) || ctWant.Meta != nil {
				t.Fatalf("%q: CallToolParams fast %q %s, encoding/json %q %s", data, ct.Name, ct.Arguments, ctWant.Name, ctWant.Arguments)
			}
		}
		var head, headWant paramsHead
		if head.decodeFast(data) {
			if err := json.Unmarshal(data, &headWant); err != nil {
				t.Fatalf("%q: fast paramsHead took what encoding/json refuses: %v", data, err)
			}
			if diff := cmp.Diff(headWant, head); diff != "" {
				t.Fatalf("%q: paramsHead (-encoding/json +fast):\n%s", data, diff)
			}
		}
		if m, ok := DecodeStringObject(data); ok {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var want any
			if err := dec.Decode(&want); err != nil || dec.More() {
				t.Fatalf("%q: DecodeStringObject took what encoding/json refuses: %v", data, err)
			}
			if diff := cmp.Diff(want, any(m)); diff != "" {
				t.Fatalf("%q: DecodeStringObject (-encoding/json +fast):\n%s", data, diff)
			}
		}
	})
}

// TestParamsHead: the head of a modern request's params is read in one
// pass for the shapes clients send, and by encoding/json otherwise, to
// the same values.
func TestParamsHead(t *testing.T) {
	tests := []struct {
		params string
		fast   bool
	}{
		{`{"name":"n","arguments":{"a":"1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true},
		{`{"uri":"x://y","_meta":{}}`, true},
		{`{}`, true},
		{`{"arguments":null,"name":"n"}`, true},
		{`{"cursor":"c","_meta":{}}`, false},
		{`{"Name":"n"}`, false},
		{`{"name":null}`, false},
		{`{"name":"n","name":"m"}`, false},
		{`{"na\u006de":"n"}`, false},
	}
	for _, tc := range tests {
		var fast, want paramsHead
		if got := fast.decodeFast([]byte(tc.params)); got != tc.fast {
			t.Errorf("%s: fast path taken = %v, want %v", tc.params, got, tc.fast)
			continue
		}
		if !tc.fast {
			continue
		}
		if err := json.Unmarshal([]byte(tc.params), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, fast); diff != "" {
			t.Errorf("%s (-encoding/json +fast):\n%s", tc.params, diff)
		}
	}
}

func BenchmarkParseInboundModern(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flowyprompt_render_template",` +
		`"arguments":{"name":"Code_Review","variables":{"code":"func f() {}","language":"go"}},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseInbound(bytes.Clone(msg)); err != nil {
			b.Fatal(err)
		}
	}
}

// withoutMeta is the JSON object data without its _meta member, failing t
// when data is not an object (a fast path took what is not one).
func withoutMeta(t *testing.T, data []byte) []byte {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		t.Fatalf("%q: a fast path took what is not a JSON object: %v", data, err)
	}
	delete(members, "_meta")
	out, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
