package main

// The budget of posted messages in flight (--max-inflight-bytes), through
// the built binary: clients that hold large bodies open take no more than
// their share, and the server refuses, with 429 or 503 and Retry-After,
// what would take it over its budget, instead of reading it.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// postFrom is a whole POST /mcp of body, from the client X-Forwarded-For
// names (the server trusts loopback as its proxy).
func postFrom(host, client, body string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nX-Forwarded-For: %s\r\nContent-Length: %d\r\n\r\n%s",
		host, client, len(body), body)
}

// holdBody opens a POST /mcp from client declaring a body of declaredBody
// bytes, sends its start and keeps the rest back: the server holds the
// body's share of its budget until the connection closes. It returns once
// the server has taken that share, which a small message from the same
// client, refused for its client's share, shows.
func (s *httpServer) holdBody(t *testing.T, client string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		s.fatalf(t, "dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	head := unfinishedPost(s.addr, "X-Forwarded-For: "+client+"\r\n", bodyStart(64<<10))
	if _, err := c.Write([]byte(head)); err != nil {
		s.fatalf(t, "write the held body's start: %v", err)
	}
	waitFor(t, answerBound, "the held body to take its client's share", func() (bool, string) {
		res, body := s.rawRequest(t, postFrom(s.addr, client, ping))
		return res.StatusCode == http.StatusTooManyRequests, res.Status + " " + string(body)
	})
	return c
}

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// TestBinaryInflightBudget: with a budget of two messages of the largest
// size, two clients holding one each fill it: a third client's message
// waits, then gets 503 SERVER_BUSY; one more of a holding client's gets
// 429 CLIENT_LIMIT_REACHED at once; both name --max-inflight-bytes and
// carry Retry-After. Once a holder hangs up, a message of the largest size
// is read again.
func TestBinaryInflightBudget(t *testing.T) {
	s := startHTTPArgs(t, "--max-inflight-bytes", strconv.Itoa(2*declaredBody), "--max-message-size", strconv.Itoa(declaredBody),
		"--trusted-proxies", "127.0.0.1")
	a := s.holdBody(t, "203.0.113.1")
	s.holdBody(t, "203.0.113.2")

	tests := []struct {
		name, client string
		status       int
		code         string
	}{
		{"a holding client's next message", "203.0.113.1", http.StatusTooManyRequests, "CLIENT_LIMIT_REACHED"},
		{"another client's message, the server's budget spent", "203.0.113.3", http.StatusServiceUnavailable, "SERVER_BUSY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := s.rawRequest(t, postFrom(s.addr, tc.client, ping))
			if res.StatusCode != tc.status {
				t.Fatalf("answer %s %q, want %d", res.Status, body, tc.status)
			}
			checkError(t, body, tc.code)
			if !strings.Contains(string(body), "--max-inflight-bytes") {
				t.Errorf("the refusal does not say how to raise the limit: %s", body)
			}
			if got := res.Header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After %q, want 1", got)
			}
		})
	}

	// The held body's share is let go as its connection ends; the server's
	// own wait for its budget (up to a second) covers the time that takes.
	a.Close()
	pad := declaredBody - len(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""}}`)
	large := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", pad) + `"}}`
	res, body := s.rawRequest(t, postFrom(s.addr, "203.0.113.3", large))
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a message of %d bytes once a holder hung up: %s %q, want it read (400: it names no session)", len(large), res.Status, body)
	}
	checkError(t, body, "SESSION_REQUIRED")
	s.requireRunning(t, "after the refusals")
}

// TestBinaryInflightBytesMemory: sixty-four clients that each send all
// of a message of the largest size but its last byte, and hold it there,
// make the server hold at most its budget of them (--max-inflight-bytes,
// 32 MiB here), not all of them (256 MiB, twice that as buffers grow):
// the rest wait, then are refused unread. RSS, read from /proc, grows by
// less than the bound.
func TestBinaryInflightBytesMemory(t *testing.T) {
	const clients = 64
	const budget = 32 << 20
	const bound = 96 << 20 // the budget, and room for the heap's own
	s := startHTTPArgs(t, "--max-inflight-bytes", strconv.Itoa(budget), "--max-message-size", strconv.Itoa(declaredBody),
		"--trusted-proxies", "127.0.0.1")
	s.health(t)
	before, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	body := bodyStart(declaredBody - 1) // shared, read only
	conns := make([]net.Conn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var cut atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			conns[i] = c
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			head := unfinishedPost(s.addr, fmt.Sprintf("X-Forwarded-For: 203.0.113.%d\r\n", i+1), nil)
			// A message refused for want of budget has its connection
			// closed with its body unread: the write fails, as it should.
			if _, err := io.WriteString(c, head); err != nil {
				cut.Add(1)
				return
			}
			if _, err := c.Write(body); err != nil {
				cut.Add(1)
			}
		})
	}
	wg.Wait()
	s.requireRunning(t, "while holding unfinished bodies")
	after, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RSS %d MB -> %d MB (peak %d MB); %d of %d bodies refused unread",
		before.RSS>>20, after.RSS>>20, after.HWM>>20, cut.Load(), clients)
	// What the server holds, as it counts it: within its budget, however
	// many of the refused clients' writes the kernel's buffers took in
	// before their connections were closed (so cut is only logged).
	held, _ := s.health(t)["held_bytes"].(map[string]any)
	if posted, _ := held["posted"].(float64); posted <= 0 || posted > budget {
		t.Errorf("/healthz held_bytes.posted = %v, want some and at most the budget, %d", held["posted"], budget)
	}
	if grew := after.RSS - before.RSS; grew >= bound {
		t.Fatalf("%d unfinished %d-byte bodies grew the server's RSS from %d MB to %d MB, want under %d MB more",
			clients, declaredBody, before.RSS>>20, after.RSS>>20, bound>>20)
	}
}
