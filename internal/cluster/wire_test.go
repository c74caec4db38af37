package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nats-io/nats.go"
)

// fuzzMaxBody is the body cap the fuzz targets decode with.
const fuzzMaxBody = 1 << 20

// realRequest is a forwarded POST /mcp as Forward encodes it.
func realRequest(t testing.TB, body string, declared int) *nats.Msg {
	t.Helper()
	m, err := requestMsg("flowyprompt.session."+sessionID, "_INBOX.abc.def", wireRequest{
		Method: "POST", URI: "/mcp", Host: "prompts.example.com", Remote: "10.0.0.7:51234",
		Header: http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
			"Mcp-Session-Id": {sessionID}, "Mcp-Protocol-Version": {"2025-11-25"}},
		Len: declared, Exchange: "9f86d081884c7d659a2feaa0", Client: "10.0.0.7"}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memberRequest is realRequest asked by a member, as a forwarder whose
// guard admitted a member's token sends it.
func memberRequest(t testing.TB, body string) *nats.Msg {
	t.Helper()
	m := realRequest(t, body, len(body))
	req, err := decodeRequest(m.Header, m.Data, DefaultMaxForwardBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Member = &wireMember{Issuer: "https://id.example.com/realms/team", Subject: "alice", Email: "alice@example.com",
		Scopes: []string{"openid", "prompts:read"}}
	if m, err = requestMsg(m.Subject, m.Reply, req, m.Data); err != nil {
		t.Fatal(err)
	}
	return m
}

// realAnswers are the messages a holder sends, as fwdWriter and the
// exchange encode them: an accept, a head with a first part, a part, the
// end, an abort, and a refusal in one message.
func realAnswers(t testing.TB) []*nats.Msg {
	t.Helper()
	frames := []answerFrame{
		{Seq: 0, Control: "flowyprompt.fwd.0123456789abcdef.9f86d081884c7d659a2feaa0"},
		{Seq: 1, Head: &wireHead{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-store"}}},
			Data: []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")},
		{Seq: 2, Data: []byte("data: {}\n\n")},
		{Seq: 3, End: endDone},
		{Seq: 4, End: endAbort},
		{Seq: 0, Head: &wireHead{Status: 413, Header: http.Header{"Content-Type": {"application/json"}}}, End: endDone,
			Data: []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"request body too large"}}` + "\n")},
	}
	var ms []*nats.Msg
	for _, a := range frames {
		m, err := a.msg("_INBOX.abc.def")
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// realControls are the messages a forwarder sends to the control subject.
func realControls() []*nats.Msg {
	const ctl = "flowyprompt.fwd.0123456789abcdef.9f86d081884c7d659a2feaa0"
	return []*nats.Msg{
		controlFrame{Op: opBody, Seq: 1, Data: []byte(`,"arguments":{"language":"go"}}}`)}.msg(ctl),
		controlFrame{Op: opBody, Seq: 17, Data: bytes.Repeat([]byte("x"), 100)}.msg(ctl),
		controlFrame{Op: opPing}.msg(ctl),
		controlFrame{Op: opCancel}.msg(ctl),
	}
}

// header is a NATS header of the given names and values, those whose
// value is "" left out, as absent.
func header(kv ...string) nats.Header {
	h := nats.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

// equateEmpty: a nil and an empty header or body are one on the wire.
var equateEmpty = cmpopts.EquateEmpty()

func TestDecodeRequest(t *testing.T) {
	ok := realRequest(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 41)
	head := ok.Header.Get(hdrRequest)
	with := func(field string, v any) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(head), &m); err != nil {
			t.Fatal(err)
		}
		m[field] = v
		b, _ := json.Marshal(m)
		return string(b)
	}
	tests := []struct {
		name    string
		head    string
		first   []byte
		wantErr error  // nil: decoded
		wantMsg string // in the error
	}{
		{name: "real", head: head, first: ok.Data},
		{name: "64 MiB declared", head: with("len", 64<<20), first: []byte("x"), wantErr: errBodyTooLarge,
			wantMsg: "67108864 bytes declared, at most 4194304 accepted"},
		{name: "one byte over the cap", head: with("len", 4<<20+1), first: nil, wantErr: errBodyTooLarge},
		{name: "exactly the cap", head: with("len", 4<<20), first: []byte("x")},
		{name: "negative length", head: with("len", -1), wantErr: errMalformed, wantMsg: "-1 bytes declared"},
		{name: "first part longer than declared", head: with("len", 2), first: []byte("abc"), wantErr: errMalformed},
		{name: "length not an integer", head: with("len", 1.5), wantErr: errMalformed},
		{name: "no head", head: "", wantErr: errMalformed, wantMsg: "no Fp-Request header"},
		{name: "head over its cap", head: with("host", strings.Repeat("h", maxHeadBytes)), wantErr: errMalformed,
			wantMsg: "over the cap of 65536"},
		{name: "not JSON", head: "{", wantErr: errMalformed},
		{name: "exchange not a token", head: with("exchange", "a.b"), first: ok.Data, wantErr: errMalformed},
		{name: "URI not a path", head: with("uri", "http://elsewhere/"), first: ok.Data, wantErr: errMalformed},
		{name: "no method", head: with("method", ""), first: ok.Data, wantErr: errMalformed},
		{name: "no client", head: with("client", ""), first: ok.Data, wantErr: errMalformed, wantMsg: "client key"},
		{name: "client key over its cap", head: with("client", strings.Repeat("c", maxClientBytes+1)), first: ok.Data,
			wantErr: errMalformed, wantMsg: "longer than 72 bytes"},
		{name: "a member", head: with("member", map[string]any{"iss": "https://id.example.com", "sub": "alice",
			"email": "alice@example.com", "scopes": []string{"prompts:read"}}), first: ok.Data},
		{name: "a member of no issuer", head: with("member", map[string]any{"sub": "alice"}), first: ok.Data,
			wantErr: errMalformed, wantMsg: "names no issuer or no subject"},
		{name: "a member of no subject", head: with("member", map[string]any{"iss": "https://id.example.com", "sub": ""}),
			first: ok.Data, wantErr: errMalformed, wantMsg: "names no issuer or no subject"},
		{name: "a member that is not an object", head: with("member", "alice"), first: ok.Data, wantErr: errMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRequest(nats.Header{hdrRequest: {tc.head}}, tc.first, DefaultMaxForwardBody)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q lacks %q", err, tc.wantMsg)
			}
		})
	}
}

// TestDecodeRequestOverTheCapAllocatesLittle: refusing a declared 64 MiB
// costs what decoding the head costs, not what it declares.
func TestDecodeRequestOverTheCapAllocatesLittle(t *testing.T) {
	m := realRequest(t, "x", 64<<20)
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := decodeRequest(m.Header, m.Data, DefaultMaxForwardBody); !errors.Is(err, errBodyTooLarge) {
			t.Fatalf("error %v, want errBodyTooLarge", err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16<<10 {
		t.Errorf("refusing a declared 64 MiB allocated %d bytes a time, want a few hundred", per)
	}
}

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		name    string
		h       nats.Header
		data    string
		want    answerFrame
		wantMsg string // the error's, when it is refused
	}{
		{name: "accept", h: nats.Header{hdrSeq: {"0"}, hdrControl: {"p.fwd.r.x"}}, want: answerFrame{Control: "p.fwd.r.x"}},
		{name: "head and part", h: nats.Header{hdrSeq: {"1"}, hdrHead: {`{"status":201}`}}, data: "ab",
			want: answerFrame{Seq: 1, Head: &wireHead{Status: 201}, Data: []byte("ab")}},
		{name: "end", h: nats.Header{hdrSeq: {"9"}, hdrEnd: {endDone}}, want: answerFrame{Seq: 9, End: endDone}},
		{name: "no number", h: nats.Header{hdrEnd: {endDone}}, wantMsg: "Fp-Seq is not a number"},
		{name: "number not canonical", h: nats.Header{hdrSeq: {"+1"}}, wantMsg: "Fp-Seq is not a number"},
		{name: "negative number", h: nats.Header{hdrSeq: {"-1"}}, wantMsg: "Fp-Seq is not a number"},
		{name: "accept not first", h: nats.Header{hdrSeq: {"3"}, hdrControl: {"p.fwd.r.x"}}, wantMsg: "accept numbered 3"},
		{name: "accept with a body", h: nats.Header{hdrSeq: {"0"}, hdrControl: {"p.fwd.r.x"}}, data: "x", wantMsg: "carries more"},
		{name: "control a wildcard", h: nats.Header{hdrSeq: {"0"}, hdrControl: {"p.>"}}, wantMsg: "not a subject"},
		{name: "control too long", h: nats.Header{hdrSeq: {"0"}, hdrControl: {strings.Repeat("a", maxSubjectBytes+1)}}, wantMsg: "not a subject"},
		{name: "status out of range", h: nats.Header{hdrSeq: {"1"}, hdrHead: {`{"status":1000}`}}, wantMsg: "response head"},
		{name: "head over its cap", h: nats.Header{hdrSeq: {"1"}, hdrHead: {strings.Repeat(" ", maxHeadBytes+1)}}, wantMsg: "over the cap"},
		{name: "unknown end", h: nats.Header{hdrSeq: {"1"}, hdrEnd: {"maybe"}}, wantMsg: "Fp-End is neither"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeAnswer(tc.h, []byte(tc.data))
			checkDecoded(t, got, err, tc.want, tc.wantMsg)
		})
	}
}

// checkDecoded holds a decoder's result to a table case: the frame
// wanted, or a malformed-frame error saying wantMsg.
func checkDecoded[T any](t *testing.T, got T, err error, want T, wantMsg string) {
	t.Helper()
	if wantMsg != "" {
		if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), wantMsg) {
			t.Fatalf("error %v, want a malformed frame: %s", err, wantMsg)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestDecodeControl(t *testing.T) {
	tests := []struct {
		name    string
		h       nats.Header
		data    string
		want    controlFrame
		wantMsg string
	}{
		{name: "ping", h: nats.Header{hdrOp: {opPing}}, want: controlFrame{Op: opPing}},
		{name: "cancel ignores the rest", h: nats.Header{hdrOp: {opCancel}, hdrSeq: {"4"}}, data: "x", want: controlFrame{Op: opCancel}},
		{name: "body part", h: nats.Header{hdrOp: {opBody}, hdrSeq: {"2"}}, data: "xy", want: controlFrame{Op: opBody, Seq: 2, Data: []byte("xy")}},
		{name: "body part 0", h: nats.Header{hdrOp: {opBody}, hdrSeq: {"0"}}, data: "x", wantMsg: "numbered 0"},
		{name: "empty body part", h: nats.Header{hdrOp: {opBody}, hdrSeq: {"1"}}, wantMsg: "empty body part"},
		{name: "unknown op", h: nats.Header{hdrOp: {"sign"}}, wantMsg: `unknown operation "sign"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeControl(tc.h, []byte(tc.data))
			checkDecoded(t, got, err, tc.want, tc.wantMsg)
		})
	}
}

func TestBodyParts(t *testing.T) {
	tests := []struct {
		name    string
		first   string
		want    int
		parts   []string // numbered from 1
		seqs    []int    // the parts' numbers when not 1, 2, …
		wantErr string   // of the last part
		wantBuf string
	}{
		{name: "in order", first: "ab", want: 7, parts: []string{"cd", "efg"}, wantBuf: "abcdefg"},
		{name: "no first part", want: 3, parts: []string{"a", "bc"}, wantBuf: "abc"},
		{name: "gap", first: "a", want: 3, parts: []string{"b", "c"}, seqs: []int{1, 3}, wantErr: "part 3 where part 2 was due", wantBuf: "ab"},
		{name: "repeat", first: "a", want: 3, parts: []string{"b", "b"}, seqs: []int{1, 1}, wantErr: "part 1 where part 2 was due", wantBuf: "ab"},
		{name: "beyond the declared length", first: "a", want: 2, parts: []string{"bc"}, wantErr: "beyond the declared 2 bytes", wantBuf: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBodyParts([]byte(tc.first), tc.want)
			var err error
			for i, p := range tc.parts {
				seq := i + 1
				if tc.seqs != nil {
					seq = tc.seqs[i]
				}
				if err = b.add(seq, []byte(p)); err != nil {
					break
				}
			}
			if tc.wantErr == "" && (err != nil || !b.complete()) {
				t.Errorf("error %v, complete %v; want a whole body", err, b.complete())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if string(b.buf) != tc.wantBuf || cap(b.buf) > tc.want {
				t.Errorf("buffer %q (capacity %d), want %q within %d", b.buf, cap(b.buf), tc.wantBuf, tc.want)
			}
		})
	}
}

// The fuzz targets take each header the decoders read as a string of its
// own ("" for one that is absent): NATS parses the header block, and the
// protocol begins with the values.

// FuzzDecodeRequest: any head and first part decode without a panic; what decodes declares no more than the cap, encodes back to
// itself, sizes nothing beyond what it declares, and names a member only
// by an issuer and a subject; a declared length over the cap is always
// refused.
func FuzzDecodeRequest(f *testing.F) {
	for _, m := range []*nats.Msg{
		realRequest(f, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"review"}}`, 77),
		realRequest(f, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"render_template",`, 300),
		realRequest(f, "", 0),
		realRequest(f, "x", 64<<20),
		memberRequest(f, `{"jsonrpc":"2.0","id":3,"method":"ping"}`),
	} {
		f.Add(m.Header.Get(hdrRequest), m.Data)
	}
	f.Fuzz(func(t *testing.T, head string, first []byte) {
		h := nats.Header{hdrRequest: {head}}
		req, err := decodeRequest(h, first, fuzzMaxBody)
		var probe struct {
			Len int `json:"len"`
		}
		if json.Unmarshal([]byte(h.Get(hdrRequest)), &probe) == nil && probe.Len > fuzzMaxBody && err == nil {
			t.Fatalf("a declared %d bytes over the cap of %d decoded", probe.Len, fuzzMaxBody)
		}
		if errors.Is(err, errBodyTooLarge) && req.Len <= fuzzMaxBody {
			t.Fatalf("%d bytes refused as over the cap of %d", req.Len, fuzzMaxBody)
		}
		if err != nil {
			return
		}
		if req.Len < len(first) || req.Len > fuzzMaxBody {
			t.Fatalf("decoded a declared length of %d with a first part of %d", req.Len, len(first))
		}
		if m := req.Member; m != nil && (m.Issuer == "" || m.Subject == "") {
			t.Fatalf("decoded a member that names nobody: %+v", *m)
		}
		if b := newBodyParts(first, req.Len); cap(b.buf) > req.Len {
			t.Fatalf("a body buffer of capacity %d for %d declared bytes", cap(b.buf), req.Len)
		}
		m, err := requestMsg("s", "r", req, first)
		if err != nil {
			// JSON escapes <, > and & six bytes long: only a head near
			// the cap grows over it.
			if !strings.Contains(err.Error(), "over the cap") {
				t.Fatal(err)
			}
			return
		}
		again, err := decodeRequest(m.Header, m.Data, fuzzMaxBody)
		if err != nil {
			t.Fatalf("re-encoded request refused: %v", err)
		}
		if diff := cmp.Diff(req, again, equateEmpty); diff != "" {
			t.Fatalf("round trip (-decoded +again):\n%s", diff)
		}
	})
}

// FuzzDecodeAnswer: any headers and data decode without a panic, and what
// decodes encodes back to itself.
func FuzzDecodeAnswer(f *testing.F) {
	for _, m := range realAnswers(f) {
		f.Add(m.Header.Get(hdrSeq), m.Header.Get(hdrControl), m.Header.Get(hdrHead), m.Header.Get(hdrEnd), m.Data)
	}
	f.Fuzz(func(t *testing.T, seq, control, head, end string, data []byte) {
		a, err := decodeAnswer(header(hdrSeq, seq, hdrControl, control, hdrHead, head, hdrEnd, end), data)
		if err != nil {
			return
		}
		if a.Head != nil && (a.Head.Status < 100 || a.Head.Status > 999) {
			t.Fatalf("decoded a status of %d", a.Head.Status)
		}
		m, err := a.msg("s")
		if err != nil {
			if !strings.Contains(err.Error(), "over the cap") {
				t.Fatal(err)
			}
			return
		}
		again, err := decodeAnswer(m.Header, m.Data)
		if err != nil {
			t.Fatalf("re-encoded answer refused: %v", err)
		}
		if diff := cmp.Diff(a, again, equateEmpty); diff != "" {
			t.Fatalf("round trip (-decoded +again):\n%s", diff)
		}
	})
}

// FuzzDecodeControl: any headers and data decode without a panic, and what
// decodes encodes back to itself.
func FuzzDecodeControl(f *testing.F) {
	for _, m := range realControls() {
		f.Add(m.Header.Get(hdrOp), m.Header.Get(hdrSeq), m.Data)
	}
	f.Fuzz(func(t *testing.T, op, seq string, data []byte) {
		c, err := decodeControl(header(hdrOp, op, hdrSeq, seq), data)
		if err != nil {
			return
		}
		m := c.msg("s")
		again, err := decodeControl(m.Header, m.Data)
		if err != nil {
			t.Fatalf("re-encoded control message refused: %v", err)
		}
		if diff := cmp.Diff(c, again, equateEmpty); diff != "" {
			t.Fatalf("round trip (-decoded +again):\n%s", diff)
		}
	})
}

// FuzzDecodeBody: a body reassembled from parts of any sizes, in order or
// not, never holds more than it declares, and when whole is what was sent.
func FuzzDecodeBody(f *testing.F) {
	f.Add(7, []byte("ab"), []byte("cdefg"), byte(2), byte(0))
	f.Add(4<<10+7, bytes.Repeat([]byte("a"), 1<<10), bytes.Repeat([]byte("b"), 3<<10+7), byte(255), byte(0))
	f.Add(3, []byte("a"), []byte("bc"), byte(1), byte(2)) // the second part misnumbered
	f.Add(2, []byte("a"), []byte("bc"), byte(2), byte(0)) // beyond the declared length
	f.Fuzz(func(t *testing.T, declared int, first, rest []byte, size, skew byte) {
		if declared < len(first) || declared > fuzzMaxBody {
			return // refused by decodeRequest before a body is assembled
		}
		b := newBodyParts(first, declared)
		sent := append(slices.Clip(first), rest...)
		var err error
		for i := 0; len(rest) > 0 && err == nil; i++ {
			part := rest[:min(len(rest), int(size)+1)]
			rest = rest[len(part):]
			seq := i + 1
			if skew != 0 && i == int(skew)-1 {
				seq += int(skew)
			}
			err = b.add(seq, part)
			if cap(b.buf) > declared {
				t.Fatalf("a buffer of capacity %d for %d declared bytes", cap(b.buf), declared)
			}
		}
		switch {
		case len(sent) > declared && err == nil:
			t.Fatalf("%d bytes taken for %d declared", len(sent), declared)
		case err == nil && !bytes.Equal(b.buf, sent):
			t.Fatalf("reassembled %d bytes, not the %d sent", len(b.buf), len(sent))
		case err == nil && b.complete() != (len(sent) == declared):
			t.Fatalf("complete = %v with %d of %d bytes", b.complete(), len(sent), declared)
		}
	})
}
