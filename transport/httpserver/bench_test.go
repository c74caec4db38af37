package httpserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

// benchPrompt is one prompts/get of an embedded example with arguments.
func benchPrompt(id int64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"Code_Review","arguments":{"code":"func add(a, b int) int { return a - b }","language":"Go","focus":"correctness"}}}`, id)
}

// closedLoop runs b.N requests over `sessions` workers, each sending one
// request at a time and waiting for its answer, and reports throughput
// and the latency distribution.
func closedLoop(b *testing.B, sessions int, do func(worker int, id int64)) {
	var next atomic.Int64
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	startAll := time.Now()
	for w := 0; w < sessions; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := next.Add(1)
				if id > int64(b.N) {
					return
				}
				t0 := time.Now()
				do(w, id)
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(startAll)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // throughput and percentiles say it better
}

// BenchmarkSSEPromptsGet: prompts/get over the legacy SSE transport, each
// request posted to /sse/message and answered on the session's stream.
func BenchmarkSSEPromptsGet(b *testing.B) {
	for _, sessions := range []int{1, 50} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			e, _, _ := newEngine(b, nil, mcp.EngineOptions{})
			_, c := start(b, e, httpserver.Options{})
			streams := make([]*events, sessions)
			endpoints := make([]string, sessions)
			for i := range streams {
				streams[i], endpoints[i] = c.openSSE(b, "")
			}
			defer func() {
				for _, s := range streams {
					s.close()
				}
			}()
			closedLoop(b, sessions, func(w int, id int64) {
				if code := c.post(b, endpoints[w], benchPrompt(id)); code != http.StatusAccepted {
					b.Errorf("POST: %d", code)
				}
				if ev := streams[w].next(b); !strings.Contains(ev.data, fmt.Sprintf(`"id":%d,`, id)) {
					b.Errorf("answer %q", ev.data[:min(len(ev.data), 80)])
				}
			})
		})
	}
}

// BenchmarkStreamablePromptsGet: prompts/get over Streamable HTTP, each
// request a POST to /mcp answered with JSON.
func BenchmarkStreamablePromptsGet(b *testing.B) {
	for _, sessions := range []int{1, 50} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			e, _, _ := newEngine(b, nil, mcp.EngineOptions{})
			_, c := start(b, e, httpserver.Options{})
			ids := make([]string, sessions)
			for i := range ids {
				ids[i] = c.openMCP(b)
			}
			closedLoop(b, sessions, func(w int, id int64) {
				req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(benchPrompt(id)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", ids[w])
				resp, err := c.c.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(body, []byte(fmt.Sprintf(`"id":%d,`, id))) {
					b.Errorf("answer %d %q", resp.StatusCode, body[:min(len(body), 80)])
				}
			})
		})
	}
}

// inUse is the server process's live memory: heap objects and goroutine
// stacks, after a full collection.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

const idleSessions = 1000

// BenchmarkIdleSessionMemory: what 1,000 initialized, idle sessions cost
// the server, per session. An SSE session holds its connection and
// stream open; a /mcp session needs no connection between requests. The
// SSE figure includes the test client's raw connection (a few hundred
// bytes on the client side of the same process).
func BenchmarkIdleSessionMemory(b *testing.B) {
	b.Run("transport=sse", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e, _, _ := newEngine(b, nil, mcp.EngineOptions{})
			_, c := start(b, e, httpserver.Options{})
			before := inUse()
			conns := make([]net.Conn, 0, idleSessions)
			for j := 0; j < idleSessions; j++ {
				conn, endpoint := rawSSE(b, c.base)
				conns = append(conns, conn)
				if code := c.post(b, endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"idle","version":"0"}}}`); code != http.StatusAccepted {
					b.Fatalf("initialize: %d", code)
				}
			}
			transporttest.Settle(b, wait, "sessions open", func() bool { return e.SessionCount() == idleSessions })
			after := inUse()
			b.ReportMetric(float64(int64(after)-int64(before))/idleSessions, "bytes/session")
			for _, conn := range conns {
				conn.Close()
			}
			transporttest.Settle(b, wait, "sessions closed", func() bool { return e.SessionCount() == 0 })
		}
		b.ReportMetric(0, "ns/op")
	})
	b.Run("transport=mcp", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e, _, _ := newEngine(b, nil, mcp.EngineOptions{})
			_, c := start(b, e, httpserver.Options{})
			c.openMCP(b) // the client's connection exists before measuring
			before := inUse()
			for j := 1; j < idleSessions; j++ {
				c.openMCP(b)
			}
			after := inUse()
			b.ReportMetric(float64(int64(after)-int64(before))/(idleSessions-1), "bytes/session")
		}
		b.ReportMetric(0, "ns/op")
	})
}

// rawSSE opens GET /sse on a bare connection, reads up to the endpoint
// event and then leaves the connection unread, as an idle client does.
func rawSSE(b *testing.B, base string) (net.Conn, string) {
	b.Helper()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	var got []byte
	buf := make([]byte, 1024)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte("data: ")); i >= 0 {
			if j := bytes.IndexByte(got[i:], '\n'); j >= 0 {
				return conn, string(got[i+len("data: ") : i+j])
			}
		}
	}
}
