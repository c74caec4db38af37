package httpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

// wait bounds every wait in these tests: a guard against hangs, not a
// speed assertion.
const wait = 20 * time.Second

var quiet = slog.New(slog.DiscardHandler)

// hooks lets a test hold a request in flight.
type hooks struct {
	started chan struct{}
	release chan struct{}
}

// newEngine serves lib (the embedded examples when nil) plus test/hold,
// which answers only once the test releases it, and test/twostep, which
// logs "one", waits for the same release, logs "two" and answers.
func newEngine(t testing.TB, lib *templates.Library, opts mcp.EngineOptions) (*mcp.Engine, *app.App, *hooks) {
	t.Helper()
	if lib == nil {
		lib = transporttest.Library(t)
	}
	hk := &hooks{started: make(chan struct{}, 16), release: make(chan struct{})}
	a := app.New(app.Options{Library: lib, Logger: quiet})
	srv := a.Server()
	srv.Methods = map[string]mcp.Handler{
		"test/hold": func(ctx context.Context, r *mcp.Request) (any, error) {
			hk.started <- struct{}{}
			select {
			case <-hk.release:
				return map[string]string{"held": "released"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"test/twostep": func(ctx context.Context, r *mcp.Request) (any, error) {
			r.Log(mcp.LevelWarning, "test", "one")
			select {
			case <-hk.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.Log(mcp.LevelWarning, "test", "two")
			return map[string]bool{"done": true}, nil
		},
	}
	opts.Logger = quiet
	return mcp.NewEngine(srv, opts), a, hk
}

// start runs a server on a free loopback port until the test ends.
func start(t testing.TB, e *mcp.Engine, opts httpserver.Options) (*httpserver.Server, *client) {
	t.Helper()
	srv, served, c := listen(t, e, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = shutdown(ctx, srv, e)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, c
}

// shutdown stops the server and its engine together, as their owner does:
// the server waits for its streams, which end when the engine, having
// answered the requests in flight, closes their sessions.
func shutdown(ctx context.Context, srv *httpserver.Server, e *mcp.Engine) error {
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(ctx) }()
	return errors.Join(e.Shutdown(ctx), <-httpDone)
}

// listen serves e on a loopback port and returns the server, what Serve
// returned once it has, and a client of it; shutting down is the caller's.
func listen(t testing.TB, e *mcp.Engine, opts httpserver.Options) (*httpserver.Server, <-chan error, *client) {
	t.Helper()
	opts.Addr = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	srv, err := httpserver.New(e, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, served, &client{base: srv.URL(), c: &http.Client{Transport: tr}}
}

// client talks to one server.
type client struct {
	base string
	c    *http.Client
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request; header is name, value, name, value...
func (c *client) do(t testing.TB, method, path, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost && strings.HasPrefix(path, "/mcp") {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

const initMCP = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`

// openMCP initializes a /mcp session.
func (c *client) openMCP(t testing.TB, header ...string) string {
	t.Helper()
	r := c.do(t, http.MethodPost, "/mcp", initMCP, header...)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	r = c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"Mcp-Session-Id", id}, header...)...)
	if r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return id
}

// events is an open event stream (GET /sse or GET /mcp) read in the
// background: each event's data, keyed by its event type.
type events struct {
	resp *http.Response
	ch   chan event
	done chan struct{}
}

type event struct {
	name string // "endpoint", "message", or "" for a comment
	data string
}

func (c *client) stream(t testing.TB, path string, header ...string) *events {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return readEvents(resp)
}

// listenBody and listenHeaders are a 2026-07-28 subscriptions/listen.
const listenBody = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`

var listenHeaders = []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"}

// listen opens a subscriptions/listen stream and waits for its
// acknowledgement.
func (c *client) listen(t testing.TB) *events {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(listenBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(listenHeaders); i += 2 {
		req.Header.Set(listenHeaders[i], listenHeaders[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("listen: %d %s", resp.StatusCode, b)
	}
	ev := readEvents(resp)
	if m := ev.message(t); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: first message %v, want the acknowledgement", m)
	}
	return ev
}

// readEvents reads the event stream resp carries in the background.
func readEvents(resp *http.Response) *events {
	ev := &events{resp: resp, ch: make(chan event, 8192), done: make(chan struct{})}
	go func() {
		defer close(ev.done)
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var cur event
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if cur.name != "" || cur.data != "" {
					if cur.name == "" {
						cur.name = "message"
					}
					ev.ch <- cur
				}
				cur = event{}
			case strings.HasPrefix(line, "event: "):
				cur.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[len("data: "):]
			}
		}
	}()
	return ev
}

func (ev *events) next(t testing.TB) event {
	t.Helper()
	return transporttest.Receive(t, ev.ch, wait, "event")
}

// message returns the next message's decoded JSON.
func (ev *events) message(t testing.TB) map[string]any {
	t.Helper()
	e := ev.next(t)
	if e.name != "message" {
		t.Fatalf("got %q event %q, want a message", e.name, e.data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(e.data), &m); err != nil {
		t.Fatalf("message is not JSON: %q", e.data)
	}
	return m
}

func (ev *events) close() {
	ev.resp.Body.Close()
	<-ev.done
}

var sessionRE = regexp.MustCompile(`session_id=([0-9a-f]{32})(&|$)`)

// openSSE opens GET /sse, initializes the session, and returns the stream
// and its endpoint URL.
func (c *client) openSSE(t testing.TB, query string) (*events, string) {
	t.Helper()
	ev := c.stream(t, "/sse"+query)
	e := ev.next(t)
	if e.name != "endpoint" || !sessionRE.MatchString(e.data) {
		t.Fatalf("first event %q %q, want the endpoint", e.name, e.data)
	}
	endpoint := e.data
	if r := c.post(t, endpoint, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); r != http.StatusAccepted {
		t.Fatalf("initialize: %d", r)
	}
	if m := ev.message(t); m["id"] != "init" {
		t.Fatalf("initialize answer: %v", m)
	}
	if r := c.post(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r != http.StatusAccepted {
		t.Fatalf("initialized: %d", r)
	}
	return ev, endpoint
}

// post sends a message to an absolute URL and returns the status.
func (c *client) post(t testing.TB, url, body string) int {
	t.Helper()
	resp, err := c.c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// errData decodes a JSON-RPC error body's data.
func errData(t testing.TB, body string) mcp.ErrorData {
	t.Helper()
	var eb struct {
		Error struct {
			Data mcp.ErrorData `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("error body is not JSON: %q", body)
	}
	return eb.Error.Data
}

// closed reports whether ch is closed, waiting at most the wait bound.
func closedWithin(ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-time.After(wait):
		return errors.New("still open")
	}
}
