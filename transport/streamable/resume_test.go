package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/transporttest"
	"github.com/flowyprompt/flowyprompt/transport/streamable"
	"github.com/google/go-cmp/cmp"
)

// openVersion initializes a session at protocol revision v, lets every log
// level through, and returns the session's id.
func (f *fixture) openVersion(t *testing.T, v string) string {
	t.Helper()
	r := f.do(t, http.MethodPost, "", acceptBoth, strings.Replace(initBody, "2025-11-25", v, 1))
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize %s: %d %q %s", v, r.status, id, r.body)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`,
	} {
		if r := f.do(t, http.MethodPost, id, acceptBoth, body); r.status >= 300 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	return id
}

// postOpen posts body on session and returns the response unread, for a
// test that reads its stream event by event (or drops it).
func (f *fixture) postOpen(t *testing.T, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptBoth)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// describeEvents reduces a stream to one line per event: its id (stream
// number hidden), then "prime", "retry", the log message's data, or the
// result.
func describeEvents(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range parseEvents(t, body) {
		id := normIDs("id: " + ev.id + "\n")
		var what string
		switch {
		case ev.message:
			m := events(t, "event: message\ndata: "+ev.data+"\n\n")[0]
			if params, ok := m["params"].(map[string]any); ok {
				what = fmt.Sprint("log ", params["data"])
			} else {
				what = fmt.Sprint("result ", m["result"])
			}
		case ev.id != "":
			what = "prime retry=" + ev.retry
		default:
			what = "retry=" + ev.retry
		}
		if ev.id != "" {
			what = strings.TrimSpace(strings.TrimPrefix(id, "id: ")) + " " + what
		}
		out = append(out, what)
	}
	return out
}

// lastID returns the id of the last event of a stream that carries one.
func lastID(t *testing.T, body string) string {
	t.Helper()
	evs := parseEvents(t, body)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].id != "" {
			return evs[i].id
		}
	}
	t.Fatalf("no event id in %q", body)
	return ""
}

// TestResumeAfterEndStream is SEP-1699's polling: the handler ends its
// stream early, and a GET with Last-Event-ID carries the rest, ids
// continuing, and ends with the response.
func TestResumeAfterEndStream(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		wantFirst []string
	}{
		{name: "stream already started", params: `{"before":true}`,
			wantFirst: []string{"S-0 prime retry=250", "S-1 log before"}},
		{name: "ending the stream starts it", params: `{}`,
			wantFirst: []string{"S-0 prime retry=250"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mcp.EngineOptions{}, streamable.Options{Retry: 250 * time.Millisecond})
			id := f.openVersion(t, "2025-11-25")
			r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":7,"method":"test/endstream","params":`+tt.params+`}`)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("POST: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			if diff := cmp.Diff(tt.wantFirst, describeEvents(t, r.body)); diff != "" {
				t.Fatalf("POST stream (-want +got):\n%s", diff)
			}

			last := lastID(t, r.body)
			n := len(tt.wantFirst)
			g := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", last)
			if g.status != http.StatusOK {
				t.Fatalf("resume: %d %s", g.status, g.body)
			}
			want := []string{"retry=250", fmt.Sprintf("S-%d log after", n), fmt.Sprintf("S-%d result map[ended:true]", n+1)}
			if diff := cmp.Diff(want, describeEvents(t, g.body)); diff != "" {
				t.Errorf("resumed stream (-want +got):\n%s", diff)
			}
			if stream := strings.Split(last, "-")[0]; !strings.HasPrefix(lastID(t, g.body), stream+"-") {
				t.Errorf("resumed stream ends at %s, not on stream %s", lastID(t, g.body), stream)
			}

			// Finished, the stream is kept: a client that lost the
			// resumed connection gets the same events again, and one
			// that has them all gets an empty stream.
			again := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", last)
			if diff := cmp.Diff(want, describeEvents(t, again.body)); again.status != http.StatusOK || diff != "" {
				t.Errorf("resuming the finished stream again: %d (-want +got):\n%s", again.status, diff)
			}
			end := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", lastID(t, g.body))
			if diff := cmp.Diff([]string{"retry=250"}, describeEvents(t, end.body)); end.status != http.StatusOK || diff != "" {
				t.Errorf("resuming after the response: %d (-want +got):\n%s", end.status, diff)
			}
		})
	}
}

// TestResumeReplaysWhatWasLost: a client whose connection drops resumes
// from the last event it received and gets everything after it, written
// before the drop or since.
func TestResumeReplaysWhatWasLost(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.openVersion(t, "2025-11-25")
	resp := f.postOpen(t, id, `{"jsonrpc":"2.0","id":9,"method":"test/twostep"}`)
	// Read up to the priming event, then drop the connection: the client
	// never saw "one", which the server has already written.
	br := bufio.NewReader(resp.Body)
	var prime string
	for !strings.HasSuffix(prime, "\n\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the priming event: %v (%q)", err, prime)
		}
		prime += line
	}
	primeID := lastID(t, prime)
	resp.Body.Close()
	close(f.proceed)

	// The server notices the drop when it next fails to write or sees the
	// connection close; until then the stream is still attached (409).
	var g reply
	transporttest.Settle(t, wait, "stream released", func() bool {
		g = f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", primeID)
		return g.status != http.StatusConflict
	})
	if g.status != http.StatusOK {
		t.Fatalf("resume: %d %s", g.status, g.body)
	}
	want := []string{"retry=1000", "S-1 log one", "S-2 log two", "S-3 result map[done:true]"}
	if diff := cmp.Diff(want, describeEvents(t, g.body)); diff != "" {
		t.Errorf("resumed stream (-want +got):\n%s", diff)
	}
}

// TestResumeRefused: every Last-Event-ID that cannot be honoured is a
// clear 4xx, and none of them ends the session.
func TestResumeRefused(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.openVersion(t, "2025-11-25")

	// An open stream, still written by its POST.
	resp := f.postOpen(t, id, `{"jsonrpc":"2.0","id":"open","method":"test/twostep"}`)
	defer func() {
		close(f.proceed)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	openID, ok := strings.CutPrefix(strings.TrimSpace(line), "id: ")
	if err != nil || !ok {
		t.Fatalf("first line of the open stream: %q, %v", line, err)
	}
	stream := strings.Split(openID, "-")[0]

	tests := []struct {
		name, lastID string
		wantStatus   int
		wantCode     string
	}{
		{"not an id of ours", "abc", 400, "STREAM_NOT_RESUMABLE"},
		{"signed number", "+1-0", 400, "STREAM_NOT_RESUMABLE"},
		{"leading zero", "0" + stream + "-0", 400, "STREAM_NOT_RESUMABLE"},
		{"negative event", stream + "--1", 400, "STREAM_NOT_RESUMABLE"},
		{"unknown stream", "999-0", 400, "STREAM_NOT_RESUMABLE"},
		{"event not sent yet", stream + "-99", 400, "STREAM_NOT_RESUMABLE"},
		{"stream still open", openID, 409, "STREAM_ALREADY_OPEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", tt.lastID)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if d := errData(t, r.body); d.Code != tt.wantCode || d.Why == "" {
				t.Errorf("error.data = %+v, want code %s with a why", d, tt.wantCode)
			}
		})
	}
	if r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.status != http.StatusOK {
		t.Errorf("session after refused resumptions: %d %s", r.status, r.body)
	}
}

// TestOlderRevisionsAreNotResumable: a client that negotiated a revision
// before 2025-11-25 may not understand a priming event's empty data, so
// its streams carry no ids, and a handler's EndStream is declined: the
// answer comes on the stream it asked on.
func TestOlderRevisionsAreNotResumable(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18"} {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
			id := f.openVersion(t, v)
			r := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":7,"method":"test/endstream","params":{"before":true}}`)
			want := []string{"log before", "log after", "result map[ended:false]"}
			if diff := cmp.Diff(want, describeEvents(t, r.body)); diff != "" {
				t.Errorf("stream (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeptStreamsAreBounded: a session keeps at most 16 streams that no
// connection carries; the oldest goes first.
func TestKeptStreamsAreBounded(t *testing.T) {
	f := newFixture(t, mcp.EngineOptions{}, streamable.Options{})
	id := f.openVersion(t, "2025-11-25")
	var ids []string
	for i := range 18 {
		r := f.do(t, http.MethodPost, id, acceptBoth, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test/endstream","params":{}}`, i))
		ids = append(ids, lastID(t, r.body))
	}
	for _, tt := range []struct{ stream, want int }{{0, 400}, {1, 400}, {2, 200}, {17, 200}} {
		r := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", ids[tt.stream])
		if r.status != tt.want {
			t.Errorf("resuming stream %d of 18: %d, want %d: %s", tt.stream, r.status, tt.want, r.body)
		}
	}
}

// TestUnfinishedStreamsOutliveFinishedOnes: past maxKeptStreams, a
// session lets go of streams whose response was written before one still
// waiting for its response, however old: a polling client whose stream
// ended early has no other way to get its answer, and a client that
// pinged meanwhile must not push it out.
func TestUnfinishedStreamsOutliveFinishedOnes(t *testing.T) {
	tests := []struct {
		pings          int
		wantFirstPing  int // status resuming the first ping's finished stream
		wantLatestPing int
	}{
		{pings: 15, wantFirstPing: 200, wantLatestPing: 200}, // 16 kept streams in all
		{pings: 16, wantFirstPing: 400, wantLatestPing: 200},
		{pings: 40, wantFirstPing: 400, wantLatestPing: 200},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.pings, " pings"), func(t *testing.T) {
			f := newFixture(t, mcp.EngineOptions{}, streamable.Options{PreferStreams: true})
			id := f.open(t)
			poll := f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":"poll","method":"test/endstream","params":{}}`)
			if diff := cmp.Diff([]string{"S-0 prime retry=1000"}, describeEvents(t, poll.body)); diff != "" {
				t.Fatalf("poll (-want +got):\n%s", diff)
			}
			var pings []string
			for i := range tt.pings {
				r := f.do(t, http.MethodPost, id, acceptBoth, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
				if r.status != http.StatusOK {
					t.Fatalf("ping %d: %d %s", i, r.status, r.body)
				}
				pings = append(pings, lastID(t, r.body))
			}
			for _, c := range []struct {
				name, last string
				want       int
			}{{"first ping", pings[0], tt.wantFirstPing}, {"latest ping", pings[len(pings)-1], tt.wantLatestPing}} {
				if r := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", c.last); r.status != c.want {
					t.Errorf("resuming the %s: %d, want %d: %s", c.name, r.status, c.want, r.body)
				}
			}
			g := f.do(t, http.MethodGet, id, "text/event-stream", "", "Last-Event-ID", lastID(t, poll.body))
			if g.status != http.StatusOK {
				t.Fatalf("resuming the poll: %d, want 200: %s", g.status, g.body)
			}
			want := []string{"retry=1000", "S-1 log after", "S-2 result map[ended:true]"}
			if diff := cmp.Diff(want, describeEvents(t, g.body)); diff != "" {
				t.Errorf("resuming the poll (-want +got):\n%s", diff)
			}
		})
	}
}

// flushFailsAfterResponse passes every write and flush through, but
// reports the flush that sent a response as failed, as a write deadline
// expiring just as the bytes left would: the client has the response, and
// the server cannot know it.
type flushFailsAfterResponse struct {
	http.ResponseWriter
	response bool
}

func (w *flushFailsAfterResponse) Write(p []byte) (int, error) {
	w.response = w.response || bytes.Contains(p, []byte(`"result"`))
	return w.ResponseWriter.Write(p)
}

func (w *flushFailsAfterResponse) FlushError() error {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil {
		return err
	}
	if w.response {
		return errors.New("test: the flush that carried the response failed")
	}
	return nil
}

func (w *flushFailsAfterResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestResumeAfterFailedResponseWrite: a response whose write failed still
// finishes its stream, so a client that did receive it, and resumes at its
// id, gets an empty stream that ends, not one that waits for an answer
// already given; a client that lost it gets it again.
func TestResumeAfterFailedResponseWrite(t *testing.T) {
	f := newWrappedFixture(t, mcp.EngineOptions{}, streamable.Options{PreferStreams: true}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&flushFailsAfterResponse{ResponseWriter: w}, r)
		})
	})
	id := f.open(t)
	tests := []struct {
		name     string
		resumeAt func(events []sseEvent) string
		want     []string
	}{
		{"at the response", func(evs []sseEvent) string { return evs[1].id }, []string{"retry=1000"}},
		{"before the response", func(evs []sseEvent) string { return evs[0].id }, []string{"retry=1000", "S-1 result map[]"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, http.MethodPost, id, acceptBoth, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
			evs := parseEvents(t, r.body)
			if diff := cmp.Diff([]string{"S-0 prime retry=1000", "S-1 result map[]"}, describeEvents(t, r.body)); r.status != http.StatusOK || diff != "" {
				t.Fatalf("POST: %d (-want +got):\n%s", r.status, diff)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Last-Event-ID", tt.resumeAt(evs))
			resp, err := f.c.Do(req)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("the resumed stream did not end within %s: %v (so far %q)", wait, err, body)
			}
			if diff := cmp.Diff(tt.want, describeEvents(t, string(body))); resp.StatusCode != http.StatusOK || diff != "" {
				t.Errorf("resumed stream: %d (-want +got):\n%s", resp.StatusCode, diff)
			}
		})
	}
}

// TestFirstPostAfterInitializeIsResumable: a session's streams are
// resumable from the first POST after initialize, whether initialize was
// answered as JSON or as a stream.
func TestFirstPostAfterInitializeIsResumable(t *testing.T) {
	for _, prefer := range []bool{false, true} {
		t.Run(fmt.Sprint("PreferStreams=", prefer), func(t *testing.T) {
			f := newFixture(t, mcp.EngineOptions{}, streamable.Options{PreferStreams: prefer})
			for range 5 {
				r := f.do(t, http.MethodPost, "", acceptBoth, initBody)
				id := r.header.Get("Mcp-Session-Id")
				if r.status != http.StatusOK || id == "" {
					t.Fatalf("initialize: %d %q %s", r.status, id, r.body)
				}
				r = f.do(t, http.MethodPost, id, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"test/endstream","params":{}}`)
				if diff := cmp.Diff([]string{"S-0 prime retry=1000"}, describeEvents(t, r.body)); diff != "" {
					t.Fatalf("first POST after initialize (-want +got):\n%s", diff)
				}
			}
		})
	}
}
