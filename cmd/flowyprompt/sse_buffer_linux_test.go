package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// TestBinarySSEClientThatNeverReads: legacy SSE clients that open their
// stream, then never read it again while asking for resources of about
// 90 KB, are each dropped once their stream holds sse.BufferBytes: the
// next post for the session gets 404 SESSION_NOT_FOUND, its connection is
// cut well before the 30 s write timeout, /healthz counts the drops, and
// the server's peak RSS grows by a few buffers' worth, not by the hundreds
// of answers each stream could hold when its buffer was counted in events
// (about 35 MB a client).
func TestBinarySSEClientThatNeverReads(t *testing.T) {
	const (
		clients = 8
		// posts bounds the resources/read each client sends: what its
		// socket buffers take plus BufferBytes is far fewer; the buffer
		// counted in events took 385 answers before it was full.
		posts = 600
		// perClient is what a dropped client may leave in the peak RSS:
		// its buffer, the answer being made, and the collector's room.
		perClient = 4 * sse.BufferBytes
		slack     = 48 << 20
	)
	dir := t.TempDir()
	big := `{"metadata":{"name":"Big","description":"a large resource","version":"1.0.0"},"variables":[],` +
		`"results":[{"name":"Text","format":"markdown","order":1,"content":"` + strings.Repeat("lorem ipsum ", 7500) + `"}]}`
	if err := os.WriteFile(filepath.Join(dir, "Big.json"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startHTTP(t, 0, "TEMPLATES_DIR="+dir)
	if n := s.health(t)["templates"]; n != float64(1) {
		t.Fatalf("/healthz counts %v templates, want the 1 large one", n)
	}
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	postTo := func(endpoint, body string) (int, string) {
		res, err := c.Post(endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			s.fatalf(t, "POST %s: %v", endpoint, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	// Warm up what a client uses, read as it comes, so that its first
	// use is not counted.
	warm, endpoint := sseStream(t, s)
	for _, m := range []string{sseInitialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sseReadBig(2)} {
		if code, body := postTo(endpoint, m); code != http.StatusAccepted {
			t.Fatalf("warm-up: %d %s", code, body)
		}
	}
	warm.Close()
	before, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}

	for i := range clients {
		conn, endpoint := sseStream(t, s)
		defer conn.Close()
		for _, m := range []string{sseInitialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
			if code, body := postTo(endpoint, m); code != http.StatusAccepted {
				t.Fatalf("client %d: %d %s", i, code, body)
			}
		}
		sent := 0
		for ; sent < posts; sent++ {
			code, body := postTo(endpoint, sseReadBig(10+sent))
			if code == http.StatusNotFound {
				if !strings.Contains(body, mcp.CodeSessionNotFound) {
					t.Fatalf("client %d: 404 %s, want %s", i, body, mcp.CodeSessionNotFound)
				}
				break
			}
			if code != http.StatusAccepted {
				t.Fatalf("client %d, resources/read %d: %d %s", i, sent, code, body)
			}
		}
		if sent == posts {
			s.fatalf(t, "client %d never read its stream, yet its session took %d answers of %d KB and is still there", i, posts, len(big)>>10)
		}
		t.Logf("client %d: its session ended after %d answers", i, sent)
		// Cut by the server: reading now finds the stream's end, after what
		// the socket buffers held, not 30 s of write timeout later.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, conn); err != nil && !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("client %d: reading its dropped stream: %v, want its end within 10 s", i, err)
		}
	}
	after, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	grew := after.HWM - before.RSS
	t.Logf("RSS %d MB before, peak %d MB with %d clients that never read", before.RSS>>20, after.HWM>>20, clients)
	if bound := int64(clients*perClient + slack); grew > bound {
		t.Errorf("%d clients that never read took the server's peak RSS from %d MB to %d MB, want at most %d MB more",
			clients, before.RSS>>20, after.HWM>>20, bound>>20)
	}
	if n := s.health(t)["dropped_streams"]; n != float64(clients) {
		t.Errorf("/healthz dropped_streams = %v, want %d", n, clients)
	}
}

const sseInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"never-reads","version":"0"}}}`

func sseReadBig(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"template://Big"}}`, id)
}

var sseEndpointRE = regexp.MustCompile(`data: (http://\S+/sse/message\?session_id=[0-9a-f]+)`)

// sseStream opens GET /sse on a connection of its own and reads up to the
// endpoint event; the caller reads no more of it.
func sseStream(t *testing.T, s *httpServer) (net.Conn, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		s.fatalf(t, "dial: %v", err)
	}
	fmt.Fprintf(conn, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", s.addr)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			conn.Close()
			s.fatalf(t, "GET /sse: no endpoint event: %v", err)
		}
		if m := sseEndpointRE.FindStringSubmatch(line); m != nil {
			return conn, m[1]
		}
	}
}
