package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/stdio"
)

func engine(t *testing.T, opts mcp.EngineOptions) *mcp.Engine {
	srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"},
		Methods: map[string]mcp.Handler{
			"test/slow": func(ctx context.Context, _ *mcp.Request) (any, error) {
				select {
				case <-time.After(100 * time.Millisecond):
					return map[string]bool{"done": true}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		}}
	e := mcp.NewEngine(srv, opts)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// run feeds input to a stdio session and returns every line written.
func run(t *testing.T, e *mcp.Engine, input string) []map[string]any {
	t.Helper()
	var out strings.Builder
	err := stdio.Serve(context.Background(), e, strings.NewReader(input), &out, stdio.Options{})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout holds a line that is not JSON: %q", sc.Text())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func byID(msgs []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range msgs {
		id, _ := json.Marshal(m["id"])
		out[string(id)] = m
	}
	return out
}

// TestEOFAnswersInflightThenEnds: stdin closing with a request still
// running ends the session only after that request is answered.
func TestEOFAnswersInflightThenEnds(t *testing.T) {
	e := engine(t, mcp.EngineOptions{})
	msgs := run(t, e, initLine+"\n"+`{"jsonrpc":"2.0","id":1,"method":"test/slow"}`+"\n")
	got := byID(msgs)
	if got["1"] == nil || got["1"]["result"] == nil {
		t.Fatalf("in-flight request not answered before exit: %v", msgs)
	}
}

// TestCancelAnswersInflightThenEnds is TestEOFAnswersInflightThenEnds for
// a signal (serve cancels Serve's context on SIGTERM and SIGINT) with
// stdin still open: Serve returns only once the request in flight has
// been answered and written, and no later than DrainTimeout allows.
func TestCancelAnswersInflightThenEnds(t *testing.T) {
	tests := []struct {
		name    string
		drain   time.Duration
		finish  bool   // the request finishes during the drain
		wantErr string // Serve's error, when the drain runs out
	}{
		{name: "answered during the drain", drain: 10 * time.Second, finish: true},
		{name: "cut off by the drain timeout", drain: 200 * time.Millisecond, wantErr: "did not finish within 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"},
				Methods: map[string]mcp.Handler{
					// Held until the test lets it go, so the cancel surely
					// lands while it is in flight.
					"test/held": func(ctx context.Context, _ *mcp.Request) (any, error) {
						close(started)
						select {
						case <-release:
							return map[string]bool{"done": true}, nil
						case <-ctx.Done():
							return nil, ctx.Err()
						}
					},
				}}
			e := mcp.NewEngine(srv, mcp.EngineOptions{})
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })

			pr, pw := io.Pipe()
			defer pw.Close()
			var out testfiles.SyncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- stdio.Serve(ctx, e, pr, &out, stdio.Options{DrainTimeout: tt.drain}) }()
			if _, err := io.WriteString(pw, initLine+"\n"+`{"jsonrpc":"2.0","id":1,"method":"test/held"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the held request never started")
			}
			cancel()

			if tt.finish {
				select {
				case err := <-done:
					t.Fatalf("Serve returned (%v) with a request in flight; stdout:\n%s", err, out.String())
				case <-time.After(200 * time.Millisecond):
				}
				close(release)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(tt.drain + 10*time.Second):
				t.Fatal("Serve did not return")
			}
			answered := strings.Contains(out.String(), `"id":1,"result":{"done":true}`)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Serve: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Serve returned %v, want an error containing %q", err, tt.wantErr)
			case answered != tt.finish:
				t.Fatalf("request answered: %v, want %v; stdout:\n%s", answered, tt.finish, out.String())
			}
		})
	}
}

// TestBadFramesAndLineEndings: malformed lines are answered, blank lines
// are skipped, CRLF and a last line without newline work.
func TestBadFramesAndLineEndings(t *testing.T) {
	e := engine(t, mcp.EngineOptions{})
	input := initLine + "\r\n" +
		"\n   \n" +
		"{not json\n" +
		`[1,2]` + "\n" +
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\r\n" +
		`{"jsonrpc":"2.0","id":-7,"method":"ping"}` // no trailing newline
	msgs := run(t, e, input)
	if len(msgs) != 6 {
		t.Fatalf("want 6 answers, got %d: %v", len(msgs), msgs)
	}
	codes := []float64{}
	for _, m := range msgs[1:4] {
		errObj, _ := m["error"].(map[string]any)
		codes = append(codes, errObj["code"].(float64))
		if m["id"] != nil {
			t.Errorf("error for an unreadable id must carry id null: %v", m)
		}
	}
	if codes[0] != -32700 || codes[1] != -32600 || codes[2] != -32600 {
		t.Errorf("codes %v", codes)
	}
	got := byID(msgs)
	if got[`"a"`] == nil || got["-7"] == nil {
		t.Errorf("pings not answered: %v", msgs)
	}
}

// TestOversizedLine: a line over the cap is answered with an error without
// being buffered whole, and the session goes on.
func TestOversizedLine(t *testing.T) {
	e := engine(t, mcp.EngineOptions{MaxMessageSize: 1000})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("y", 200_000) + `"}}`
	msgs := run(t, e, initLine+"\n"+big+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	if len(msgs) != 3 {
		t.Fatalf("want 3 answers, got %d", len(msgs))
	}
	errObj, _ := msgs[1]["error"].(map[string]any)
	data, _ := errObj["data"].(map[string]any)
	if errObj["code"] != float64(-32600) || data["code"] != mcp.CodeMessageTooBig {
		t.Fatalf("got %v", msgs[1])
	}
	if msgs[2]["result"] == nil {
		t.Fatalf("session did not go on: %v", msgs[2])
	}
}

// TestCancelContextReturns: cancelling the context (SIGTERM) ends Serve
// even while stdin stays open.
func TestCancelContextReturns(t *testing.T) {
	e := engine(t, mcp.EngineOptions{})
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stdio.Serve(ctx, e, pr, io.Discard, stdio.Options{}) }()
	if _, err := io.WriteString(pw, initLine+"\n"); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestStdoutWriteFailure: a client that closed its end of stdout has hung
// up, which ends the session as EOF does; any other failed write is an
// error that says what failed. Either way Serve returns at once, with
// stdin still open.
func TestStdoutWriteFailure(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"the client closed stdout", syscall.EPIPE, false},
		{"stdout failed otherwise", syscall.EIO, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := engine(t, mcp.EngineOptions{})
			pr, pw := io.Pipe()
			defer pw.Close()
			done := make(chan error, 1)
			go func() { done <- stdio.Serve(context.Background(), e, pr, failingWriter{tc.err}, stdio.Options{}) }()
			if _, err := io.WriteString(pw, initLine+"\n"); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if tc.wantErr && (err == nil || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "stdout")) {
					t.Fatalf("Serve = %v, want an error about writing to stdout wrapping %v", err, tc.err)
				}
				if !tc.wantErr && err != nil {
					t.Fatalf("Serve = %v, want nil: the client hung up", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return after its stdout failed")
			}
		})
	}
}

// TestBothEras: a dual-era client probes with server/discover and then
// speaks 2026-07-28 on the pipe without initialize; a 2025 client's
// initialize on the same kind of pipe works as before.
func TestBothEras(t *testing.T) {
	e := engine(t, mcp.EngineOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	msgs := byID(run(t, e, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"test/slow","params":{`+meta+`}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{`+meta+`}}`+"\n"))
	discover, _ := msgs["1"]["result"].(map[string]any)
	if versions, _ := discover["supportedVersions"].([]any); len(versions) == 0 || versions[0] != "2026-07-28" || discover["resultType"] != "complete" {
		t.Fatalf("discover = %v", msgs["1"])
	}
	if slow, _ := msgs["2"]["result"].(map[string]any); slow["done"] != true || slow["resultType"] != "complete" {
		t.Fatalf("a 2026 request without initialize = %v", msgs["2"])
	}
	if errObj, _ := msgs["3"]["error"].(map[string]any); errObj["code"] != float64(-32601) {
		t.Fatalf("ping under 2026-07-28 = %v, want -32601 (the revision removed it)", msgs["3"])
	}

	legacy := byID(run(t, e, initLine+"\n"+`{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n"))
	if init, _ := legacy["0"]["result"].(map[string]any); init["protocolVersion"] != "2025-06-18" {
		t.Fatalf("initialize = %v", legacy["0"])
	}
	if p, _ := legacy["4"]["result"].(map[string]any); p == nil || len(p) != 0 {
		t.Fatalf("legacy ping = %v, want {}", legacy["4"])
	}
}
