package streamable_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
)

// wait bounds every wait in these tests: a guard against hangs, not a
// speed assertion.
const wait = 10 * time.Second

// barrier releases the test/barrier requests once n of them are in
// flight at the same time, so a transport that handled one POST at a time
// would never answer any.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func (b *barrier) arrive() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	return b.open
}

type fixture struct {
	e       *mcp.Engine
	h       *streamable.Handler
	ts      *httptest.Server
	c       *http.Client
	barrier *barrier
	started chan string   // ids of test/block requests as they start
	proceed chan struct{} // lets test/twostep take its second step
}

func newFixture(t testing.TB, eopts mcp.EngineOptions, opts streamable.Options) *fixture {
	t.Helper()
	return newWrappedFixture(t, eopts, opts, nil)
}

// newWrappedFixture is newFixture with the handler behind wrap (nil:
// none), for tests that change what it sees of its connections.
func newWrappedFixture(t testing.TB, eopts mcp.EngineOptions, opts streamable.Options, wrap func(http.Handler) http.Handler) *fixture {
	t.Helper()
	quiet := transporttest.Quiet
	lib := transporttest.Library(t)
	f := &fixture{barrier: &barrier{n: 10, open: make(chan struct{})}, started: make(chan string, 100),
		proceed: make(chan struct{})}
	srv := app.New(app.Options{Library: lib, Logger: quiet}).Server()
	srv.Methods = map[string]mcp.Handler{
		"test/progress": func(_ context.Context, r *mcp.Request) (any, error) {
			var p struct{ mcp.ParamsMeta }
			if err := r.Decode(&p); err != nil {
				return nil, err
			}
			r.Progress(1, 2, "half way")
			r.Log(mcp.LevelWarning, "test", "careful")
			return map[string]bool{"done": true}, nil
		},
		"test/barrier": func(ctx context.Context, r *mcp.Request) (any, error) {
			select {
			case <-f.barrier.arrive():
				return map[string]string{"id": string(r.ID)}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"test/elicit": func(ctx context.Context, r *mcp.Request) (any, error) {
			var out map[string]any
			if err := r.Call(ctx, mcp.MethodElicitationCreate, map[string]any{"message": "name?"}, &out); err != nil {
				return nil, err
			}
			return out, nil
		},
		// test/endstream logs "before" when asked, ends its stream, logs
		// "after" and answers whether the transport could end the stream.
		"test/endstream": func(_ context.Context, r *mcp.Request) (any, error) {
			var p struct {
				Before bool `json:"before"`
			}
			if err := r.Decode(&p); err != nil {
				return nil, err
			}
			if p.Before {
				r.Log(mcp.LevelWarning, "test", "before")
			}
			ended := r.EndStream()
			r.Log(mcp.LevelWarning, "test", "after")
			return map[string]bool{"ended": ended}, nil
		},
		// test/twostep logs "one", waits for the test, logs "two".
		"test/twostep": func(ctx context.Context, r *mcp.Request) (any, error) {
			r.Log(mcp.LevelWarning, "test", "one")
			select {
			case <-f.proceed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.Log(mcp.LevelWarning, "test", "two")
			return map[string]bool{"done": true}, nil
		},
		"test/block": func(ctx context.Context, r *mcp.Request) (any, error) {
			f.started <- string(r.ID)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	eopts.Logger = quiet
	f.e = mcp.NewEngine(srv, eopts)
	f.h = streamable.New(f.e, opts)
	var h http.Handler = f.h
	if wrap != nil {
		h = wrap(f.h)
	}
	f.ts = httptest.NewServer(h)
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	f.c = &http.Client{Transport: tr}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = f.e.Shutdown(ctx)
		tr.CloseIdleConnections()
		f.ts.Close()
	})
	return f
}

const (
	acceptBoth = "application/json, text/event-stream"
	initBody   = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`
)

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends one request to /mcp.
func (f *fixture) do(t testing.TB, method, session, accept, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// open initializes a session and returns its id.
func (f *fixture) open(t testing.TB) string {
	t.Helper()
	r := f.do(t, http.MethodPost, "", acceptBoth, initBody)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", r.status, id, r.body)
	}
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return id
}

// sseEvent is one event of a stream, as the framing test reads it.
type sseEvent struct {
	id, retry, data string
	message         bool // an `event: message` line
}

// parseEvents splits an SSE body into its events, failing on any line
// this server does not write: an optional id and retry, then either
// `event: message` with one line of data, or the empty data of a priming
// event. Keep-alive comments are dropped.
func parseEvents(t testing.TB, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, raw := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if raw == ": ping" || raw == "" {
			continue
		}
		var ev sseEvent
		rest := raw
		if v, r, ok := cutField(rest, "id: "); ok {
			ev.id, rest = v, r
		}
		if v, r, ok := cutField(rest, "retry: "); ok {
			ev.retry, rest = v, r
		}
		if r, ok := strings.CutPrefix(rest, "event: message\n"); ok {
			ev.message, rest = true, r
		}
		data, ok := strings.CutPrefix(rest, "data: ")
		switch {
		case !ok && rest == "" && ev.retry != "" && ev.id == "" && !ev.message:
			// a retry field alone (a resumed stream's first line)
		case !ok || strings.Contains(data, "\n") || ev.message == (data == ""):
			t.Fatalf("bad event framing: %q", raw)
		}
		ev.data = data
		out = append(out, ev)
	}
	return out
}

func cutField(s, prefix string) (value, rest string, ok bool) {
	after, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", s, false
	}
	value, rest, _ = strings.Cut(after, "\n")
	return value, rest, true
}

// events returns the messages of an SSE body, checking the framing and
// skipping priming events.
func events(t testing.TB, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range parseEvents(t, body) {
		if !ev.message {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			t.Fatalf("event data is not JSON: %q", ev.data)
		}
		out = append(out, m)
	}
	return out
}

// streamIDs hides the stream number in event ids (id: 7-1 → id: S-1),
// which depends on how many streams the session opened before.
var streamIDs = regexp.MustCompile(`(?m)^id: \d+-`)

func normIDs(body string) string { return streamIDs.ReplaceAllString(body, "id: S-") }

// getStream is an open GET /mcp.
type getStream struct {
	resp *http.Response
	msgs chan map[string]any
	done chan struct{}
}

func (f *fixture) openGet(t testing.TB, session string) *getStream {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET /mcp: %d %s", resp.StatusCode, b)
	}
	g := &getStream{resp: resp, msgs: make(chan map[string]any, 100), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					g.msgs <- m
				}
			}
		}
	}()
	return g
}

func (g *getStream) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case m := <-g.msgs:
		return m
	case <-g.done:
		t.Fatal("GET stream ended")
	case <-time.After(wait):
		t.Fatal("nothing on the GET stream within the wait bound")
	}
	return nil
}

func (g *getStream) close() {
	g.resp.Body.Close()
	<-g.done
}
