package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

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
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("flowyprompt.presence", []byte(`{"replica":"intruder"}`)); err != nil {
		t.Fatal(err)
	}
	s.await(t, refused, "the stranger's heartbeat to be refused")
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
