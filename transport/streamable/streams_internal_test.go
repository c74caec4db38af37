package streamable

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
)

// keptRoute registers a resumable stream on ss, records events 1 to n on
// it (their data is their number), and lets its connection go.
func keptRoute(ss *session, n int) *route {
	rt := &route{events: true, resumable: true, wake: make(chan struct{}, 1)}
	ss.register(rt)
	for i := 1; i <= n; i++ {
		rt.record(mcp.Outgoing{Data: []byte(strconv.Itoa(i))})
	}
	ss.release(rt)
	return rt
}

// TestReplayAfterTrim: a long stream keeps only its newest events for
// replay, without gaps; a client resuming after an event still kept gets
// every event since, and one that fell further behind is told that events
// were lost instead of getting a stream with a hole in it.
func TestReplayAfterTrim(t *testing.T) {
	const half = maxRouteBacklog / 2
	tests := []struct {
		name     string
		events   int
		resumeAt int64
		wantLost bool
	}{
		{"nothing trimmed", 10, 3, false},
		{"at the cap, from the start", maxRouteBacklog, 0, false},
		{"one past the cap, from the start", maxRouteBacklog + 1, 0, true},
		{"one past the cap, just before the oldest kept", maxRouteBacklog + 1, half - 1, true},
		{"one past the cap, at the last trimmed", maxRouteBacklog + 1, half, false},
		{"a long stream, near its end", 5000, 4990, false},
		{"a long stream, at its last event", 5000, 5000, false},
		{"a long stream, from the start", 5000, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := &session{id: "s", wake: make(chan struct{}, 1)}
			rt := keptRoute(ss, tt.events)
			if n := len(rt.st.sent); n > maxRouteBacklog || n < min(tt.events, half) {
				t.Errorf("%d events kept for replay, want between %d and %d", n, min(tt.events, half), maxRouteBacklog)
			}
			got, replay, status, f := ss.resume(eventID(rt.st.n, tt.resumeAt))
			if tt.wantLost {
				if got != nil || status != http.StatusBadRequest || f.Code != mcp.CodeStreamNotResumable ||
					!strings.Contains(f.What, "no longer kept") || f.Why == "" || f.How == "" {
					t.Fatalf("resume: %v %d %+v, want 400 STREAM_NOT_RESUMABLE saying events are no longer kept", got != nil, status, f)
				}
				return
			}
			if got != rt {
				t.Fatalf("resume: %d %+v", status, f)
			}
			defer ss.release(rt)
			if len(replay) != tt.events-int(tt.resumeAt) {
				t.Fatalf("replayed %d events, want %d", len(replay), tt.events-int(tt.resumeAt))
			}
			for i, e := range replay {
				want := tt.resumeAt + 1 + int64(i)
				if e.seq != want || string(e.m.Data) != strconv.FormatInt(want, 10) {
					t.Fatalf("replayed event %d: seq %d data %q, want event %d", i, e.seq, e.m.Data, want)
				}
			}
		})
	}
}

// TestEvictRechecks: sweep decides on a snapshot; a stream a resume took
// up after it looked (still carried, or let go again since) is not
// evicted under it, since the replay may be writing what it holds.
func TestEvictRechecks(t *testing.T) {
	tests := []struct {
		name     string
		between  func(ss *session, rt *route) // after sweep's look, before its eviction
		wantKept bool
	}{
		{"left alone", func(*session, *route) {}, false},
		{"resumed, still carried", func(ss *session, rt *route) { ss.resume(eventID(rt.st.n, 0)) }, true},
		{"resumed and let go again", func(ss *session, rt *route) {
			ss.resume(eventID(rt.st.n, 0))
			ss.release(rt)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := &session{id: "s", wake: make(chan struct{}, 1)}
			rt := keptRoute(ss, 2)
			rt.mu.Lock()
			seen := rt.st.leftAt
			rt.mu.Unlock()
			tt.between(ss, rt)
			ss.evict(rt, seen)
			ss.mu.Lock()
			inMap := ss.streams[rt.st.n] == rt
			ss.mu.Unlock()
			rt.mu.Lock()
			intact := !rt.gone && len(rt.st.sent) == 2
			rt.mu.Unlock()
			if inMap != tt.wantKept || intact != tt.wantKept {
				t.Errorf("after evict: still kept %v, events intact %v; want %v", inMap, intact, tt.wantKept)
			}
		})
	}
}

// TestSweepWhileResuming: streams come and go while clients resume them;
// a stream a resume took up is never let go while it is carried. Under
// the race detector this also checks that sweep reads what it sorts on
// under the streams' locks.
func TestSweepWhileResuming(t *testing.T) {
	ss := &session{id: "s", wake: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for range 4 {
		wg.Go(func() {
			for range 300 {
				rt := keptRoute(ss, 1)
				// Take up a recent stream, perhaps one a sweep is about to
				// let go: refused or taken, never taken and let go.
				n := max(1, rt.st.n-rand.Int64N(maxKeptStreams+4))
				got, _, _, _ := ss.resume(eventID(n, 0))
				if got == nil {
					continue
				}
				got.mu.Lock()
				lost := got.gone || len(got.st.sent) != 1
				got.mu.Unlock()
				if lost {
					mu.Lock()
					bad = append(bad, eventID(n, 0))
					mu.Unlock()
				}
				ss.release(got)
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("streams let go while a resume carried them: %v", bad)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.streams) > maxKeptStreams {
		t.Errorf("%d streams kept, want at most %d", len(ss.streams), maxKeptStreams)
	}
}

// TestSessionEndLetsGoOfStreams: when a session ends, its kept streams
// are let go (their responses' buffers back to the pool) at once, and one
// still carried by a connection as that connection stops, rather than
// waiting for a sweep the ended session will never run.
func TestSessionEndLetsGoOfStreams(t *testing.T) {
	lib := transporttest.Library(t)
	srv := app.New(app.Options{Library: lib, Logger: transporttest.Quiet}).Server()
	srv.Methods = map[string]mcp.Handler{
		"test/wait": func(ctx context.Context, r *mcp.Request) (any, error) {
			r.Log(mcp.LevelWarning, "test", "waiting")
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	e := mcptest.Engine(t, srv, mcp.EngineOptions{Logger: transporttest.Quiet})
	h := New(e, Options{PreferStreams: true})
	serve := func(method, session, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set(HeaderSession, session)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	id := serve(http.MethodPost, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`).Header().Get(HeaderSession)
	if id == "" {
		t.Fatal("initialize gave no session")
	}
	serve(http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range 3 {
		if w := serve(http.MethodPost, id, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"ping"}`); w.Code != http.StatusOK {
			t.Fatalf("ping: %d %s", w.Code, w.Body)
		}
	}
	// One more stream, carried by its POST when the session ends.
	carried := make(chan struct{})
	go func() {
		defer close(carried)
		serve(http.MethodPost, id, `{"jsonrpc":"2.0","id":"wait","method":"test/wait"}`)
	}()
	h.mu.Lock()
	ss := h.sessions[id]
	h.mu.Unlock()
	streams := func() []*route {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		var out []*route
		for _, rt := range ss.streams {
			out = append(out, rt)
		}
		return out
	}
	transporttest.Settle(t, 10*time.Second, "four streams", func() bool { return len(streams()) == 4 })
	kept := streams()

	if w := serve(http.MethodDelete, id, ""); w.Code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", w.Code, w.Body)
	}
	select {
	case <-carried:
	case <-time.After(10 * time.Second):
		t.Fatal("the carried stream did not end with its session")
	}
	transporttest.Settle(t, 10*time.Second, "streams let go", func() bool { return len(streams()) == 0 })
	for _, rt := range kept {
		rt.mu.Lock()
		if !rt.gone || rt.st.sent != nil {
			t.Errorf("stream %d after the session's end: gone %v, %d events still held", rt.st.n, rt.gone, len(rt.st.sent))
		}
		rt.mu.Unlock()
	}
}

// FuzzDecodeHeaderValue: a value wrapped as the revision says decodes to
// what was wrapped; anything not wrapped is itself; nothing panics.
func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{"us-west1", "Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", "", "=?base64?SGVsbG8?=", "=?base64?SGVsbG8="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		wrapped := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		if got, err := decodeHeaderValue(wrapped); err != nil || got != v {
			t.Fatalf("decode(%q) = %q, %v; want %q", wrapped, got, err, v)
		}
		got, err := decodeHeaderValue(v)
		if !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") || len(v) < len("=?base64??=") {
			if err != nil || got != v {
				t.Fatalf("a value not wrapped, %q, decoded to %q, %v", v, got, err)
			}
		}
	})
}

// TestRouteRefusesWhenBehind: a POST's route takes notifications up to
// its backlog and refuses the next (so a subscription ends and a session
// sends it on its stream instead), while the response always gets through.
func TestRouteRefusesWhenBehind(t *testing.T) {
	rt := &route{events: true, wake: make(chan struct{}, 1)}
	msg := mcp.Outgoing{Kind: mcp.KindMessage, Data: []byte(`{}`)}
	for i := range maxRouteBacklog {
		if !rt.Push(msg) {
			t.Fatalf("notification %d refused below the backlog", i+1)
		}
	}
	if rt.Push(msg) {
		t.Fatal("a notification past the backlog was taken (and would be lost)")
	}
	rt.Push(mcp.Outgoing{Kind: mcp.KindResponse, Data: []byte(`{}`)})
	if got := rt.take(); len(got) != maxRouteBacklog+1 || got[len(got)-1].Kind != mcp.KindResponse {
		t.Fatalf("route holds %d messages, want the backlog and the response", len(got))
	}
	if (&route{events: false}).Push(msg) {
		t.Fatal("a JSON-only route took a notification")
	}
}
