//go:build linux

package main

// The tests in this file drive the built binary as a process of its own,
// the way a careless or hostile peer would: more connections than the
// server has descriptors, connections that say nothing, bodies that never
// end, heads with bare LF line endings, a Streamable HTTP probe on the
// legacy SSE URL, and a stdio client that closes the server's stderr or
// stdout. A handler test cannot see any of it: what is tested is the
// listener, the process and its pipes. They read /proc and rely on ulimit
// and pipe semantics, hence Linux only.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// headerTimeout is the HTTP server's ReadHeaderTimeout
	// (transport/httpserver): a connection that has not sent a whole
	// request head by then is closed.
	headerTimeout = 10 * time.Second
	// answerBound is how long a refusal may take while the request's body
	// is still unfinished. It guards against a hang on a busy machine and
	// is no speed claim: a server that waits for the body answers only
	// when its body timeout (httpx.DefaultBodyTimeout, 30 s) runs out,
	// after this bound, which leaves a loaded machine seconds to spare.
	answerBound = 20 * time.Second
	// declaredBody is the Content-Length of the unfinished bodies: the
	// largest message the server accepts by default, so that nothing but
	// the request's head can refuse it before the body is read.
	declaredBody = 4 << 20
)

// builds are the flowyprompt binaries, each built once per test binary:
// the full build ("") and the desktop build ("desktop", package
// edition), by their -tags, in one temporary folder.
var builds = struct {
	dir  string
	once sync.Once
	err  error
	tags map[string]*build
}{tags: map[string]*build{"": {}, "desktop": {}}}

type build struct {
	once sync.Once
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// binary returns the path of the built flowyprompt, building it on first
// use (the tests that run the CLI in-process never pay for it).
func binary(t *testing.T) string {
	t.Helper()
	return binaryTagged(t, "")
}

// binaryTagged is binary built with -tags tags: "" or "desktop".
func binaryTagged(t *testing.T, tags string) string {
	t.Helper()
	b, ok := builds.tags[tags]
	if !ok {
		t.Fatalf("no build with -tags %q", tags)
	}
	builds.once.Do(func() { builds.dir, builds.err = os.MkdirTemp("", "flowyprompt-bin-") })
	if builds.err != nil {
		t.Fatal(builds.err)
	}
	b.once.Do(func() {
		bin := filepath.Join(builds.dir, "flowyprompt"+strings.ReplaceAll(tags, ",", "-"))
		out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, "github.com/flowyprompt/flowyprompt/cmd/flowyprompt").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build -tags %q: %v\n%s", tags, err, out)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// serverEnv is the whole environment of a server under test: a home of
// its own and extra, so that nothing in the caller's shell (a token, a
// template folder, a log level) changes what is tested.
func serverEnv(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	return append([]string{"HOME=" + home, "XDG_CACHE_HOME=" + home, "XDG_CONFIG_HOME=" + home}, extra...)
}

// httpServer is `flowyprompt serve --transport http` running as a process.
type httpServer struct {
	*process
	addr string // host:port; as a Host header, one the server allows
}

// startHTTP runs the HTTP server on a free loopback port with env as its
// only environment, and stops it when the test ends. fileLimit, when
// positive, caps its descriptors, soft and hard alike so that the Go
// runtime cannot raise the soft limit at start.
func startHTTP(t *testing.T, fileLimit int, env ...string) *httpServer {
	t.Helper()
	bin := binary(t)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := append(append([]string{"env", "-i"}, serverEnv(t, env...)...), bin, "serve", "--transport", "http", "--addr", addr)
	if fileLimit > 0 {
		// Both execs keep the PID: the process measured is the server.
		cmd = append([]string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, fileLimit), "sh"}, cmd...)
	}
	p, err := startProcess(cmd, addr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &httpServer{process: p, addr: addr}
}

// fatalf fails t, adding how the server ended when it has exited or
// exits within a moment (a failed exchange may have been its last).
func (s *httpServer) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	select {
	case <-s.Exited():
		msg += fmt.Sprintf("\nthe server exited (%v); its output ends:\n%s", s.ExitErr(), s.Output())
	case <-time.After(2 * time.Second):
	}
	t.Fatal(msg)
}

// requireRunning fails t when the server has exited.
func (s *httpServer) requireRunning(t *testing.T, when string) {
	t.Helper()
	select {
	case <-s.Exited():
		t.Fatalf("the server exited %s (%v); its output ends:\n%s", when, s.ExitErr(), s.Output())
	default:
	}
}

// client talks to the servers under test: a connection per request, no
// proxy from the environment, and a bound on every exchange.
var client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// health returns the /healthz report, which must be a 200.
func (s *httpServer) health(t *testing.T) map[string]any {
	t.Helper()
	return s.healthWith(t, "")
}

// healthWith is health asked with the access token ("": none).
func (s *httpServer) healthWith(t *testing.T, token string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		s.fatalf(t, "GET /healthz: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		s.fatalf(t, "GET /healthz: %s %q (%v)", res.Status, body, err)
	}
	var report map[string]any
	if err := json.Unmarshal(body, &report); err != nil {
		t.Fatalf("GET /healthz: %v: %q", err, body)
	}
	return report
}

// sessions is the live session count /healthz reports.
func (s *httpServer) sessions(t *testing.T) float64 {
	t.Helper()
	n, ok := s.health(t)["sessions"].(map[string]any)["total"].(float64)
	if !ok {
		t.Fatal("/healthz reports no sessions.total")
	}
	return n
}

const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flowyprompt-hostile-test","version":"0"}}}`

// post sends body as JSON to path and returns the answer with its body
// read whole.
func (s *httpServer) post(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := client.Do(req)
	if err != nil {
		s.fatalf(t, "POST %s: %v", path, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		s.fatalf(t, "POST %s: reading the answer: %v", path, err)
	}
	return res, answer
}

// initialize opens a Streamable HTTP session with POST /mcp.
func (s *httpServer) initialize(t *testing.T) {
	t.Helper()
	res, body := s.post(t, "/mcp", initializeMsg)
	if res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		s.fatalf(t, "POST /mcp initialize: %s, session %q, body %q", res.Status, res.Header.Get("Mcp-Session-Id"), body)
	}
	var answer struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Result.ServerInfo.Name != "flowyprompt" {
		t.Fatalf("POST /mcp initialize: not an initialize result (%v): %q", err, body)
	}
}

// rawRequest writes data (a head, and whatever of a body follows it) on a
// fresh connection and reads the answer for at most answerBound. The
// connection stays open until the test ends, so a server waiting for the
// rest of a body is still waiting when the answer is due.
func (s *httpServer) rawRequest(t *testing.T, data string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		s.fatalf(t, "dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(answerBound))
	if _, err := io.WriteString(c, data); err != nil {
		s.fatalf(t, "write the request: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		s.fatalf(t, "no answer within %s: %v", answerBound, err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		s.fatalf(t, "read the answer's body: %v (%s, %q so far)", err, res.Status, body)
	}
	return res, body
}

// errorBody is an HTTP error answer's JSON-RPC error.
type errorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
			What string `json:"what"`
			Why  string `json:"why"`
			How  string `json:"how"`
		} `json:"data"`
	} `json:"error"`
}

// checkError fails t unless body is a JSON-RPC error (id null) whose data
// carries code and explains what went wrong, why and how to do it right.
func checkError(t *testing.T, body []byte, code string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body is not JSON (%v): %q", err, body)
	}
	if e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Message == "" {
		t.Errorf("not a JSON-RPC error with id null: %q", body)
	}
	d := e.Error.Data
	if d.Code != code || d.What == "" || d.Why == "" || d.How == "" {
		t.Errorf("error data: code %q, what %q, why %q, how %q; want code %s and all three explained", d.Code, d.What, d.Why, d.How, code)
	}
}

// waitFor polls cond until it holds, for at most bound: for states that
// only /proc shows, which announces nothing.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", bound, what, state)
		}
		<-tick.C
	}
}

// fileLimits returns pid's soft and hard limits on open files.
func fileLimits(t *testing.T, pid int) (soft, hard string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[0], f[1]
			}
		}
	}
	t.Fatalf("no open-file limit in /proc/%d/limits:\n%s", pid, b)
	return "", ""
}

// TestBinaryOutOfDescriptors: a server with more clients than descriptors
// takes what it can, leaves the rest waiting, and serves again once they
// leave, instead of ending its accept loop (and the process) at the first
// "too many open files".
func TestBinaryOutOfDescriptors(t *testing.T) {
	const limit, clients = 100, 300
	s := startHTTP(t, limit)
	if soft, hard := fileLimits(t, s.PID()); soft != strconv.Itoa(limit) || hard != soft {
		t.Fatalf("the server's open-file limit is %s (hard %s), want %d: the test would not exhaust it", soft, hard, limit)
	}
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		// The kernel completes connections the server has not accepted
		// (up to the listen backlog), so these succeed while it is out
		// of descriptors.
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			s.fatalf(t, "connection %d of %d: %v", len(conns)+1, clients, err)
		}
		conns = append(conns, c)
	}
	// Every descriptor the server may hold open is open at the moment
	// accept fails for want of one.
	fds := "/proc/" + strconv.Itoa(s.PID()) + "/fd"
	waitFor(t, 30*time.Second, "the server to run out of descriptors", func() (bool, string) {
		select {
		case <-s.Exited():
			return true, ""
		default:
		}
		open, err := os.ReadDir(fds)
		if err != nil {
			return false, err.Error()
		}
		return len(open) >= limit, fmt.Sprintf("%d of %d descriptors open", len(open), limit)
	})
	s.requireRunning(t, "when it ran out of descriptors")
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// The refused connections wait in the backlog behind these requests'
	// connections until the server has closed the ones that left.
	s.health(t)
	s.initialize(t)
	s.requireRunning(t, "after serving again")
}

// TestBinarySilentConnectionClosed: a connection that never sends a
// request is closed once the header timeout passes, rather than holding a
// descriptor for the idle timeout (2 minutes). It waits out the header
// timeout, beside the other tests.
func TestBinarySilentConnectionClosed(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, 0)
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		s.fatalf(t, "dial: %v", err)
	}
	defer c.Close()
	bound := headerTimeout + 5*time.Second
	c.SetReadDeadline(time.Now().Add(bound))
	// Whatever the server says before closing (nothing, or a 408) is
	// read and dropped; what matters is that the connection ends.
	_, err = io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection that sent nothing is still open after %s (header timeout %s)", bound, headerTimeout)
	}
	s.requireRunning(t, "after closing a silent connection")
}

// unfinishedPost is the head of a POST /mcp declaring a body of
// declaredBody bytes, with the given Host and extra header lines, and the
// start of that body.
func unfinishedPost(host, headers string, bodyStart []byte) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n%s",
		host, declaredBody, headers, bodyStart)
}

// bodyStart returns the first n bytes of a ping whose params never end.
func bodyStart(n int) []byte {
	b := bytes.Repeat([]byte("x"), n)
	copy(b, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`)
	return b
}

// TestBinaryUnfinishedBodyRefused: a request the security layer or the
// session lookup refuses is refused from its head, while its body is
// still coming, instead of after the server has taken in the whole body.
func TestBinaryUnfinishedBodyRefused(t *testing.T) {
	const token = "hostile-test-token"
	plain := startHTTP(t, 0)
	guarded := startHTTP(t, 0, "MCP_AUTH_TOKEN="+token)
	tests := []struct {
		name    string
		srv     *httpServer
		host    string // "" is the server's own address
		headers string
		status  int
		code    string
	}{
		{name: "foreign Host", srv: plain, host: "evil.example", status: http.StatusForbidden, code: "FORBIDDEN_HOST"},
		{name: "token configured, none sent", srv: guarded, status: http.StatusUnauthorized, code: "UNAUTHORIZED"},
		{name: "unknown session", srv: plain, headers: "Mcp-Session-Id: " + strings.Repeat("0", 32) + "\r\n",
			status: http.StatusNotFound, code: "SESSION_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			if host == "" {
				host = tt.srv.addr
			}
			res, body := tt.srv.rawRequest(t, unfinishedPost(host, tt.headers, bodyStart(64<<10)))
			if res.StatusCode != tt.status {
				t.Fatalf("answer %s, want %d: %q", res.Status, tt.status, body)
			}
			checkError(t, body, tt.code)
			if tt.status == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("401 without a Bearer challenge: WWW-Authenticate %q", res.Header.Get("WWW-Authenticate"))
			}
			tt.srv.requireRunning(t, "after the refusal")
		})
	}
}

// TestBinaryUnfinishedBodiesMemory: a hundred foreign-Host requests that
// each send all of a 4 MB body but its last byte cost the server little
// memory, because it refuses them from their heads instead of buffering
// their bodies (about 400 MB).
func TestBinaryUnfinishedBodiesMemory(t *testing.T) {
	const clients = 100
	const bound = 64 << 20
	s := startHTTP(t, 0)
	// Warm up the paths measured, so that their first use is not counted.
	s.health(t)
	warm := strings.Replace(unfinishedPost("evil.example", "", nil), strconv.Itoa(declaredBody), "2", 1) + "{}"
	if res, body := s.rawRequest(t, warm); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign Host: %s %q, want 403", res.Status, body)
	}
	before, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}

	head := []byte(unfinishedPost("evil.example", "", nil))
	body := bodyStart(declaredBody - 1) // shared, read only
	conns := make([]net.Conn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	dialErrs := make(chan error, clients)
	var cut atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
			if err != nil {
				dialErrs <- err
				return
			}
			conns[i] = c
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			// A server that refuses at once closes the connection while
			// the body is still coming: the write fails, as it should.
			if _, err := c.Write(head); err != nil {
				cut.Add(1)
				return
			}
			if _, err := c.Write(body); err != nil {
				cut.Add(1)
			}
		})
	}
	wg.Wait()
	if n := len(dialErrs); n > 0 {
		s.fatalf(t, "%d of %d connections failed, one with %v", n, clients, <-dialErrs)
	}
	s.requireRunning(t, "while holding unfinished bodies")
	after, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	grew := after.RSS - before.RSS
	t.Logf("RSS %d MB -> %d MB (peak %d MB); %d of %d bodies cut short by the server",
		before.RSS>>20, after.RSS>>20, after.HWM>>20, cut.Load(), clients)
	if grew >= bound {
		t.Fatalf("holding %d unfinished %d-byte bodies grew the server's RSS by %d MB (from %d MB to %d MB), want under %d MB",
			clients, declaredBody, grew>>20, before.RSS>>20, after.RSS>>20, bound>>20)
	}
}

// TestBinaryBareLFHead: a request head whose lines end in a bare LF gets
// an answer (whichever status), not silence until the header timeout.
func TestBinaryBareLFHead(t *testing.T) {
	s := startHTTP(t, 0)
	res, body := s.rawRequest(t, "GET /healthz HTTP/1.1\nHost: "+s.addr+"\n\n")
	t.Logf("answered %s %q", res.Status, body)
	s.requireRunning(t, "after a bare-LF head")
}

// TestBinaryPostSSE: POST /sse answers an initialize, which is a
// Streamable HTTP client probing the legacy URL, with 405 and Allow: GET:
// clients fall back to GET /sse on a 404 or 405, and some on nothing
// else. Every other POST keeps its answer.
func TestBinaryPostSSE(t *testing.T) {
	s := startHTTP(t, 0)
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	tests := []struct {
		name   string
		query  string
		body   string
		status int
		allow  string // the Allow header wanted, if any
		code   string // error.data.code; "" for a success
		answer string // the exact body of a success
	}{
		{name: "initialize (a Streamable HTTP probe)", body: initializeMsg, status: http.StatusMethodNotAllowed, allow: "GET", code: "METHOD_NOT_ALLOWED"},
		{name: "a request without a session is answered in the body", body: ping, status: http.StatusOK, answer: `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{name: "not JSON", body: "nope", status: http.StatusBadRequest, code: "PARSE_ERROR"},
		{name: "not a request", body: `{"jsonrpc":"2.0","id":1}`, status: http.StatusBadRequest, code: "BAD_REQUEST"},
		{name: "a notification without a session", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: http.StatusBadRequest, code: "SESSION_REQUIRED"},
		{name: "an unknown session", query: "?session_id=" + strings.Repeat("0", 32), body: ping, status: http.StatusNotFound, code: "SESSION_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.sessions(t)
			res, body := s.post(t, "/sse"+tt.query, tt.body)
			if res.StatusCode != tt.status {
				t.Fatalf("answer %s, want %d: %q", res.Status, tt.status, body)
			}
			if got := res.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.code == "" {
				if got := string(bytes.TrimSpace(body)); got != tt.answer {
					t.Errorf("body %q, want %q", got, tt.answer)
				}
				return
			}
			checkError(t, body, tt.code)
			if res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q, want application/json", res.Header.Get("Content-Type"))
			}
			// A refused post opens nothing. (An earlier case's one-shot
			// session may still be closing: only growth is counted.)
			if after := s.sessions(t); after > before {
				t.Errorf("the refused post left a session behind: %v live before, %v after", before, after)
			}
		})
	}
}

// TestBinaryStdioClosedPipes: a stdio client that closes the server's
// stderr keeps its session, and one that closes stdout ends it; in
// neither case does the next write kill the server with SIGPIPE, and it
// never lingers. The read ends are closed before the server starts, so
// every log line it writes, from its first, meets a broken pipe;
// LOG_LEVEL=debug adds one per request.
func TestBinaryStdioClosedPipes(t *testing.T) {
	bin := binary(t)
	messages := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flowyprompt-hostile-test","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"Commit_Message","arguments":{"diff":"-old\n+zebra crossing\n"}}}`,
	}
	tests := []struct {
		name                     string
		closeStdout, closeStderr bool
		wantAnswers, wantStatus0 bool
	}{
		{name: "stderr closed: the session goes on", closeStderr: true, wantAnswers: true, wantStatus0: true},
		// A client that closed the server's stdout has hung up: the session
		// ends as it does at the end of stdin.
		{name: "stdout closed: the session ends", closeStdout: true, wantStatus0: true},
		{name: "both closed", closeStdout: true, closeStderr: true, wantStatus0: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, "serve")
			cmd.Env = serverEnv(t, "LOG_LEVEL=debug")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			// Pipes of our own rather than exec's: Wait would close exec's
			// read ends under a reader still draining them.
			pipe := func(closeReader bool) (r, w *os.File) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				if closeReader {
					r.Close()
					return nil, w
				}
				t.Cleanup(func() { r.Close() })
				return r, w
			}
			outR, outW := pipe(tt.closeStdout)
			errR, errW := pipe(tt.closeStderr)
			cmd.Stdout, cmd.Stderr = outW, errW
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The child holds the write ends now; ours would keep the
			// pipes open past its exit.
			outW.Close()
			errW.Close()
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			stderr := make(chan string, 1)
			if errR != nil {
				go func() { b, _ := io.ReadAll(errR); stderr <- string(b) }()
			} else {
				stderr <- "(stderr closed)"
			}
			lines := make(chan string, 8)
			if outR != nil {
				go func() {
					sc := bufio.NewScanner(outR)
					sc.Buffer(nil, 1<<20)
					for sc.Scan() {
						lines <- sc.Text()
					}
					close(lines)
				}()
			}

			// A server that died writes nothing more, so writes may fail;
			// the exit status says why.
			for _, m := range messages {
				if _, err := io.WriteString(stdin, m+"\n"); err != nil {
					break
				}
			}
			if tt.wantAnswers {
				timeout := time.After(15 * time.Second)
				for _, id := range []string{"1", "2"} {
					select {
					case l, ok := <-lines:
						if !ok {
							<-exited
							t.Fatalf("stdout ended before answer %s: %v", id, cmd.ProcessState)
						}
						var answer struct {
							ID     json.RawMessage `json:"id"`
							Result json.RawMessage `json:"result"`
						}
						if err := json.Unmarshal([]byte(l), &answer); err != nil || string(answer.ID) != id || answer.Result == nil {
							t.Fatalf("want the result of request %s, got %q (%v)", id, l, err)
						}
						if id == "2" && !strings.Contains(l, "zebra crossing") {
							t.Errorf("prompts/get result lacks the diff: %.300s", l)
						}
					case <-timeout:
						t.Fatalf("no answer %s within 15 s", id)
					}
				}
				// The client is done: end of input is the normal end.
				stdin.Close()
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatalf("the server still runs 20 s after its pipes closed (spinning or stuck)")
			}
			st := cmd.ProcessState
			if !st.Exited() {
				t.Fatalf("the server did not exit by itself: %v (a write to the closed pipe killed it)\nstderr: %s", st, <-stderr)
			}
			if tt.wantStatus0 && st.ExitCode() != 0 {
				t.Fatalf("exit status %d, want 0\nstderr: %s", st.ExitCode(), <-stderr)
			}
			out := strings.TrimSpace(<-stderr)
			t.Logf("%v; stderr ends: %s", st, out[strings.LastIndexByte(out, '\n')+1:])
		})
	}
}
