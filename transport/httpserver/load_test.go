package httpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

// loadShape is the load test's size: 50 SSE and 50 /mcp sessions of
// 200 requests each, all at once, fewer in -short mode. What it proves
// (every id answered once, on its own session; no goroutine left) comes
// from the sessions and requests overlapping, not from their number: 20,000
// requests under the race detector keep every session busy at once for
// the whole run, where 100,000 spent a minute of make test's two cores
// repeating it. Throughput is the benchmarks' (make bench, bench-peers).
func loadShape() (sessions, requests, posters int) {
	if testing.Short() {
		return 10, 100, 4
	}
	return 50, 200, 4
}

// promptsGet asks for Commit_Message with a marker in its argument: the
// rendered text carries the marker back, which proves the answer belongs
// to this session and this request.
func promptsGet(id int, marker string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":%q}}}`, id, marker)
}

type promptAnswer struct {
	ID     json.RawMessage `json:"id"`
	Error  *struct{ Message string }
	Result struct {
		Messages []struct {
			Content struct{ Text string } `json:"content"`
		} `json:"messages"`
	} `json:"result"`
}

func (a *promptAnswer) text() string {
	if len(a.Result.Messages) == 0 {
		return ""
	}
	return a.Result.Messages[0].Content.Text
}

// TestLoad: 50 SSE sessions and 50 /mcp sessions each send 200 requests,
// all at once. Every id is answered exactly once, on its own session,
// without errors; once the sessions close, no goroutine is left.
func TestLoad(t *testing.T) {
	sessions, requests, posters := loadShape()
	// The engine's goroutines that served requests linger two seconds
	// after the burst; the final count waits them out.
	e, _, _ := newEngine(t, nil, mcp.EngineOptions{})
	_, c := start(t, e, httpserver.Options{})
	runtime.GC()
	base := runtime.NumGoroutine()

	var wg sync.WaitGroup
	for k := 0; k < sessions; k++ {
		wg.Add(2)
		go func() { defer wg.Done(); loadSSE(t, c, k, requests, posters) }()
		go func() { defer wg.Done(); loadMCP(t, c, k, requests, posters) }()
	}
	wg.Wait()
	transporttest.Settle(t, wait, "every session closed", func() bool { return e.SessionCount() == 0 })
	c.c.Transport.(*http.Transport).CloseIdleConnections()
	transporttest.GoroutinesBackTo(t, wait, base, 4)
}

func loadSSE(t *testing.T, c *client, k, requests, posters int) {
	ev, endpoint := c.openSSE(t, "")
	defer ev.close()
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := p + 1; id <= requests; id += posters {
				if code := c.post(t, endpoint, promptsGet(id, fmt.Sprintf("sse-%d-%d", k, id))); code != http.StatusAccepted {
					t.Errorf("sse %d: POST id %d: %d", k, id, code)
					return
				}
			}
		}()
	}
	seen := make([]int, requests+1)
	for n := 0; n < requests; n++ {
		e := ev.next(t)
		var a promptAnswer
		if err := json.Unmarshal([]byte(e.data), &a); err != nil || e.name != "message" {
			t.Fatalf("sse %d: bad event %q %q", k, e.name, e.data)
		}
		var id int
		if json.Unmarshal(a.ID, &id) != nil || id < 1 || id > requests || a.Error != nil {
			t.Fatalf("sse %d: unexpected answer %s", k, e.data)
		}
		seen[id]++
		if want := fmt.Sprintf("sse-%d-%d\n", k, id); !strings.Contains(a.text(), want) {
			t.Fatalf("sse %d: answer to id %d does not carry %q", k, id, want)
		}
	}
	wg.Wait()
	// Nothing else is on its way: the next message answers this ping.
	c.post(t, endpoint, `{"jsonrpc":"2.0","id":"end","method":"ping"}`)
	if m := ev.message(t); m["id"] != "end" {
		t.Errorf("sse %d: after %d answers got %v, want only the ping's", k, requests, m)
	}
	for id := 1; id <= requests; id++ {
		if seen[id] != 1 {
			t.Errorf("sse %d: id %d answered %d times", k, id, seen[id])
		}
	}
}

func loadMCP(t *testing.T, c *client, k, requests, posters int) {
	sid := c.openMCP(t)
	var mu sync.Mutex
	seen := make([]int, requests+1)
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := p + 1; id <= requests; id += posters {
				req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(promptsGet(id, fmt.Sprintf("mcp-%d-%d", k, id))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", sid)
				resp, err := c.c.Do(req)
				if err != nil {
					t.Errorf("mcp %d: id %d: %v", k, id, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var a promptAnswer
				if resp.StatusCode != 200 || json.Unmarshal(body, &a) != nil || a.Error != nil {
					t.Errorf("mcp %d: id %d: %d %s", k, id, resp.StatusCode, body)
					return
				}
				var got int
				if json.Unmarshal(a.ID, &got) != nil || got != id ||
					!strings.Contains(a.text(), fmt.Sprintf("mcp-%d-%d\n", k, id)) {
					t.Errorf("mcp %d: POST of id %d got the answer %s", k, id, body)
					return
				}
				mu.Lock()
				seen[id]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for id := 1; id <= requests; id++ {
		if seen[id] != 1 {
			t.Errorf("mcp %d: id %d answered %d times", k, id, seen[id])
		}
	}
	if r := c.do(t, http.MethodDelete, "/mcp", "", "Mcp-Session-Id", sid); r.status != http.StatusOK {
		t.Errorf("mcp %d: DELETE: %d", k, r.status)
	}
}
