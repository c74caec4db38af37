package main

// The caps per client and the reclaiming of idle sessions, through the
// built binary: one client that fills the server with sessions it does not
// use must not lock everyone else out. The clients are told apart by their
// source address, 127.0.0.1 and 127.0.0.2 (Linux routes all of
// 127.0.0.0/8 to loopback).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// startHTTPArgs is startHTTP with extra serve flags.
func startHTTPArgs(t *testing.T, args ...string) *httpServer {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := append(append([]string{"env", "-i"}, serverEnv(t)...), binary(t), "serve", "--transport", "http", "--addr", addr)
	p, err := startProcess(append(cmd, args...), addr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &httpServer{process: p, addr: addr}
}

// clientFrom is an HTTP client whose connections leave from source, one
// connection per request.
func clientFrom(source string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
}

// initializeFrom posts initialize to /mcp with c and returns the status and
// the error's data code, if any.
func (s *httpServer) initializeFrom(t *testing.T, c *http.Client) (status int, code string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(initializeMsg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := c.Do(req)
	if err != nil {
		s.fatalf(t, "POST /mcp initialize: %v", err)
	}
	defer res.Body.Close()
	var answer errorBody
	_ = json.NewDecoder(res.Body).Decode(&answer)
	if res.StatusCode == http.StatusOK && res.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize answered 200 without a session id")
	}
	return res.StatusCode, answer.Error.Data.Code
}

// sseEndpointFrom opens GET /sse with c and reads its endpoint event.
func (s *httpServer) sseEndpointFrom(t *testing.T, c *http.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		s.fatalf(t, "GET /sse: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /sse: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == "event: endpoint" || strings.Contains(sc.Text(), "/sse/message?session_id=") {
			return
		}
	}
	t.Fatalf("GET /sse: the stream ended before its endpoint event (%v)", sc.Err())
}

// TestBinaryOneClientCannotLockOthersOut is the trial of issue 24's
// finding 4: with --max-sessions 100, one client opens 100 sessions at
// once and leaves them idle; another client's initialize and GET /sse
// still get in, in the place of idle sessions, where they used to get 503
// until the idle expiry, 30 minutes later.
func TestBinaryOneClientCannotLockOthersOut(t *testing.T) {
	s := startHTTPArgs(t, "--max-sessions", "100")
	hog, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	var wg sync.WaitGroup
	statuses := make([]int, 100)
	for i := range statuses {
		wg.Add(1)
		go func() { defer wg.Done(); statuses[i], _ = s.initializeFrom(t, hog) }()
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("the first client's session %d: %d", i, st)
		}
	}
	if n := s.sessions(t); n != 100 {
		t.Fatalf("/healthz counts %v sessions, want the cap, 100", n)
	}
	if st, code := s.initializeFrom(t, other); st != http.StatusOK {
		t.Fatalf("another client's initialize with the server full of idle sessions: %d %s, want 200", st, code)
	}
	s.sseEndpointFrom(t, other)
	if n := s.sessions(t); n > 100 {
		t.Fatalf("/healthz counts %v sessions, over the cap of 100", n)
	}
	s.requireRunning(t, "after the trial")
}

// TestBinarySessionsPerClient: a client at --max-sessions-per-client gets
// 429 naming the limit; another client still gets in.
func TestBinarySessionsPerClient(t *testing.T) {
	const perClient = 5
	s := startHTTPArgs(t, "--max-sessions-per-client", fmt.Sprint(perClient))
	hog, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	for i := range perClient {
		if st, code := s.initializeFrom(t, hog); st != http.StatusOK {
			t.Fatalf("session %d of %d: %d %s", i+1, perClient, st, code)
		}
	}
	if st, code := s.initializeFrom(t, hog); st != http.StatusTooManyRequests || code != "CLIENT_LIMIT_REACHED" {
		t.Fatalf("one session over the client's cap: %d %s, want 429 CLIENT_LIMIT_REACHED", st, code)
	}
	if st, code := s.initializeFrom(t, other); st != http.StatusOK {
		t.Fatalf("another client: %d %s", st, code)
	}
}
