package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/nats-io/nats.go"
)

// clusterKeysEnv gives a replica the state keys every replica of the
// tests' clusters shares: --nats needs them.
const clusterKeysEnv = "FLOWYPROMPT_STATE_KEYS=Y2x1c3Rlci1rZXlzLW9mLXRoZS10ZXN0cy1yZXBsaWNhcw"

// TestBinarySessionsAcrossReplicas: two `serve --nats` processes behind
// no balancer at all: a session opened on one is served through the
// other, a session nobody holds is 404 on either, and the replica holding
// a session takes forwarded bodies up to its own --max-message-size.
func TestBinarySessionsAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	a := startHTTP(t, 0, "NATS_URL="+ns.URL(), clusterKeysEnv, "MCP_MAX_MESSAGE_SIZE=4096")
	b := startHTTP(t, 0, "NATS_URL="+ns.URL(), clusterKeysEnv)
	res, body := a.post(t, "/mcp", initializeMsg)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		a.fatalf(t, "initialize on a: %s %q", res.Status, body)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// Within b's cap (the default), over a's.
	large := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", 5000) + `"}}}`
	tests := []struct {
		name    string
		session string
		body    string
		want    int
		in      string
	}{
		{name: "held by a", session: id, body: list, want: http.StatusOK, in: `"tools":[`},
		{name: "held by nobody", session: strings.Repeat("0f", 16), body: list, want: http.StatusNotFound, in: "SESSION_NOT_FOUND"},
		{name: "over the holder's cap", session: id, body: large, want: http.StatusRequestEntityTooLarge,
			in: "takes forwarded bodies of at most 4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, answer := postMCP(t, b, tc.body, "Mcp-Session-Id", tc.session)
			if res.StatusCode != tc.want || !strings.Contains(answer, tc.in) {
				t.Errorf("POST /mcp on b: %s %q, want %d with %s", res.Status, answer, tc.want, tc.in)
			}
		})
	}
}

// TestBinaryRefusesAStrangerOnTheBus: a client of the replicas' NATS
// server without the state keys is refused and counted in /healthz; the
// replica warned at start that its server takes such clients.
func TestBinaryRefusesAStrangerOnTheBus(t *testing.T) {
	ns := natstest.Start(t)
	s := startHTTP(t, 0, "NATS_URL="+ns.URL(), clusterKeysEnv, "FLOWYPROMPT_REPLICA_ID=r1")
	s.joined(t)
	refused := s.expect("refused a message on the NATS bus: unsigned")
	nc, err := nats.Connect(ns.URL(), nats.NoEcho())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The stranger speaks again at each of the replica's heartbeats until
	// it is refused: its first word may reach the NATS server before the
	// replica's subscription does.
	beats := make(chan *nats.Msg, 64)
	if _, err := nc.ChanSubscribe("flowyprompt.presence", beats); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(15 * time.Second)
	for heard := false; !heard; {
		if err := nc.Publish("flowyprompt.presence", []byte(`{"replica":"intruder"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-refused:
			heard = true
		case <-beats:
		case <-s.Exited():
			t.Fatalf("the server exited (%v); its output ends:\n%s", s.ExitErr(), s.Output())
		case <-deadline:
			t.Fatalf("timed out waiting for the stranger's heartbeat to be refused; the server's output ends:\n%s", s.Output())
		}
	}
	c, _ := s.health(t)["cluster"].(map[string]any)
	counts, _ := c["refused_messages"].(map[string]any)
	if counts["unsigned"] != float64(1) || counts["forged"] != float64(0) || counts["stale"] != float64(0) || counts["replayed"] != float64(0) {
		t.Errorf("/healthz counts %v, want one unsigned", c["refused_messages"])
	}
	if replicas := fmt.Sprint(c["replicas"]); strings.Contains(replicas, "intruder") {
		t.Errorf("/healthz lists %s", replicas)
	}
	if out := s.Output(); !strings.Contains(out, "the cluster's NATS server is reached without credentials and without TLS") {
		t.Errorf("no warning of the open bus:\n%s", out)
	}
}

// TestNATSNeedsStateKeys: --nats without state keys is refused at start,
// saying why and how to make them.
func TestNATSNeedsStateKeys(t *testing.T) {
	_, stderr, code := runCLI(t, map[string]string{"NATS_URL": "nats://127.0.0.1:1"}, "", "serve", "--transport", "http", "--addr", "127.0.0.1:0")
	for _, want := range []string{"--nats needs the state keys (FLOWYPROMPT_STATE_KEYS", "sign every message", "openssl rand -base64 32"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
		}
	}
}

// startReplica is startHTTP with serve flags besides the environment.
func startReplica(t *testing.T, env []string, args ...string) *httpServer {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := append(append([]string{"env", "-i"}, serverEnv(t, env...)...), binary(t), "serve", "--transport", "http", "--addr", addr)
	p, err := startProcess(append(cmd, args...), addr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &httpServer{process: p, addr: addr}
}

// TestBinaryForwardingCountsEachClient: behind a trusted proxy, the
// replica that forwards a request names its client as its own caps do,
// by the address the proxy reports, so the holder's bound per client
// (--max-forwarded-per-client) counts each client apart: one client that
// holds its share of forwarded streams does not take a victim's, who
// reaches the same replica through the same proxy.
func TestBinaryForwardingCountsEachClient(t *testing.T) {
	ns := natstest.Start(t)
	env := []string{"NATS_URL=" + ns.URL(), clusterKeysEnv}
	a := startReplica(t, env, "--max-forwarded-per-client", "1")
	b := startReplica(t, append(env, "MCP_TRUSTED_PROXIES=127.0.0.1"))
	a.joined(t)
	b.joined(t)
	open := func() string {
		res, body := a.post(t, "/mcp", initializeMsg)
		id := res.Header.Get("Mcp-Session-Id")
		if res.StatusCode != http.StatusOK || id == "" {
			a.fatalf(t, "initialize on a: %s %q", res.Status, body)
		}
		return id
	}
	attacker, victim := open(), open()

	// The attacker's stream, forwarded through b to a, holds its one slot
	// for as long as it is open: its answer's head is a's.
	req, err := http.NewRequest(http.MethodGet, "http://"+b.addr+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", attacker)
	req.Header.Set("X-Forwarded-For", "203.0.113.1")
	stream, err := client.Do(req)
	if err != nil {
		b.fatalf(t, "GET /mcp through b: %v", err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("the attacker's stream through b: %s, want 200", stream.Status)
	}

	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	tests := []struct {
		name, session, client string
		want                  int
	}{
		{"the attacker, at its bound", attacker, "203.0.113.1", http.StatusServiceUnavailable},
		{"the victim, through the same proxy", victim, "203.0.113.2", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, answer := postMCP(t, b, list, "Mcp-Session-Id", tc.session, "X-Forwarded-For", tc.client)
			if res.StatusCode != tc.want {
				t.Errorf("POST /mcp through b: %s %q, want %d", res.Status, answer, tc.want)
			}
		})
	}
}
