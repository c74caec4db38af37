package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/sse"
)

// wait bounds every wait in these tests: a guard against hangs, not a
// speed assertion.
const wait = 10 * time.Second

// newEngine serves the embedded example library plus test methods.
func newEngine(t testing.TB, opts mcp.EngineOptions) *mcp.Engine {
	t.Helper()
	e, _ := newBlockingEngine(t, opts)
	return e
}

// blocker watches the test/block requests, which run until their context
// ends.
type blocker struct {
	started chan string // the request's id, once it runs
	ended   chan error  // its context's error, once that ends
}

// newBlockingEngine is newEngine with a view of the test/block requests.
func newBlockingEngine(t testing.TB, opts mcp.EngineOptions) (*mcp.Engine, *blocker) {
	t.Helper()
	b := &blocker{started: make(chan string, 16), ended: make(chan error, 16)}
	quiet := transporttest.Quiet
	lib := transporttest.Library(t)
	srv := app.New(app.Options{Library: lib, Logger: quiet}).Server()
	srv.Methods = map[string]mcp.Handler{
		"test/progress": func(_ context.Context, r *mcp.Request) (any, error) {
			var p struct{ mcp.ParamsMeta }
			if err := r.Decode(&p); err != nil {
				return nil, err
			}
			r.Progress(1, 1, "half way")
			return map[string]bool{"done": true}, nil
		},
		"test/block": func(ctx context.Context, r *mcp.Request) (any, error) {
			b.started <- string(r.ID)
			<-ctx.Done()
			b.ended <- ctx.Err()
			return nil, ctx.Err()
		},
	}
	opts.Logger = quiet
	return mcp.NewEngine(srv, opts), b
}

// serve mounts h as the server does and stops everything at cleanup:
// the engine first, so streams end and the test server can close.
func serve(t testing.TB, e *mcp.Engine, opts sse.Options) (*sse.Handler, *httptest.Server, *http.Client) {
	t.Helper()
	h := sse.New(e, opts)
	mux := http.NewServeMux()
	mux.Handle("/sse", h)
	mux.Handle("/sse/message", h)
	ts := httptest.NewServer(mux)
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = e.Shutdown(ctx)
		tr.CloseIdleConnections()
		ts.Close()
	})
	return h, ts, &http.Client{Transport: tr}
}

// stream reads a GET /sse response event by event, keeping each event's
// exact bytes.
type stream struct {
	resp   *http.Response
	events chan string
	done   chan struct{}
}

func openStream(t testing.TB, c *http.Client, url string) *stream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	s := &stream{resp: resp, events: make(chan string, 4096), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		br := bufio.NewReader(resp.Body)
		for {
			ev, err := readEvent(br)
			if err != nil {
				return
			}
			s.events <- ev
		}
	}()
	return s
}

// readEvent reads one event, raw: its lines up to and with the blank line
// that ends it.
func readEvent(br *bufio.Reader) (string, error) {
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		ev.WriteString(line)
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" {
			return ev.String(), nil
		}
	}
}

// next returns the next event's raw text.
func (s *stream) next(t testing.TB) string {
	t.Helper()
	return transporttest.Receive(t, s.events, wait, "event")
}

// message returns the next `event: message`'s data, skipping keep-alives.
func (s *stream) message(t testing.TB) map[string]any {
	t.Helper()
	for {
		ev := s.next(t)
		if isPing(ev) {
			continue
		}
		data, ok := dataOf(ev, "message")
		if !ok {
			t.Fatalf("not a message event: %q", ev)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("message data is not JSON: %q", data)
		}
		return m
	}
}

func (s *stream) close() {
	s.resp.Body.Close()
	<-s.done
}

// sseEvent is one event as an SSE client reads it.
type sseEvent struct {
	event, data, comment string
	dataLines            int
}

// parseEvent reads the fields of one raw event (its lines and the blank
// line that ends it), in whatever order they come. It reports false for a
// field no SSE client knows, or an event not ended by a blank line.
func parseEvent(raw string) (sseEvent, bool) {
	var ev sseEvent
	if !strings.HasSuffix(raw, "\n\n") {
		return ev, false
	}
	for _, line := range strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n") {
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "":
			ev.comment = value
		case "event":
			ev.event = value
		case "data":
			ev.data = value
			ev.dataLines++
		case "id":
			// The events server names every event with an empty id, which
			// only resets a client's last event id: the legacy transport
			// never resumes streams.
			if value != "" {
				return ev, false
			}
		default:
			return ev, false
		}
	}
	return ev, true
}

// isPing reports whether a raw event is a keep-alive comment.
func isPing(raw string) bool {
	ev, ok := parseEvent(raw)
	return ok && ev.comment == "ping" && ev.dataLines == 0 && ev.event == ""
}

// dataOf returns the data of one event named event, carried on one data
// line, as MCP's legacy transport sends every message.
func dataOf(raw, event string) (string, bool) {
	ev, ok := parseEvent(raw)
	if !ok || ev.event != event || ev.dataLines != 1 {
		return "", false
	}
	return ev.data, true
}

// endpoint reads the first event, which must be the endpoint.
func (s *stream) endpoint(t testing.TB) string {
	t.Helper()
	ev := s.next(t)
	url, ok := dataOf(ev, "endpoint")
	if !ok {
		t.Fatalf("first event is not the endpoint: %q", ev)
	}
	return url
}

func post(t testing.TB, c *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`

// initialized opens a stream at url and initializes its session; the
// stream is closed at cleanup.
func initialized(t testing.TB, c *http.Client, url string) (*stream, string) {
	t.Helper()
	s := openStream(t, c, url)
	t.Cleanup(s.close)
	endpoint := s.endpoint(t)
	handshake(t, c, s, endpoint)
	return s, endpoint
}

// handshake initializes the session behind a stream.
func handshake(t testing.TB, c *http.Client, s *stream, endpoint string) {
	t.Helper()
	if code, body := post(t, c, endpoint, initialize); code != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if m := s.message(t); fmt.Sprint(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize answer: %v", m)
	}
	if code, _ := post(t, c, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
}
