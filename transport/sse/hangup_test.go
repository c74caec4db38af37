package sse_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// TestHangUpCancelsRequest: a client that hangs up its stream while a
// request of its session runs gets that request cancelled. The handler's
// context ends, its (non-)answer is written nowhere, the session is gone,
// and every goroutine the stream and the request started returns.
func TestHangUpCancelsRequest(t *testing.T) {
	tests := []struct {
		name   string
		hangUp func(*net.TCPConn) error
		// stillReads: the client keeps its reading side open, so it sees
		// every byte the server writes after the hang-up.
		stillReads bool
	}{
		{name: "connection closed", hangUp: (*net.TCPConn).Close},
		{name: "write side shut, still reading", hangUp: (*net.TCPConn).CloseWrite, stillReads: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A fixed pool: the request's worker stays, and is in the baseline.
			e, b := newBlockingEngine(t, mcp.EngineOptions{})
			h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{KeepAlive: -1}})
			base := runtime.NumGoroutine()

			addr := ts.Listener.Addr().String()
			d, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			nc := d.(*net.TCPConn)
			defer nc.Close()
			_ = nc.SetReadDeadline(time.Now().Add(wait))
			fmt.Fprintf(nc, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
			raw := bufio.NewReader(nc)
			if status := readHead(t, raw); status != "HTTP/1.1 200 OK" {
				t.Fatalf("status line %q", status)
			}
			// The stream is a chunked body.
			br := bufio.NewReader(httputil.NewChunkedReader(raw))
			endpoint, ok := dataOf(mustReadEvent(t, br), "endpoint")
			sm := endpointRE.FindStringSubmatch(endpoint)
			if !ok || sm == nil {
				t.Fatalf("endpoint = %q", endpoint)
			}
			id := sm[1]

			if code, body := post(t, c, endpoint, initialize); code != http.StatusAccepted {
				t.Fatalf("initialize: %d %s", code, body)
			}
			if ev := mustReadEvent(t, br); !strings.HasPrefix(mustData(t, ev), `{"jsonrpc":"2.0","id":1,"result":`) {
				t.Fatalf("initialize answer = %q", ev)
			}
			if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
				t.Fatalf("initialized: %d", code)
			}
			if code, body := post(t, c, endpoint, `{"jsonrpc":"2.0","id":7,"method":"test/block"}`); code != http.StatusAccepted || body != "" {
				t.Fatalf("test/block: %d %q, want 202 and no body", code, body)
			}
			if got := transporttest.Receive(t, b.started, wait, "test/block start"); got != "7" {
				t.Fatalf("started request %s, want 7", got)
			}

			if err := tc.hangUp(nc); err != nil {
				t.Fatal(err)
			}
			if err := transporttest.Receive(t, b.ended, wait, "end of the handler's context"); !errors.Is(err, context.Canceled) {
				t.Fatalf("handler's context ended with %v, want context.Canceled", err)
			}
			if tc.stillReads {
				// The server ends the stream once the session is over;
				// nothing may come before that but the body's end.
				rest, err := io.ReadAll(raw)
				if err != nil || (len(rest) != 0 && string(rest) != "0\r\n\r\n") {
					t.Fatalf("after the hang-up the stream carried %q (%v), want nothing", rest, err)
				}
			}
			transporttest.Settle(t, wait, "session closed after hang-up", func() bool { return h.Sessions() == 0 && e.Session(id) == nil })
			if code, body := post(t, c, endpoint, `{"jsonrpc":"2.0","id":8,"method":"ping"}`); code != http.StatusNotFound {
				t.Fatalf("post after hang-up: %d %s, want 404", code, body)
			}
			nc.Close()
			c.Transport.(*http.Transport).CloseIdleConnections()
			transporttest.GoroutinesBackTo(t, wait, base, 3)
		})
	}
}

// readHead reads a response head and returns its status line.
func readHead(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var status string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("response head: %v", err)
		}
		if line == "\r\n" {
			return status
		}
		if status == "" {
			status = strings.TrimSuffix(line, "\r\n")
		}
	}
}

// mustReadEvent reads one event, raw.
func mustReadEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	ev, err := readEvent(br)
	if err != nil {
		t.Fatalf("event: %v (read %q)", err, ev)
	}
	return ev
}

// mustData returns the data of an `event: message`.
func mustData(t *testing.T, ev string) string {
	t.Helper()
	data, ok := dataOf(ev, "message")
	if !ok {
		t.Fatalf("not a message event: %q", ev)
	}
	return data
}
