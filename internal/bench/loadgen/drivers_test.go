package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEventReader(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // longer than the reader's buffer
	tests := []struct {
		name string
		in   string
		want []event
	}{
		{"one event", "event: endpoint\ndata: /message?s=1\n\n", []event{{"endpoint", []byte("/message?s=1")}}},
		{"default name is message", "data: {}\n\n", []event{{"message", []byte("{}")}}},
		{"CRLF and comments", ": ping\r\nevent: message\r\ndata: a\r\n\r\n: ping\r\n\r\n", []event{{"message", []byte("a")}}},
		{"data lines join with newline", "data: a\ndata: b\n\n", []event{{"message", []byte("a\nb")}}},
		{"no space after colon", "event:x\ndata:y\n\n", []event{{"x", []byte("y")}}},
		{"events without data are skipped", "event: a\n\nevent: b\ndata: 1\n\n", []event{{"b", []byte("1")}}},
		{"id and retry fields ignored", "id: 7\nretry: 10\ndata: z\n\n", []event{{"message", []byte("z")}}},
		{"priming event skipped", "id: 1-0\nretry: 1000\ndata: \n\nid: 1-1\nevent: message\ndata: z\n\n", []event{{"message", []byte("z")}}},
		{"long line", "data: " + long + "\n\n", []event{{"message", []byte(long)}}},
		{"two events", "data: 1\n\ndata: 2\n\n", []event{{"message", []byte("1")}, {"message", []byte("2")}}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			er := newEventReader(strings.NewReader(tt.in))
			var got []event
			for {
				ev, err := er.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				// The data is only valid until the next event.
				got = append(got, event{ev.name, bytes.Clone(ev.data)})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(event{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventReaderUnterminatedEvent(t *testing.T) {
	er := newEventReader(strings.NewReader("data: half"))
	if _, err := er.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		msg    string
		expect string
		bad    bool
	}{
		{"result", `{"id":1,"result":{"text":"hi"}}`, "", false},
		{"expected text present", `{"id":1,"result":{"text":"hi"}}`, "hi", false},
		{"expected text missing", `{"id":1,"result":{"text":"hi"}}`, "bye", true},
		{"json-rpc error", `{"id":1,"error":{"code":-32602}}`, "", true},
		{"tool error", `{"id":1,"result":{"isError":true}}`, "", true},
		{"escaped error inside text is fine", `{"id":1,"result":{"text":"{\"error\":1}"}}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var expect []byte
			if tt.expect != "" {
				expect = []byte(tt.expect)
			}
			if got := check([]byte(tt.msg), expect) != ""; got != tt.bad {
				t.Errorf("check(%s) bad = %v, want %v", tt.msg, got, tt.bad)
			}
		})
	}
}

func TestSSE(t *testing.T) {
	tests := []struct {
		name       string
		server     fakeOptions
		method     string
		expect     string
		wantErrs   int
		wantFailed string // substring of the run error; "" for a clean run
	}{
		{name: "every request answered", method: "echo", expect: "hello"},
		{name: "server pings are answered", server: fakeOptions{pingClient: true}, method: "echo"},
		{name: "json-rpc errors are counted", method: "nope", wantErrs: 4 * 25},
		{name: "tool errors are counted", method: "tool_fails", wantErrs: 4 * 25},
		{name: "missing expected text fails the warmup", method: "echo", expect: "absent", wantFailed: "warmup: bad response"},
		{name: "a misrouted response stops the run", server: fakeOptions{misroute: true}, method: "echo", wantFailed: "wrong request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeServer(t, tt.server)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var expect []byte
			if tt.expect != "" {
				expect = []byte(tt.expect)
			}
			warmup := 3
			if tt.wantErrs > 0 {
				warmup = 0 // a failing method fails warmup by design
			}
			st, err := SSE(ctx, SSEConfig{
				URL: srv.URL + "/sse", Sessions: 4, PID: os.Getpid(),
				Work: Work{Method: tt.method, Params: []byte(`{}`), Requests: 25, Warmup: warmup, Expect: expect},
			})
			if stopped(t, err, tt.wantFailed) {
				return
			}
			if st.Requests != 100 || st.Errors != tt.wantErrs {
				t.Fatalf("requests=%d errors=%d, want 100 and %d (%v)", st.Requests, st.Errors, tt.wantErrs, st)
			}
			if (tt.wantErrs > 0) != (st.FirstError != "") {
				t.Errorf("FirstError = %q with %d errors", st.FirstError, st.Errors)
			}
			if st.P50 <= 0 || st.P99 < st.P50 || st.Max < st.P99 {
				t.Errorf("latencies out of order: %v", st)
			}
			if st.Server.PeakRSS <= 0 {
				t.Errorf("server usage not read: %+v", st.Server)
			}
			// 4 initializes, 12 warmup requests, 100 measured.
			if got, want := f.requests.Load(), int64(4+4*warmup+100); got != want {
				t.Errorf("server saw %d requests, want %d", got, want)
			}
			if tt.server.pingClient && f.clientOK.Load() == 0 {
				t.Error("the server's ping was never answered")
			}
		})
	}
}

func TestStreamable(t *testing.T) {
	tests := []struct {
		name       string
		server     fakeOptions
		method     string
		wantErrs   int
		wantFailed string
	}{
		{name: "json replies", method: "echo"},
		{name: "event-stream replies", server: fakeOptions{sseReplies: true}, method: "echo"},
		{name: "errors are counted", server: fakeOptions{sseReplies: true}, method: "nope", wantErrs: 3 * 20},
		{name: "a misrouted response stops the run", server: fakeOptions{misroute: true}, method: "echo", wantFailed: "wrong request"},
		{name: "misrouted in a stream too", server: fakeOptions{misroute: true, sseReplies: true}, method: "echo", wantFailed: "wrong request"},
		{name: "a second response in a stream stops the run", server: fakeOptions{sseReplies: true, secondResponse: true}, method: "echo", wantFailed: "exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeServer(t, tt.server)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := Streamable(ctx, StreamableConfig{
				URL: srv.URL + "/mcp", Clients: 3,
				Work: Work{Method: tt.method, Params: []byte(`{"a":1}`), Requests: 20},
			})
			if stopped(t, err, tt.wantFailed) {
				return
			}
			if st.Requests != 60 || st.Errors != tt.wantErrs {
				t.Fatalf("requests=%d errors=%d, want 60 and %d", st.Requests, st.Errors, tt.wantErrs)
			}
			// Every client ended its session with DELETE.
			if got := f.deleted.Load(); got != 3 {
				t.Errorf("%d sessions deleted, want 3", got)
			}
			if n := f.liveSessions(); n != 0 {
				t.Errorf("%d sessions left on the server", n)
			}
		})
	}
}

func TestStateless(t *testing.T) {
	tests := []struct {
		name       string
		server     fakeOptions
		method     string
		params     string
		wantErrs   int
		wantFirst  string // substring of FirstError
		wantFailed string // substring of the run error; "" for a clean run
	}{
		{name: "json replies", method: "prompts/get", params: `{"name":"hello","arguments":{"a":"b"}}`},
		{name: "event-stream replies", server: fakeOptions{sseReplies: true}, method: "prompts/get", params: `{"name":"hello"}`},
		{name: "a method without a name", method: "echo"},
		{name: "json-rpc errors are counted", server: fakeOptions{sseReplies: true}, method: "nope", wantErrs: 3 * 20, wantFirst: "method not found"},
		{name: "a result without resultType is counted", server: fakeOptions{noResultType: true}, method: "prompts/get", params: `{"name":"hello"}`,
			wantErrs: 3 * 20, wantFirst: `resultType "", want "complete"`},
		{name: "a misrouted response stops the run", server: fakeOptions{misroute: true}, method: "prompts/get", params: `{"name":"hello"}`, wantFailed: "wrong request"},
		{name: "misrouted in a stream too", server: fakeOptions{misroute: true, sseReplies: true}, method: "echo", wantFailed: "wrong request"},
		{name: "a second response stops the run", server: fakeOptions{sseReplies: true, secondResponse: true}, method: "echo", wantFailed: "exactly one"},
		{name: "a refused request stops the run", method: "prompts/get", params: `{"arguments":{}}`, wantFailed: "needs a string params.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeServer(t, tt.server)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := Stateless(ctx, StatelessConfig{
				URL: srv.URL + "/mcp", Clients: 3, PID: os.Getpid(),
				Work: Work{Method: tt.method, Params: []byte(tt.params), Requests: 20},
			})
			if stopped(t, err, tt.wantFailed) {
				return
			}
			if st.Requests != 60 || st.Errors != tt.wantErrs || !strings.Contains(st.FirstError, tt.wantFirst) {
				t.Fatalf("requests=%d errors=%d first=%q, want 60, %d and %q", st.Requests, st.Errors, st.FirstError, tt.wantErrs, tt.wantFirst)
			}
			// Every request was served at 2026-07-28, without a session;
			// none was an initialize and nothing was deleted.
			if got := f.stateless.Load(); got != 60 {
				t.Errorf("server served %d requests statelessly, want 60", got)
			}
			if f.deleted.Load() != 0 || f.liveSessions() != 0 {
				t.Errorf("sessions: %d deleted, %d live, want none", f.deleted.Load(), f.liveSessions())
			}
			if st.Server.PeakRSS <= 0 {
				t.Errorf("server usage not read: %+v", st.Server)
			}
		})
	}
}

func TestStreamableUnknownEndpoint(t *testing.T) {
	_, srv := newFakeServer(t, fakeOptions{})
	_, err := Streamable(context.Background(), StreamableConfig{URL: srv.URL + "/nothing", Clients: 2, Work: Work{Method: "echo", Requests: 1}})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want a 404 from initialize", err)
	}
}

func TestIdle(t *testing.T) {
	for _, transport := range []string{"sse", "http"} {
		t.Run(transport, func(t *testing.T) {
			f, srv := newFakeServer(t, fakeOptions{})
			path := map[string]string{"sse": "/sse", "http": "/mcp"}[transport]
			st, err := Idle(context.Background(), IdleConfig{
				Transport: transport, URL: srv.URL + path, Sessions: 40, Parallel: 10,
				Settle: 10 * time.Millisecond, PID: os.Getpid(), Verify: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.Sessions != 40 || st.Verified != 40 {
				t.Fatalf("opened %d, verified %d, want 40 and 40", st.Sessions, st.Verified)
			}
			if st.RSSBefore <= 0 || st.RSSAfter <= 0 || st.PeakRSS < st.RSSAfter {
				t.Errorf("memory not read: %+v", st)
			}
			// Idle closes what it opened.
			if transport == "http" && f.liveSessions() != 0 {
				t.Errorf("%d sessions left open", f.liveSessions())
			}
			if transport == "sse" {
				// The server sees a stream end a moment after the client
				// closed it.
				select {
				case <-f.streamsClosed():
				case <-time.After(5 * time.Second):
					t.Errorf("%d streams left open", openStreams(f))
				}
			}
		})
	}
}

func openStreams(f *fakeServer) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.streams)
}

func TestIdleNeedsPID(t *testing.T) {
	if _, err := Idle(context.Background(), IdleConfig{Transport: "sse", URL: "http://127.0.0.1:1/sse", Sessions: 1}); err == nil {
		t.Fatal("want an error without a PID")
	}
}

func TestIdleOpenFailure(t *testing.T) {
	_, srv := newFakeServer(t, fakeOptions{})
	_, err := Idle(context.Background(), IdleConfig{Transport: "sse", URL: srv.URL + "/missing", Sessions: 5, PID: os.Getpid()})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want a 404 opening the stream", err)
	}
}

// stopped checks a run's error: with wantFailed set, that the run failed
// saying so (and then the test has nothing more to check); without, that it
// did not fail.
func stopped(t *testing.T, err error, wantFailed string) bool {
	t.Helper()
	if wantFailed != "" {
		if err == nil || !strings.Contains(err.Error(), wantFailed) {
			t.Fatalf("err = %v, want one containing %q", err, wantFailed)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
