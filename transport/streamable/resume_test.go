package streamable_test

import (
	"bufio"
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
