package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const mcpPost = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\n" +
	"Accept: application/json, text/event-stream\r\nMcp-Session-Id: abc\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: 2\r\n\r\n{}"

func TestParseHead(t *testing.T) {
	tests := []struct {
		name string
		in   string // a whole request; the head is cut from it
		ok   bool
	}{
		{"what SDK clients send", mcpPost, true},
		{"SSE message with a query", "POST /sse/message?session_id=1f HTTP/1.1\r\nHost: localhost:3000\r\nContent-Length: 0\r\n\r\n", true},
		{"Connection: close", "POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", true},
		{"Connection: keep-alive", "POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", true},
		{"HTTP/1.0", "POST /mcp HTTP/1.0\r\nHost: h\r\nContent-Length: 0\r\n\r\n", false},
		{"no Host", "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", false},
		{"two Hosts", "POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n", false},
		{"no Content-Length", "POST /mcp HTTP/1.1\r\nHost: h\r\n\r\n", false},
		{"two Content-Lengths", "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", false},
		{"signed Content-Length", "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: +2\r\n\r\n{}", false},
		{"chunked", "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false},
		{"Expect", "POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", false},
		{"Upgrade", "POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n", false},
		{"folded line", "POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", false},
		{"space before colon", "POST /mcp HTTP/1.1\r\nHost : h\r\nContent-Length: 0\r\n\r\n", false},
		{"escape in the path", "POST /m%63p HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", false},
		{"absolute URI", "POST http://h/mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", false},
		{"control byte in a value", "POST /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\x01b\r\nContent-Length: 0\r\n\r\n", false},
		{"user info in Host", "POST /mcp HTTP/1.1\r\nHost: u@h\r\nContent-Length: 0\r\n\r\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := strings.Index(tc.in, "\r\n\r\n") + 4
			h, ok := parseHead([]byte(tc.in[:end]), nil, nil)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok {
				agreeWithNetHTTP(t, []byte(tc.in), h)
			}
		})
	}
}

// agreeWithNetHTTP checks that net/http reads in reads the same request as
// the light path's h.
func agreeWithNetHTTP(t *testing.T, in []byte, h head) {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(in)))
	if err != nil {
		t.Fatalf("the light path took a head net/http refuses (%v): %q", err, in)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatalf("net/http could not read the body (%v): %q", err, in)
	}
	hdr := http.Header{}
	for _, f := range h.fields {
		hdr[f.name] = append(hdr[f.name], f.value)
	}
	got := map[string]any{"method": h.method, "uri": h.target, "path": h.path, "query": h.query, "host": h.host,
		"length": h.contentLength, "close": h.close, "header": hdr, "body": string(in[h.size:min(len(in), h.size+int(h.contentLength))])}
	want := map[string]any{"method": req.Method, "uri": req.RequestURI, "path": req.URL.Path, "query": req.URL.RawQuery,
		"host": req.Host, "length": req.ContentLength, "close": req.Close, "header": req.Header, "body": string(body)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q read differently (-net/http +light path):\n%s", in, diff)
	}
}

// FuzzParseHeadAgreesWithNetHTTP: whatever head the light path accepts,
// net/http accepts too and reads as the same request.
func FuzzParseHeadAgreesWithNetHTTP(f *testing.F) {
	f.Add([]byte(mcpPost))
	f.Add([]byte("POST /sse/message?session_id=x HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close, keep-alive\r\nContent-Length: 3\r\n\r\nabc"))
	f.Add([]byte("POST /mcp HTTP/1.1\r\nhost: h\r\ncontent-length: 0\r\nx-a:\t v \t\r\n\r\n"))
	f.Add([]byte("GET /healthz?x=%zz&y HTTP/1.1\r\nHost: h_1.example\r\nContent-Length: 0\r\nAccept: */*\r\nAccept: text/plain\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		end := bytes.Index(in, []byte("\r\n\r\n"))
		if end < 0 {
			return
		}
		h, ok := parseHead(in[:end+4], nil, nil)
		if !ok {
			return
		}
		if int64(len(in)-h.size) < h.contentLength {
			return // the body is not all there; net/http would wait for it
		}
		agreeWithNetHTTP(t, in, h)
	})
}

func BenchmarkParseHead(b *testing.B) {
	head := []byte(mcpPost[:strings.Index(mcpPost, "\r\n\r\n")+4])
	var fields []field
	var cache lineCache
	b.ReportAllocs()
	for b.Loop() {
		h, ok := parseHead(head, fields, &cache)
		if !ok {
			b.Fatal("refused")
		}
		fields = h.fields
	}
}

// FuzzParseHeadCache: a head parsed after another on the same connection,
// reusing the strings of the lines they share, reads exactly as it does on
// its own.
func FuzzParseHeadCache(f *testing.F) {
	f.Add([]byte(mcpPost), []byte(strings.Replace(mcpPost, "Content-Length: 2", "Content-Length: 3", 1)))
	f.Add([]byte(mcpPost), []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"), []byte("GET /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		cut := func(b []byte) []byte {
			if end := bytes.Index(b, []byte("\r\n\r\n")); end >= 0 {
				return b[:end+4]
			}
			return nil
		}
		a, b := cut(first), cut(second)
		if b == nil {
			return
		}
		var cache lineCache
		if a != nil {
			parseHead(a, nil, &cache)
		}
		got, gotOK := parseHead(b, nil, &cache)
		want, wantOK := parseHead(b, nil, nil)
		if gotOK != wantOK {
			t.Fatalf("after %q, %q: ok %v, on its own %v", a, b, gotOK, wantOK)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(head{}, field{})); gotOK && diff != "" {
			t.Fatalf("after %q, %q read differently (-alone +after):\n%s", a, b, diff)
		}
	})
}
