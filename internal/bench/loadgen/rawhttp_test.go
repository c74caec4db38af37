package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// scriptedServer answers each request read on a connection with the next
// of answers, written as given; after the last answer of a connection it
// closes it when closeAfter says so.
func scriptedServer(t *testing.T, answers []string, closeAfter map[int]bool) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		n := 0
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(conn)
			for n < len(answers) {
				req, err := http.ReadRequest(br)
				if err != nil {
					break
				}
				io.Copy(io.Discard, req.Body)
				conn.Write([]byte(answers[n]))
				n++
				if closeAfter[n-1] {
					break
				}
			}
			conn.Close()
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String() + "/mcp")
	return u
}

// TestHTTPConnBodies: every body framing the servers use is read whole and
// leaves the connection ready for the next answer.
func TestHTTPConnBodies(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   string
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello"},
		{"chunked with an empty trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n", "hello"},
		{"chunked with trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", "hello"},
		{"no body", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", ""},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", ""},
		{"header names in any case", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The same answer twice on one connection: the second is only
			// read right if the first was read exactly to its end.
			u := scriptedServer(t, []string{tc.answer, tc.answer}, nil)
			c := newHTTPConn(context.Background(), u)
			defer c.Close()
			for i := range 2 {
				resp, err := c.do(context.Background(), "POST", "/mcp", nil, []byte("{}"), false)
				if err != nil {
					t.Fatalf("exchange %d: %v", i, err)
				}
				if string(resp.body) != tc.want {
					t.Fatalf("exchange %d: body %q, want %q", i, resp.body, tc.want)
				}
			}
		})
	}
}

// TestHTTPConnReconnects: a server that closes the connection after an
// answer (saying so, or not) is dialled again for the next request.
func TestHTTPConnReconnects(t *testing.T) {
	tests := []struct {
		name   string
		answer string
	}{
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{"body until close", "HTTP/1.1 200 OK\r\n\r\nok"},
		{"idle connection dropped", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := scriptedServer(t, []string{tc.answer, tc.answer, tc.answer}, map[int]bool{0: true, 1: true, 2: true})
			c := newHTTPConn(context.Background(), u)
			defer c.Close()
			for i := range 3 {
				resp, err := c.do(context.Background(), "POST", "/mcp", nil, []byte("{}"), false)
				if err != nil {
					t.Fatalf("exchange %d: %v", i, err)
				}
				if string(resp.body) != "ok" {
					t.Fatalf("exchange %d: body %q", i, resp.body)
				}
			}
		})
	}
}

// TestHTTPConnStream: an event-stream answer is handed over as a reader of
// its body, chunked or not, and the connection carries on after it.
func TestHTTPConnStream(t *testing.T) {
	ev := "event: message\ndata: {\"id\":1}\n\n"
	stream := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ev), ev)
	after := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"id\":2}"
	u := scriptedServer(t, []string{stream, after}, nil)
	c := newHTTPConn(context.Background(), u)
	defer c.Close()
	resp, err := c.do(context.Background(), "POST", "/mcp", nil, []byte("{}"), true)
	if err != nil || resp.stream == nil {
		t.Fatalf("stream answer: %v, stream %v", err, resp.stream)
	}
	er := newEventReader(resp.stream)
	got, err := responseFromStream(er, 1)
	if err != nil || string(got) != `{"id":1}` {
		t.Fatalf("response %q, %v", got, err)
	}
	if err := c.drain(er.r); err != nil {
		t.Fatal(err)
	}
	resp, err = c.do(context.Background(), "POST", "/mcp", nil, []byte("{}"), true)
	if err != nil || resp.stream != nil || string(resp.body) != `{"id":2}` {
		t.Fatalf("JSON answer after the stream: %q, %v", resp.body, err)
	}
}

func TestHTTPConnRefusesGarbage(t *testing.T) {
	for _, answer := range []string{"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 abc\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"} {
		u := scriptedServer(t, []string{answer}, nil)
		c := newHTTPConn(context.Background(), u)
		if _, err := c.do(context.Background(), "GET", "/", nil, nil, false); err == nil || !strings.Contains(err.Error(), "GET /") {
			t.Errorf("%q: err = %v, want an error naming the request", answer, err)
		}
		c.Close()
	}
}
