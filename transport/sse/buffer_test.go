package sse_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// TestFullBufferDropsAtOnce: a client that stops reading while its
// stream is sent more than sse.BufferBytes is dropped as the buffer
// fills, not after the write timeout (an hour here): its session ends,
// its message endpoint answers 404, its connection is cut, the drop is
// counted, and nothing of the stream stays behind. With the buffer
// counted in events, the messages below fit it, and the client would be
// held for the hour.
func TestFullBufferDropsAtOnce(t *testing.T) {
	tests := []struct {
		name string
		blob int // bytes of each notification
	}{
		{name: "messages far smaller than the buffer", blob: 64 << 10},
		{name: "messages larger than the buffer", blob: 2 * sse.BufferBytes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, mcp.EngineOptions{})
			line := &countAtLine{msg: "dropped a legacy SSE client", at: make(chan uint64, 1)}
			h, ts, c := serve(t, e, sse.Options{Settings: httpx.Settings{WriteTimeout: time.Hour, KeepAlive: -1, Logger: slog.New(line)}})
			dropped := h.Dropped
			line.count.Store(&dropped)
			base := runtime.NumGoroutine()

			conn, id := stalledStream(t, ts.Listener.Addr().String())
			defer conn.Close()
			endpoint := ts.URL + "/sse/message?session_id=" + id
			handshakeRaw(t, c, endpoint)
			blob := strings.Repeat("x", tc.blob)
			// Whatever the socket buffers take, this is more: 64 MiB.
			sent := 0
			for ; sent < 64<<20 && e.Session(id) != nil; sent += tc.blob {
				e.Notify("notifications/test", map[string]string{"blob": blob})
			}
			transporttest.Settle(t, wait, "the stalled session ended", func() bool { return e.Session(id) == nil })
			t.Logf("dropped after %d MiB of notifications", sent>>20)
			if code, body := post(t, c, endpoint, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); code != http.StatusNotFound || !strings.Contains(body, mcp.CodeSessionNotFound) {
				t.Errorf("a message for the dropped session: %d %s, want 404 %s", code, body, mcp.CodeSessionNotFound)
			}
			// The connection was cut: reading it now finds its end (after
			// what the socket buffers held) long before the write timeout.
			_ = conn.SetReadDeadline(time.Now().Add(wait))
			if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("reading the dropped stream: %v, want its end", err)
			}
			transporttest.Settle(t, wait, "the stream removed", func() bool { return h.Sessions() == 0 })
			if got := h.Dropped(); got != 1 {
				t.Errorf("Dropped() = %d, want 1", got)
			}
			select {
			case n := <-line.at:
				if n != 0 {
					t.Errorf("the drop was counted (%d) before its line was written", n)
				}
			default:
				t.Error("the drop was not logged")
			}
			conn.Close()
			c.Transport.(*http.Transport).CloseIdleConnections()
			transporttest.GoroutinesBackTo(t, wait, base, 3)
		})
	}
}

// countAtLine is a log handler that tells what count said when the line
// starting with msg was written.
type countAtLine struct {
	msg   string
	count atomic.Pointer[func() uint64]
	at    chan uint64
}

func (h *countAtLine) Enabled(context.Context, slog.Level) bool { return true }
func (h *countAtLine) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countAtLine) WithGroup(string) slog.Handler            { return h }

func (h *countAtLine) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		select {
		case h.at <- (*h.count.Load())():
		default: // a second line: the first is the one asked about
		}
	}
	return nil
}

// stalledStream opens GET /sse on a raw connection, reads up to the endpoint event and returns the connection,
// never read again by the caller, and the session's id.
func stalledStream(t *testing.T, addr string) (*net.TCPConn, string) {
	t.Helper()
	d, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := d.(*net.TCPConn)
	fmt.Fprintf(conn, "GET /sse HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	var buf []byte
	tmp := make([]byte, 512)
	for {
		n, err := conn.Read(tmp)
		if err != nil {
			t.Fatalf("reading the endpoint event: %v (read %q)", err, buf)
		}
		buf = append(buf, tmp[:n]...)
		if m := sessionIDRE.FindSubmatch(buf); m != nil {
			return conn, string(m[1])
		}
	}
}

var sessionIDRE = regexp.MustCompile(`session_id=([0-9a-f]{32})`)

// lockedBuffer is a log's destination written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStreamsShareTheirTotal: what all streams hold together is bounded
// (Options.TotalBufferBytes) below what each may hold: a client that
// stops reading is dropped once the streams' total would go over it,
// though its own buffer has room, saying so in the log; and what its
// stream held is let go of once it is gone.
func TestStreamsShareTheirTotal(t *testing.T) {
	const total = 256 << 10 // a quarter of one stream's BufferBytes
	e := newEngine(t, mcp.EngineOptions{})
	var logs lockedBuffer
	h, ts, c := serve(t, e, sse.Options{TotalBufferBytes: total, Settings: httpx.Settings{WriteTimeout: time.Hour, KeepAlive: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}})

	conn, id := stalledStream(t, ts.Listener.Addr().String())
	defer conn.Close()
	handshakeRaw(t, c, ts.URL+"/sse/message?session_id="+id)
	blob := strings.Repeat("x", 16<<10)
	peak := int64(0)
	for sent := 0; sent < 64<<20 && e.Session(id) != nil; sent += len(blob) {
		e.Notify("notifications/test", map[string]string{"blob": blob})
		peak = max(peak, h.Buffered())
	}
	transporttest.Settle(t, wait, "the stalled session ended", func() bool { return e.Session(id) == nil })
	if !strings.Contains(logs.String(), "hold their total") {
		t.Errorf("the drop was not for the total; log:\n%s", logs.String())
	}
	if peak > total {
		t.Errorf("the streams held %d bytes, over their total of %d", peak, total)
	}
	transporttest.Settle(t, wait, "the stream removed", func() bool { return h.Sessions() == 0 })
	if got := h.Dropped(); got != 1 {
		t.Errorf("Dropped() = %d, want 1", got)
	}
	if got := h.Buffered(); got != 0 {
		t.Errorf("Buffered() = %d once the stream is gone, want 0", got)
	}
}
