package cluster

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
)

func join(t *testing.T, url, id string, logs *testfiles.SyncBuffer) *Node {
	t.Helper()
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n, err := Join(Options{URL: url, Replica: id, Logger: logger})
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	t.Cleanup(n.Close)
	return n
}

// waitFor waits up to 10 s for cond, checking it again at each event:
// each close of a channel that next returns (a fresh one after each, as
// Node.changes gives).
func waitFor(t *testing.T, what string, next func() <-chan struct{}, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		// The channel is taken before cond is checked, so an event
		// between the two is not missed.
		event := next()
		if cond() {
			return
		}
		select {
		case <-event:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestReplicasSeeEachOther(t *testing.T) {
	srv := natstest.Start(t)
	a := join(t, srv.URL(), "a", nil)
	b := join(t, srv.URL(), "b", nil)
	waitFor(t, "both replicas listed by a", a.changes, func() bool {
		return slices.Equal(a.Health().Replicas, []string{"a", "b"})
	})
	h := a.Health()
	if !h.Connected || h.Replica != "a" || h.Server == "" {
		t.Errorf("health = %+v, want connected replica a with a server", h)
	}
	b.Close()
	waitFor(t, "b dropped from a's list", a.changes, func() bool {
		return slices.Equal(a.Health().Replicas, []string{"a"})
	})
}

func TestServerDownAndBack(t *testing.T) {
	srv := natstest.Start(t)
	logs := &testfiles.SyncBuffer{}
	n := join(t, srv.URL(), "a", logs)
	back := make(chan struct{}, 1)
	n.OnReconnect(func() { back <- struct{}{} })

	srv.Stop()
	waitFor(t, "the link to be reported down", n.changes, func() bool { return !n.Health().Connected })
	if !strings.Contains(logs.String(), "lost the NATS link") {
		t.Errorf("log lacks the lost-link warning:\n%s", logs)
	}
	srv.Restart()
	select {
	case <-back:
	case <-time.After(15 * time.Second):
		t.Fatal("OnReconnect not called after the server came back")
	}
	if !n.Connected() {
		t.Error("Connected() = false after the reconnect callback")
	}
}

func TestJoinBeforeTheServerIsUp(t *testing.T) {
	srv := natstest.Start(t)
	url := srv.URL()
	srv.Stop()
	n := join(t, url, "a", nil)
	if n.Connected() {
		t.Fatal("connected with the server down")
	}
	srv.Restart()
	waitFor(t, "the first connection", n.changes, n.Connected)
}

func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no url", Options{}, "no NATS URL"},
		{"bad replica", Options{URL: "nats://127.0.0.1:1", Replica: "a.b"}, "replica id"},
		{"cert without key", Options{URL: "nats://127.0.0.1:1", Cert: "c.pem"}, "NATS_CERT and NATS_KEY"},
		{"missing creds", Options{URL: "nats://user:s3cret@127.0.0.1:1", Creds: "/nonexistent.creds"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Join(tc.opts)
			if err == nil {
				n.Close()
				t.Fatal("Join succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q leaks the URL's password", err)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://user:pw@host:4222": "nats://REDACTED@host:4222",
		"tls://tok@host":           "tls://REDACTED@host",
		"nats://host:4222":         "nats://host:4222",
		"host:4222":                "host:4222",
		"nats://u:p%zz@host":       "REDACTED", // unparsable: hidden whole
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
