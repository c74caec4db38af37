package httpx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

func TestAccepts(t *testing.T) {
	tests := []struct {
		accept     []string
		json, evts bool
	}{
		{nil, true, true},
		{[]string{"application/json, text/event-stream"}, true, true},
		{[]string{"text/event-stream, application/json"}, true, true},
		{[]string{"application/json"}, true, false},
		{[]string{"text/event-stream"}, false, true},
		{[]string{"*/*"}, true, true},
		{[]string{"application/*"}, true, false},
		{[]string{"text/*"}, false, true},
		{[]string{"text/html"}, false, false},
		{[]string{"application/json;q=0, text/event-stream"}, false, true},
		{[]string{"application/json;q=0.5"}, true, false},
		{[]string{"application/json", "text/event-stream"}, true, true},
		{[]string{"garbage;;;"}, false, false},
		{[]string{"APPLICATION/JSON"}, true, false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for _, v := range tc.accept {
			r.Header.Add("Accept", v)
		}
		j, e := Accepts(r)
		if j != tc.json || e != tc.evts {
			t.Errorf("Accepts(%q) = %v, %v; want %v, %v", tc.accept, j, e, tc.json, tc.evts)
		}
	}
}

func FuzzAccepts(f *testing.F) {
	for _, s := range []string{"", "*/*", "application/json, text/event-stream", "text/event-stream;q=0", "a/b;c=\"d,e\", f/g", ",,,", "application/json;q=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Accept", accept)
		j, e := Accepts(r)
		// Whatever the header, naming both types exactly, first, never
		// makes either refused.
		r.Header.Set("Accept", "application/json, text/event-stream, "+accept)
		j2, e2 := Accepts(r)
		if !j2 || !e2 {
			t.Fatalf("Accepts(%q) lost a type named first", r.Header.Get("Accept"))
		}
		_, _ = j, e
	})
}

func TestJSONContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"":                                  true,
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"application/vnd.api+json":          true,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		"not a type;;":                      false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if got := JSONContentType(r); got != want {
			t.Errorf("JSONContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"{\n  \"a\": \"x\\ny\"\n}", `{"a":"x\ny"}`},
		{"{\r\n\"a\":1}", `{"a":1}`},
		{"not\njson", "not json"},
	}
	for _, tc := range tests {
		if got := string(OneLine([]byte(tc.in))); got != tc.want {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzOneLine: whatever goes in, one line comes out, and valid JSON stays
// the same JSON value.
func FuzzOneLine(f *testing.F) {
	for _, s := range []string{`{}`, "{\n}", `{"a":"\n"}`, "[1,\r\n2]", "x\ny\rz", `"\u2028"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := OneLine(in)
		if bytes.ContainsAny(out, "\r\n") {
			t.Fatalf("OneLine(%q) = %q has a line break", in, out)
		}
		if json.Valid(in) {
			a, errA := decode(in)
			b, errB := decode(out)
			if errA != nil || errB != nil {
				t.Fatalf("OneLine(%q) = %q is not JSON: %v %v", in, out, errA, errB)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Fatalf("OneLine changed the value (-in +out):\n%s", diff)
			}
		}
	})
}

// decode keeps numbers as written: 1E700 is valid JSON but no float64.
func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		f        *fault.Error
		wantCode int64
		header   map[string]string
	}{
		{"session not found", 404, SessionNotFound("open a new one"), -32001, nil},
		{"parse error", 400, ParseError(), -32700, nil},
		{"retry after", 503, &fault.Error{Code: mcp.CodeTooManySessions, What: "full", Why: "cap", How: "wait", RetryAfter: 1500 * time.Millisecond},
			-32000, map[string]string{"Retry-After": "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteError(w, httptest.NewRequest(http.MethodGet, "/", nil), tc.status, tc.f)
			if w.Code != tc.status || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q", w.Code, w.Header().Get("Content-Type"))
			}
			for k, v := range tc.header {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int64         `json:"code"`
					Message string        `json:"message"`
					Data    mcp.ErrorData `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			want := mcp.ErrorData{Code: tc.f.Code, What: tc.f.What, Why: tc.f.Why, How: tc.f.How}
			if tc.f.RetryAfter > 0 {
				want.RetryAfter = 2
			}
			if diff := cmp.Diff(want, got.Error.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if got.JSONRPC != "2.0" || string(got.ID) != "null" || got.Error.Code != tc.wantCode || got.Error.Message != tc.f.Error() {
				t.Errorf("envelope = %s", w.Body)
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		length     int64 // -1: unknown (chunked)
		wantOK     bool
		wantStatus int
	}{
		{"small", `{"a":1}`, 7, true, 0},
		{"exactly the cap", strings.Repeat("x", 16), 16, true, 0},
		{"declared too large", strings.Repeat("x", 17), 17, false, 413},
		{"chunked too large", strings.Repeat("x", 17), -1, false, 413},
		{"chunked small", "abc", -1, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.ContentLength = tc.length
			w := httptest.NewRecorder()
			got, ok := ReadBody(w, r, 16, 0)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (status %d %s)", ok, tc.wantOK, w.Code, w.Body)
			}
			if ok && string(got) != tc.body {
				t.Errorf("body = %q", got)
			}
			if !ok && w.Code != tc.wantStatus {
				t.Errorf("status %d, want %d", w.Code, tc.wantStatus)
			}
		})
	}
}

// TestReadBodyDeadline: a body that stops arriving is answered 400 once
// the body timeout passes, instead of holding its connection for as long
// as the client likes; the connection's wait for the client to hang up is
// not left with the deadline.
func TestReadBodyDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := ReadBody(w, r, 1<<20, 200*time.Millisecond); ok {
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten bytes of a hundred, then nothing.
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard against hanging, far above the timeout
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "did not arrive within 200ms") {
		t.Fatalf("status %d, body %s; want 400 saying the body did not arrive in time", res.StatusCode, body)
	}
}
