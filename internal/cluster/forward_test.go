package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/nats-io/nats.go"
)

// promptly bounds what must happen "at once": a guard against hangs and
// regressions to waiting out timeouts, not a speed measurement.
const promptly = 5 * time.Second

// fwdPair is two replicas on one NATS server: the holder runs handler for
// the session it holds, the forwarder serves HTTP by forwarding every
// request to the session its Mcp-Session-Id names.
type fwdPair struct {
	holderNode *Node
	holder     *Router
	forwarder  *Router
	url        string
	client     *http.Client
	release    func()
}

var quietLog = slog.New(slog.DiscardHandler)

const sessionID = "0123456789abcdef0123456789abcdef"

func newFwdPair(t *testing.T, handler http.Handler, opts RouterOptions) *fwdPair {
	t.Helper()
	srv := natstest.Start(t)
	p := &fwdPair{holderNode: join(t, srv.URL(), "holder", &testfiles.SyncBuffer{})}
	fwdNode := join(t, srv.URL(), "forwarder", &testfiles.SyncBuffer{})
	var err error
	if p.holder, err = NewRouter(p.holderNode, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.holder.Close)
	p.holder.Serve(handler)
	if p.forwarder, err = NewRouter(fwdNode, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.forwarder.Close)
	if p.release, err = p.holder.Hold(sessionID); err != nil {
		t.Fatal(err)
	}
	p.url, p.client = forwardServer(t, p.forwarder)
	return p
}

// forwardServer serves HTTP by forwarding every request to the session
// its Mcp-Session-Id names, and returns its URL and a client of it.
func forwardServer(t *testing.T, fwd *Router) (string, *http.Client) {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !fwd.Forward(w, r, r.Header.Get("Mcp-Session-Id"), body) {
			http.Error(w, "unknown session", http.StatusNotFound)
		}
	}))
	t.Cleanup(hs.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return hs.URL, &http.Client{Transport: tr}
}

func (p *fwdPair) do(t *testing.T, ctx context.Context, method, path, session string, body []byte, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", session)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// echo answers with what it was asked: method, URI, Host, the headers that
// cross, and the body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "%s %s host=%s accept=%q version=%q auth=%q body=%s", r.Method, r.URL.RequestURI(), r.Host,
		r.Header.Get("Accept"), r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Authorization"), body)
})

func TestForwardAnswers(t *testing.T) {
	p := newFwdPair(t, echo, RouterOptions{})
	tests := []struct {
		name, method, path, body string
		want                     string
	}{
		{name: "POST", method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			want: `POST /mcp host=%s accept="application/json, text/event-stream" version="2025-11-25" auth="" body={"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{name: "query kept", method: "POST", path: "/sse/message?session_id=" + sessionID, body: `{}`,
			want: `POST /sse/message?session_id=` + sessionID + ` host=%s accept="application/json, text/event-stream" version="2025-11-25" auth="" body={}`},
		{name: "DELETE", method: "DELETE", path: "/mcp",
			want: `DELETE /mcp host=%s accept="application/json, text/event-stream" version="2025-11-25" auth="" body=`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := p.do(t, context.Background(), tc.method, tc.path, sessionID, []byte(tc.body),
				"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25",
				"Authorization", "Bearer secret")
			got := readAll(t, resp)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d, want 201: %s", resp.StatusCode, got)
			}
			if want := fmt.Sprintf(tc.want, strings.TrimPrefix(p.url, "http://")); got != want {
				t.Errorf("answer\n got %s\nwant %s", got, want)
			}
			if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Mcp-Session-Id") != sessionID {
				t.Errorf("headers %v, want the handler's", resp.Header)
			}
		})
	}
}

func TestForwardNotHeld(t *testing.T) {
	p := newFwdPair(t, echo, RouterOptions{})
	tests := []struct{ name, session string }{
		{name: "never held", session: "ffffffffffffffffffffffffffffffff"},
		{name: "not a subject token", session: "a.b.>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := p.do(t, context.Background(), "POST", "/mcp", tc.session, []byte(`{}`))
			if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
				t.Errorf("status %d, want 404: %s", resp.StatusCode, body)
			}
		})
	}
	p.release()
	// Once the server has the unsubscription, nobody answers for the
	// session.
	if err := p.holderNode.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{}`))
	if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after release: status %d, want 404: %s", resp.StatusCode, body)
	}
}

// streamer writes one event per value received on next, flushing each,
// until next closes.
type streamer struct {
	next      chan string
	cancelled chan struct{}
}

func newStreamer() *streamer {
	return &streamer{next: make(chan string), cancelled: make(chan struct{}, 1)}
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	for {
		select {
		case v, ok := <-s.next:
			if !ok {
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", v)
			if err := http.NewResponseController(w).Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			s.cancelled <- struct{}{}
			return
		}
	}
}

func readLine(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := br.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return strings.TrimSuffix(r.line, "\n")
	case <-time.After(promptly):
		t.Fatal("no line within 5 s")
		return ""
	}
}

func TestForwardStreamFlushes(t *testing.T) {
	s := newStreamer()
	p := newFwdPair(t, s, RouterOptions{})
	resp := p.do(t, context.Background(), "GET", "/mcp", sessionID, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	// Each event is sent only once the previous one has arrived: they
	// arrive as flushed, before the response ends.
	for i := range 5 {
		want := fmt.Sprintf("event %d", i)
		s.next <- want
		if got := readLine(t, br); got != "data: "+want {
			t.Fatalf("got %q, want %q", got, "data: "+want)
		}
		if got := readLine(t, br); got != "" {
			t.Fatalf("got %q, want the blank line ending the event", got)
		}
	}
	close(s.next)
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the end: %q, %v; want a clean end", rest, err)
	}
}

func TestForwardLargeBodies(t *testing.T) {
	tests := []struct {
		name            string
		request, answer int
	}{
		{name: "both within one chunk", request: 100, answer: 100},
		{name: "request over the chunk size", request: 100<<10 + 7, answer: 10},
		{name: "answer over the chunk size", request: 10, answer: 300<<10 + 3},
		{name: "exactly one chunk", request: 16 << 10, answer: 16 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answer := make([]byte, tc.answer)
			rand.Read(answer)
			var got []byte
			var mu sync.Mutex
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = b
				mu.Unlock()
				w.Write(answer)
			})
			p := newFwdPair(t, h, RouterOptions{ChunkSize: 16 << 10})
			request := make([]byte, tc.request)
			rand.Read(request)
			resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, request)
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Equal(got, request) {
				t.Errorf("the holder got %d bytes, not the %d sent", len(got), len(request))
			}
			if body != string(answer) {
				t.Errorf("the client got %d bytes, not the %d answered", len(body), len(answer))
			}
		})
	}
}

func TestForwardClientGoneCancelsHandler(t *testing.T) {
	s := newStreamer()
	p := newFwdPair(t, s, RouterOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	resp := p.do(t, ctx, "GET", "/mcp", sessionID, nil)
	br := bufio.NewReader(resp.Body)
	s.next <- "one"
	if got := readLine(t, br); got != "data: one" {
		t.Fatalf("got %q", got)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-s.cancelled:
	case <-time.After(promptly):
		t.Fatal("the holder's handler context was not cancelled within 5 s of the client leaving")
	}
}

func TestForwardHolderDies(t *testing.T) {
	s := newStreamer()
	p := newFwdPair(t, s, RouterOptions{PingInterval: 200 * time.Millisecond})
	resp := p.do(t, context.Background(), "GET", "/mcp", sessionID, nil)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	s.next <- "one"
	if got := readLine(t, br); got != "data: one" {
		t.Fatalf("got %q", got)
	}
	readLine(t, br)
	p.holderNode.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(br)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(promptly):
		t.Fatal("the forwarded stream did not end within 5 s of its holder dying")
	}
	resp = p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{}`))
	if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a new request for the dead holder's session: %d %s, want 404", resp.StatusCode, body)
	}
}

func TestForwardConcurrent(t *testing.T) {
	p := newFwdPair(t, echo, RouterOptions{})
	base := runtime.NumGoroutine()
	const n = 40
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", p.url+"/mcp", strings.NewReader(fmt.Sprintf("request %d", i)))
			req.Header.Set("Mcp-Session-Id", sessionID)
			resp, err := p.client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("body=request %d", i); resp.StatusCode != http.StatusCreated || !strings.HasSuffix(string(b), want) {
				errs <- fmt.Errorf("request %d: %d %q", i, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every exchange is over: nothing of them may be left running on
	// either side.
	p.client.Transport.(*http.Transport).CloseIdleConnections()
	// Checked again at each heartbeat the holder hears, twice a second.
	waitFor(t, "the exchanges' goroutines to end", p.holderNode.changes, func() bool { return runtime.NumGoroutine() <= base })
}

func TestForwardBound(t *testing.T) {
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("done"))
	})
	p := newFwdPair(t, h, RouterOptions{MaxExchanges: 2})
	answers := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequest("POST", p.url+"/mcp", strings.NewReader("{}"))
			req.Header.Set("Mcp-Session-Id", sessionID)
			resp, err := p.client.Do(req)
			if err != nil {
				answers <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(promptly):
			t.Fatal("the first two requests did not start")
		}
	}
	resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{}`))
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, "too many forwarded requests") {
		t.Errorf("beyond the bound: %d %v %s, want 503 with Retry-After", resp.StatusCode, resp.Header, body)
	}
	close(release)
	for range 2 {
		if code := <-answers; code != http.StatusOK {
			t.Errorf("a request within the bound: %d, want 200", code)
		}
	}
}

func TestHoldWhileDisconnected(t *testing.T) {
	srv := natstest.Start(t)
	n := join(t, srv.URL(), "a", nil)
	rt, err := NewRouter(n, RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	rt.Serve(echo)
	srv.Stop()
	waitFor(t, "the link to drop", n.changes, func() bool { return !rt.Connected() })
	release, err := rt.Hold(sessionID)
	if err == nil || release == nil {
		t.Fatalf("Hold while disconnected: release %v, error %v; want an error and a release", release != nil, err)
	}
	release()
	w := httptest.NewRecorder()
	if rt.Forward(w, httptest.NewRequest("POST", "/mcp", nil), sessionID, nil) {
		t.Errorf("Forward while disconnected reported the session held")
	}
}

// TestForwardLostMessageAborts: a holder whose messages arrive with a gap
// (here, one speaking the wire format by hand that skips a number) never
// passes off a truncated answer as a whole one.
func TestForwardLostMessageAborts(t *testing.T) {
	type send func(seq int, hdr nats.Header, data string)
	tests := []struct {
		name   string
		script func(send)
		// wantStatus is the answer's status; wantBody what arrives of its
		// body; wantCut whether reading it fails rather than ending.
		wantStatus int
		wantBody   string
		wantCut    bool
	}{
		{name: "before the head", wantStatus: http.StatusBadGateway, wantBody: "lost part of the response",
			script: func(send send) {
				send(0, nats.Header{hdrControl: {"nowhere.to.ping"}}, "")
				send(2, nats.Header{hdrHead: {`{"status":200}`}, hdrEnd: {endDone}}, "never")
			}},
		{name: "in a JSON body", wantStatus: http.StatusOK, wantBody: `{"half":`, wantCut: true,
			script: func(send send) {
				send(0, nats.Header{hdrControl: {"nowhere.to.ping"}}, "")
				send(1, nats.Header{hdrHead: {`{"status":200,"header":{"Content-Type":["application/json"]}}`}}, `{"half":`)
				send(3, nats.Header{hdrEnd: {endDone}}, `"lost"}`)
			}},
		{name: "in an event stream", wantStatus: http.StatusOK, wantBody: "data: 1\n\n",
			script: func(send send) {
				send(0, nats.Header{hdrControl: {"nowhere.to.ping"}}, "")
				send(1, nats.Header{hdrHead: {`{"status":200,"header":{"Content-Type":["text/event-stream"]}}`}}, "data: 1\n\n")
				send(3, nats.Header{hdrEnd: {endDone}}, "data: 3\n\n")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Start(t)
			raw := join(t, srv.URL(), "raw", &testfiles.SyncBuffer{})
			fwd, err := NewRouter(join(t, srv.URL(), "forwarder", &testfiles.SyncBuffer{}), RouterOptions{Logger: quietLog})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fwd.Close)
			sub, err := raw.Conn().Subscribe(raw.Subject("session", sessionID), func(m *nats.Msg) {
				tc.script(func(seq int, hdr nats.Header, data string) {
					hdr.Set(hdrSeq, strconv.Itoa(seq))
					raw.publish(&nats.Msg{Subject: m.Reply, Header: hdr, Data: []byte(data)})
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sub.Unsubscribe() })
			if err := raw.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			url, client := forwardServer(t, fwd)
			req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader("{}"))
			req.Header.Set("Mcp-Session-Id", sessionID)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if cut := err != nil; cut != tc.wantCut {
				t.Errorf("reading the body: %v; want it cut off: %v", err, tc.wantCut)
			}
		})
	}
}

// TestHolderSizesNothingByADeclaredLength: a message of a few hundred
// bytes on a held session's subject that declares a large body is refused
// when the body is over the cap, and waited on within it, without the
// holder allocating what it declares.
func TestHolderSizesNothingByADeclaredLength(t *testing.T) {
	tests := []struct {
		name     string
		maxBody  int // the holder's MaxBodyBytes; 0: the default
		declared int
		// wantStatus is the status of the refusal; 0: the holder accepts
		// the request and waits for the rest of its body.
		wantStatus int
		wantBody   string
	}{
		{name: "64 MiB declared, over the default cap", declared: 64 << 20, wantStatus: http.StatusRequestEntityTooLarge,
			wantBody: "at most 4194304 bytes, and this one declares 67108864"},
		{name: "32 MiB declared within a 32 MiB cap, none sent", maxBody: 32 << 20, declared: 32 << 20},
	}
	// A bound far below what is declared, above what the test's NATS
	// traffic and the exchange allocate meanwhile.
	const allocBound = 4 << 20
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Start(t)
			logs := &testfiles.SyncBuffer{}
			holder, err := NewRouter(join(t, srv.URL(), "holder", logs), RouterOptions{MaxBodyBytes: tc.maxBody})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(holder.Close)
			holder.Serve(echo)
			release, err := holder.Hold(sessionID)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(release)
			raw := join(t, srv.URL(), "raw", nil)
			inbox := raw.Conn().NewInbox()
			frames := make(chan *nats.Msg, 16)
			sub, err := raw.Conn().ChanSubscribe(inbox, frames)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sub.Unsubscribe() })
			if err := raw.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			next := func() *nats.Msg {
				t.Helper()
				select {
				case m := <-frames:
					return m
				case <-time.After(promptly):
					t.Fatal("no answer from the holder within 5 s")
					return nil
				}
			}
			head, _ := json.Marshal(wireRequest{Method: "POST", URI: "/mcp", Host: "h", Len: tc.declared, Exchange: "x0123456789", Client: "c"})
			req := &nats.Msg{Subject: raw.Subject("session", sessionID), Reply: inbox,
				Header: nats.Header{hdrRequest: {string(head)}}, Data: []byte("s3cret")}

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := raw.publish(req); err != nil {
				t.Fatal(err)
			}
			first := next()
			if tc.wantStatus != 0 {
				// The refusal is one message: head, error, end.
				var h wireHead
				if err := json.Unmarshal([]byte(first.Header.Get(hdrHead)), &h); err != nil || h.Status != tc.wantStatus ||
					first.Header.Get(hdrEnd) != endDone || !strings.Contains(string(first.Data), tc.wantBody) {
					t.Fatalf("answer %v %q, want %d with %q, ended", first.Header, first.Data, tc.wantStatus, tc.wantBody)
				}
				if log := logs.String(); !strings.Contains(log, "subject="+raw.Subject("session", sessionID)) ||
					!strings.Contains(log, "67108864 bytes declared") {
					t.Errorf("the warning lacks the subject or the size:\n%s", log)
				}
			} else {
				// The accept; then a part out of order, whose abort is the
				// event after which the holder has done all it will.
				ctl := first.Header.Get(hdrControl)
				if ctl == "" {
					t.Fatalf("answer %v %q, want the accept", first.Header, first.Data)
				}
				if err := raw.publish(&nats.Msg{Subject: ctl,
					Header: nats.Header{hdrOp: {opBody}, hdrSeq: {"2"}}, Data: []byte("x")}); err != nil {
					t.Fatal(err)
				}
				if abort := next(); abort.Header.Get(hdrEnd) != endAbort {
					t.Fatalf("answer %v %q, want an abort", abort.Header, abort.Data)
				}
			}
			runtime.ReadMemStats(&after)
			grew := after.TotalAlloc - before.TotalAlloc
			t.Logf("the process allocated %d KiB meanwhile", grew>>10)
			if grew > allocBound {
				t.Errorf("the process allocated %d MiB for a request declaring %d MiB; want at most %d MiB",
					grew>>20, tc.declared>>20, allocBound>>20)
			}
			if strings.Contains(logs.String(), "s3cret") {
				t.Errorf("the log shows the body:\n%s", logs)
			}
		})
	}
}

// holdOpen answers a GET with the head of an event stream and holds it
// open until the client goes; anything else with "served".
var holdOpen = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Write([]byte("served"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
})

// byClientHeader names a forwarded request's client by its X-Client
// header: the tests' clients share one address.
func byClientHeader(r *http.Request) string { return r.Header.Get("X-Client") }

// openStreams opens n GET streams through p for client, on the sessions
// given in turn, some at once, and returns how many were answered with each status and
// one refusal's body. The streams stay open until the test ends.
func (p *fwdPair) openStreams(t *testing.T, n int, client string, sessions []string) (map[int]int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, n)
	// At most 32 are opening at once: a thousand waiting at once for
	// their accept would wait out its timeout on a busy machine.
	opening := make(chan struct{}, 32)
	for i := range n {
		opening <- struct{}{}
		go func() {
			defer func() { <-opening }()
			req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/mcp", nil)
			req.Header.Set("Mcp-Session-Id", sessions[i%len(sessions)])
			req.Header.Set("X-Client", client)
			resp, err := p.client.Do(req)
			if err != nil {
				answers <- answer{status: 0, body: err.Error()}
				return
			}
			a := answer{status: resp.StatusCode}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				a.body = string(b)
				resp.Body.Close()
			}
			answers <- a
		}()
	}
	got, refusal := map[int]int{}, ""
	for range n {
		select {
		case a := <-answers:
			got[a.status]++
			if a.status != http.StatusOK {
				refusal = a.body
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %v of %d streams answered within 30 s", got, n)
		}
	}
	return got, refusal
}

// sessionIDs are n session ids p's holder holds, sessionID first.
func (p *fwdPair) sessionIDs(t *testing.T, n int) []string {
	t.Helper()
	ids := []string{sessionID}
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("%032x", i)
		release, err := p.holder.Hold(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		ids = append(ids, id)
	}
	return ids
}

// TestForwardBoundPerSessionAndClient: one session, or one client, takes
// its share of a holder's exchanges and no more; the refusal says which
// bound and how to raise it, and another client is served.
func TestForwardBoundPerSessionAndClient(t *testing.T) {
	tests := []struct {
		name     string
		sessions int // the attacker's streams go to this many sessions in turn
		wantHeld int
		wantWhy  string
	}{
		{name: "one session's streams", sessions: 1, wantHeld: 2,
			wantWhy: "at most 2 requests of one session forwarded from other replicas at once"},
		{name: "one client's sessions", sessions: 6, wantHeld: 4,
			wantWhy: "at most 4 requests of one client forwarded from other replicas at once"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newFwdPair(t, holdOpen, RouterOptions{MaxExchanges: 8, MaxExchangesPerSession: 2, MaxExchangesPerClient: 4,
				ClientKey: byClientHeader, Logger: quietLog})
			ids := p.sessionIDs(t, tc.sessions+1)
			got, refusal := p.openStreams(t, 8, "attacker", ids[:tc.sessions])
			if got[http.StatusOK] != tc.wantHeld || got[http.StatusServiceUnavailable] != 8-tc.wantHeld {
				t.Errorf("the attacker's 8 streams: %v, want %d held and the rest 503", got, tc.wantHeld)
			}
			for _, want := range []string{tc.wantWhy, "an operator raises the bound with --max-forwarded-per-", `"code":"RATE_LIMITED"`,
				`"retry_after":5`} {
				if !strings.Contains(refusal, want) {
					t.Errorf("the refusal %s lacks %q", refusal, want)
				}
			}
			resp := p.do(t, context.Background(), "POST", "/mcp", ids[tc.sessions], []byte(`{}`), "X-Client", "victim")
			if body := readAll(t, resp); resp.StatusCode != http.StatusOK || body != "served" {
				t.Errorf("the victim's request: %d %q, want 200", resp.StatusCode, body)
			}
		})
	}
}

// TestForwardOneClientCannotTakeThePool is the trial: one client opens
// forwarded GET streams through a second replica at the default bounds,
// as many as the holder's whole pool (the trial took 1,023 of its 1,024),
// over 16 sessions; a victim's request through that replica is then
// served.
func TestForwardOneClientCannotTakeThePool(t *testing.T) {
	p := newFwdPair(t, holdOpen, RouterOptions{ClientKey: byClientHeader, Logger: quietLog})
	ids := p.sessionIDs(t, 17)
	const n = DefaultMaxExchanges
	got, refusal := p.openStreams(t, n, "attacker", ids[:16])
	if got[http.StatusOK] != DefaultMaxExchangesPerClient || got[http.StatusServiceUnavailable] != n-DefaultMaxExchangesPerClient {
		t.Errorf("the attacker's streams: %v, want %d held and the rest 503", got, DefaultMaxExchangesPerClient)
	}
	if !strings.Contains(refusal, "too many forwarded requests for this client") {
		t.Errorf("the refusal: %s", refusal)
	}
	resp := p.do(t, context.Background(), "POST", "/mcp", ids[16], []byte(`{}`), "X-Client", "victim")
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || body != "served" {
		t.Errorf("the victim's request: %d %q, want 200", resp.StatusCode, body)
	}
}
