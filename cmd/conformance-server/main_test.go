package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/google/go-cmp/cmp"
)

// bound caps every wait in these tests: a guard against hangs, not a
// speed assertion. drain is the server's --drain-timeout, well below it,
// and long enough that a loaded machine does not cut a clean shutdown
// short (run returns an error when the drain runs out).
const (
	bound = 30 * time.Second
	drain = "10s"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    config
		wantErr string
	}{
		{nil, config{addr: "127.0.0.1:3001", answers: "sse", watchInterval: 3 * time.Second, drain: 5 * time.Second}, ""},
		{[]string{"--addr", "127.0.0.1:0", "--answers", "auto", "--watch-interval", "0", "--verbose"},
			config{addr: "127.0.0.1:0", answers: "auto", drain: 5 * time.Second, verbose: true}, ""},
		{[]string{"--answers", "json"}, config{}, `--answers "json": want sse or auto`},
		{[]string{"serve"}, config{}, `unexpected arguments ["serve"]`},
		{[]string{"--nope"}, config{}, "flag provided but not defined: -nope"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(config{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}

// server runs the command in-process and returns its base URL; the
// command is stopped, and must exit cleanly, when the test ends.
func server(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs testfiles.SyncBuffer
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0", "--drain-timeout", drain}, args...), &logs, ready)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v\nlogs:\n%s", err, logs.String())
			}
		case <-time.After(bound):
			t.Errorf("run did not return within %s of cancellation", bound)
		}
	})
	select {
	case url := <-ready:
		return url
	case err := <-done:
		t.Fatalf("run ended before listening: %v\nlogs:\n%s", err, logs.String())
	case <-time.After(bound):
		t.Fatal("the server did not listen in time")
	}
	return ""
}

var client = &http.Client{Timeout: bound}

// post sends one JSON-RPC message to /mcp as the suite's client does and
// returns the response, its content type and the JSON-RPC answer (from
// the JSON body, or the first SSE event carrying an id).
func post(t *testing.T, base, session, body string) (*http.Response, json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: status %d: %s", body, resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if ok && strings.Contains(data, `"id"`) {
			return resp, json.RawMessage(data)
		}
	}
	t.Fatalf("POST %s: the stream ended without an answer (%v)", body, sc.Err())
	return nil, nil
}

func TestServeOverHTTP(t *testing.T) {
	tests := []struct {
		answers     string
		contentType string
	}{
		{"sse", "text/event-stream"},
		{"auto", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.answers, func(t *testing.T) {
			base := server(t, "--answers", tc.answers, "--watch-interval", "0")
			resp, init := post(t, base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
				`"capabilities":{},"clientInfo":{"name":"go-test","version":"1"}}}`)
			if got := resp.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("initialize answered as %q, want %q", got, tc.contentType)
			}
			session := resp.Header.Get("Mcp-Session-Id")
			if session == "" {
				t.Fatalf("no Mcp-Session-Id on the initialize answer: %s", init)
			}
			var ir struct {
				Result struct {
					ProtocolVersion string         `json:"protocolVersion"`
					Capabilities    map[string]any `json:"capabilities"`
					ServerInfo      struct{ Name string }
				} `json:"result"`
			}
			if err := json.Unmarshal(init, &ir); err != nil {
				t.Fatal(err)
			}
			if ir.Result.ProtocolVersion != "2025-11-25" || ir.Result.ServerInfo.Name != "flowyprompt-conformance-server" {
				t.Errorf("initialize result %s", init)
			}
			for _, c := range []string{"tools", "prompts", "resources", "completions", "logging"} {
				if _, ok := ir.Result.Capabilities[c]; !ok {
					t.Errorf("capability %s not advertised: %s", c, init)
				}
			}
			if resp, _ := post(t, base, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
				t.Errorf("notifications/initialized: status %d, want 202", resp.StatusCode)
			}
			resp, call := post(t, base, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}`)
			if got := resp.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("tools/call answered as %q, want %q", got, tc.contentType)
			}
			want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`
			if diff := cmp.Diff(asJSON(t, []byte(want)), asJSON(t, call)); diff != "" {
				t.Errorf("tools/call (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDNSRebindingRefused is the suite's dns-rebinding-protection
// scenario: a foreign Host and Origin are refused with a 4xx, our own
// address is served.
func TestDNSRebindingRefused(t *testing.T) {
	base := server(t, "--watch-interval", "0")
	host := strings.TrimPrefix(base, "http://")
	tests := []struct {
		host, origin string
		want         int
	}{
		{"evil.example.com", "http://evil.example.com", http.StatusForbidden},
		{host, "http://evil.example.com", http.StatusForbidden},
		{"evil.example.com", "", http.StatusForbidden},
		{host, "http://" + host, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.host+" "+tc.origin, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
				`"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"dns","version":"1"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// readEvents reads SSE data lines from r until match returns true.
func readEvents(t *testing.T, r io.Reader, match func(data string) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && match(data) {
			return
		}
	}
	t.Fatalf("the stream ended before the expected event (%v)", sc.Err())
}

// TestWatchedResourceReachesSubscriber follows a subscription over HTTP:
// the watch timer changes the resource and the update arrives on the
// session's GET stream.
func TestWatchedResourceReachesSubscriber(t *testing.T) {
	base := server(t, "--answers", "auto", "--watch-interval", "20ms")
	resp, _ := post(t, base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"go-test","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	post(t, base, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: status %d", stream.StatusCode)
	}
	if _, sub := post(t, base, session, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`); !strings.Contains(string(sub), `"result":{}`) {
		t.Fatalf("subscribe answered %s", sub)
	}
	readEvents(t, stream.Body, func(data string) bool {
		return strings.Contains(data, `"method":"notifications/resources/updated"`) &&
			strings.Contains(data, `"uri":"test://watched-resource"`)
	})
}

// TestLegacySSEEndpoint checks that /sse is served too: its first event
// names the URL to post to.
func TestLegacySSEEndpoint(t *testing.T) {
	base := server(t, "--watch-interval", "0")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first event, field by field.
	fields := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" && len(fields) > 0 {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && name != "" {
			fields[name] = strings.TrimPrefix(value, " ")
		}
	}
	if fields["event"] != "endpoint" || !strings.HasPrefix(fields["data"], base+"/sse/message?session_id=") {
		t.Errorf("first event %q, want the endpoint event naming %s/sse/message", fields, base)
	}
}
