package cluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/nats-io/nats-server/v2/server"
)

// testKeys are the state keys the tests' replicas share.
var testKeys = [][]byte{bytes.Repeat([]byte{0x5a}, 32)}

func join(t *testing.T, url, id string, logs *testfiles.SyncBuffer) *Node {
	t.Helper()
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n, err := Join(Options{URL: url, Replica: id, Logger: logger, Keys: testKeys})
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
		{"cert without key", Options{URL: "nats://127.0.0.1:1", Cert: "c.pem", Keys: testKeys}, "NATS_CERT and NATS_KEY"},
		{"missing creds", Options{URL: "nats://user:s3cret@127.0.0.1:1", Creds: "/nonexistent.creds", Keys: testKeys}, ""},
		{"no state keys", Options{URL: "nats://127.0.0.1:1"}, "no state keys: replicas sign every message on the bus"},
		{"a short state key", Options{URL: "nats://127.0.0.1:1", Keys: [][]byte{[]byte("short")}}, "state key 1 has 5 bytes, fewer than 32"},
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
		"nats://user:pw@host:4222":          "nats://host:4222",
		"nats://alice@host:4222":            "nats://host:4222", // a user name alone is not shown either
		"nats://tok3nSecret@127.0.0.1:4333": "nats://127.0.0.1:4333",
		"tls://tok@host":                    "tls://host",
		"nats://host:4222":                  "nats://host:4222",
		"nats://host:4222/x?token=secret":   "nats://host:4222",
		"host:4222":                         "host:4222",
		"tok@host:4222":                     "host:4222",
		"nats://u:p%zz@host":                "REDACTED", // unparsable: hidden whole
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A NATS URL's credentials never reach Health (and so /healthz) or the
// log: a token, a user and password, or a user name alone.
func TestCredentialsNotShown(t *testing.T) {
	for _, tc := range []struct {
		name, userinfo string
		set            func(*server.Options)
	}{
		{"token", "tok3nSecret", func(o *server.Options) { o.Authorization = "tok3nSecret" }},
		{"user and password", "alice:pa55word", func(o *server.Options) { o.Username, o.Password = "alice", "pa55word" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.StartWith(t, tc.set)
			plain := srv.URL()
			withCreds := strings.Replace(plain, "://", "://"+tc.userinfo+"@", 1)
			logs := &testfiles.SyncBuffer{}
			n := join(t, withCreds, "a", logs)
			waitFor(t, "connected", n.changes, func() bool { return n.Health().Connected })
			h := n.Health()
			if h.Server != plain {
				t.Errorf("health server = %q, want %q (scheme and host alone)", h.Server, plain)
			}
			user, _, _ := strings.Cut(tc.userinfo, ":")
			for where, text := range map[string]string{"health": fmt.Sprintf("%+v", h), "log": logs.String()} {
				if strings.Contains(text, user) {
					t.Errorf("%s shows %q: %s", where, user, text)
				}
			}
			if !strings.Contains(logs.String(), "joined the cluster") {
				t.Errorf("log lacks the join line: %s", logs.String())
			}
		})
	}
}

// TestWarnsOfAnOpenBus: a replica that joins a NATS server taking clients
// without credentials or without TLS says so once, with what an attacker
// on the bus could do and how to fix it, and not again when it rejoins.
func TestWarnsOfAnOpenBus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		userinfo string
		set      func(*server.Options)
		want     string
	}{
		{"no credentials, no TLS", "", nil, "reached without credentials and without TLS"},
		{"a password, no TLS", "alice:pa55word@", func(o *server.Options) { o.Username, o.Password = "alice", "pa55word" }, "reached without TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.StartWith(t, tc.set)
			logs := &testfiles.SyncBuffer{}
			n := join(t, strings.Replace(srv.URL(), "://", "://"+tc.userinfo, 1), "a", logs)
			waitFor(t, "connected", n.changes, n.Connected)
			srv.Restart()
			waitFor(t, "the link to drop", n.changes, func() bool { return strings.Contains(logs.String(), "lost the NATS link") })
			waitFor(t, "connected again", n.changes, n.Connected)
			log := logs.String()
			for _, want := range []string{tc.want, "can read every forwarded request", "cannot run requests or forge answers",
				"a NATS user of their own that alone may use the flowyprompt.> subjects", "NATS_CREDS", "tls://", "docs/scale-out.md"} {
				if !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			if k := strings.Count(log, "the cluster's NATS server is reached"); k != 1 {
				t.Errorf("warned %d times, want once:\n%s", k, log)
			}
			if strings.Contains(log, "pa55word") {
				t.Errorf("the log shows the password:\n%s", log)
			}
		})
	}
}
