package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// backendServer answers with its id and the body it got, and opens a
// session on "initialize" as the replicas do.
type backendServer struct {
	id   string
	srv  *httptest.Server
	hits atomic.Int64
}

func startBackends(t *testing.T, p *proxy, n int) []*backendServer {
	t.Helper()
	var bs []*backendServer
	for i := range n {
		b := &backendServer{id: fmt.Sprintf("r%d", i+1)}
		b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.hits.Add(1)
			body, _ := io.ReadAll(r.Body)
			switch {
			case r.URL.Path == "/sse" && r.Method == http.MethodGet:
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "event: endpoint\ndata: http://%s/sse/message?session_id=sse-%s\n\n", r.Host, b.id)
				return
			case bytes.Contains(body, []byte(`"initialize"`)):
				w.Header().Set(sessionHeader, "mcp-"+b.id)
			}
			fmt.Fprintf(w, "%s:%s", b.id, body)
		}))
		t.Cleanup(b.srv.Close)
		p.add(b.id)
		p.setTarget(b.id, b.srv.URL)
		bs = append(bs, b)
	}
	return bs
}

func newTestProxy(t *testing.T, sticky bool) *proxy {
	t.Helper()
	p, err := newProxy(sticky)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

func post(t *testing.T, p *proxy, path, body string, header map[string]string) (string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, got)
	}
	return string(got), resp.Header
}

func TestProxyRoundRobinAndRetryOnRefusedConnection(t *testing.T) {
	p := newTestProxy(t, false)
	bs := startBackends(t, p, 3)
	seen := map[string]int{}
	for i := range 6 {
		got, _ := post(t, p, "/mcp", fmt.Sprintf("body-%d", i), nil)
		id, body, _ := strings.Cut(got, ":")
		if body != fmt.Sprintf("body-%d", i) {
			t.Fatalf("request %d: backend got %q", i, got)
		}
		seen[id]++
	}
	for _, b := range bs {
		if seen[b.id] != 2 {
			t.Fatalf("round robin: %v", seen)
		}
	}

	// r2 dies; the health checks are not running, so only a refused
	// connection tells the proxy, which must then send the same body on.
	bs[1].srv.Close()
	for i := range 6 {
		got, _ := post(t, p, "/mcp", fmt.Sprintf("again-%d", i), nil)
		if id, body, _ := strings.Cut(got, ":"); id == "r2" || body != fmt.Sprintf("again-%d", i) {
			t.Fatalf("after r2 died, request %d: %q", i, got)
		}
	}
	st := p.stats()["replicas"].(map[string]replicaStats)
	if st["r2"].Retried != 1 || st["r2"].Live {
		t.Fatalf("r2 after its death: %+v (one refused connection, then marked down)", st["r2"])
	}
}

func TestProxyNeverRetriesOnceAResponseBegan(t *testing.T) {
	p := newTestProxy(t, false)
	var other atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		// Dropping the connection mid-body, as a dying replica does.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer broken.Close()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer healthy.Close()
	p.add("broken")
	p.setTarget("broken", broken.URL)
	p.add("healthy")
	p.setTarget("healthy", healthy.URL)
	p.next.Store(uint64(len(p.backends)) - 1) // the next pick is "broken"

	resp, err := http.Post(p.url()+"/mcp", "application/json", strings.NewReader("{}"))
	if err == nil {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil && len(body) == 100 {
			t.Fatalf("a cut response arrived whole: %q", body)
		}
	}
	if n := other.Load(); n != 0 {
		t.Fatalf("the request was sent again after its response began: %d", n)
	}
}

func TestProxyLearnsSessionsCountsCrossingAndSticks(t *testing.T) {
	for _, sticky := range []bool{false, true} {
		t.Run(fmt.Sprintf("sticky=%v", sticky), func(t *testing.T) {
			p := newTestProxy(t, sticky)
			startBackends(t, p, 3)
			_, h := post(t, p, "/mcp", `{"method":"initialize"}`, nil)
			sid := h.Get(sessionHeader)
			owner := strings.TrimPrefix(sid, "mcp-")
			if p.sessions()[sid] != owner {
				t.Fatalf("sessions: %v, want %s → %s", p.sessions(), sid, owner)
			}
			// The legacy transport's session id comes in the stream.
			resp, err := http.Get(p.url() + "/sse")
			if err != nil {
				t.Fatal(err)
			}
			stream, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := endpointRe.FindSubmatch(stream)
			if m == nil {
				t.Fatalf("no endpoint in %q", stream)
			}
			sseSID := string(m[1])
			sseOwner := strings.TrimPrefix(sseSID, "sse-")
			if got := p.sessions()[sseSID]; got != sseOwner {
				t.Fatalf("SSE session: %v (stream %q)", p.sessions(), stream)
			}

			for range 6 {
				got, _ := post(t, p, "/mcp", "x", map[string]string{sessionHeader: sid})
				if id, _, _ := strings.Cut(got, ":"); sticky && id != owner {
					t.Fatalf("sticky: a request of %s's session went to %s", owner, id)
				}
				post(t, p, "/sse/message?session_id="+sseSID, "y", nil)
			}
			st := p.stats()
			if st["session"].(int64) != 12 {
				t.Fatalf("session requests: %v", st)
			}
			crossed := st["crossed"].(int64)
			if sticky && crossed != 0 || !sticky && crossed != 8 {
				t.Fatalf("crossed with sticky=%v: %d of 12 (round robin over 3: 8)", sticky, crossed)
			}
		})
	}
}
