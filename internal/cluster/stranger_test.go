package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/internal/testfiles"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The tests of a stranger on the bus: a NATS client of the replicas'
// server that holds no state keys. Whatever it publishes, it runs nothing,
// makes no client take its answers, takes no slot and sizes nothing.

// stranger connects to the server at url with no keys.
func stranger(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// refusedAtLeast waits until n has refused want messages of each reason
// named, at least.
func refusedAtLeast(t *testing.T, n *Node, want map[string]uint64) {
	t.Helper()
	waitFor(t, "the refusals to be counted", n.changes, func() bool {
		got := n.Health().Refused
		for why, k := range want {
			if got[why] < k {
				return false
			}
		}
		return true
	})
}

// forgedSigner signs with keys no replica holds.
func forgedSigner(t *testing.T) *busAuth {
	t.Helper()
	b := busAt(t, time.Now(), otherKey)
	b.now = time.Now
	return b
}

func TestStrangerCannotRunARequest(t *testing.T) {
	ran := make(chan string, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ran <- string(body)
		w.Write([]byte("ran"))
	})
	for _, tc := range []struct{ name, body string }{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		{"tools/call in a victim's session", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"save_template","arguments":{"name":"evil"}}}`},
	} {
		body := tc.body
		t.Run(tc.name, func(t *testing.T) {
			p := newFwdPair(t, h, RouterOptions{})
			nc := stranger(t, natsURL(p.holderNode))
			answers := make(chan *nats.Msg, 16)
			inbox := nc.NewInbox()
			if _, err := nc.ChanSubscribe(inbox, answers); err != nil {
				t.Fatal(err)
			}
			head, _ := json.Marshal(wireRequest{Method: "POST", URI: "/mcp", Host: "127.0.0.1:3000", Len: len(body),
				Exchange: "e0123456789", Client: "c", Header: http.Header{"Mcp-Session-Id": {sessionID},
					"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}})
			msg := func() *nats.Msg {
				return &nats.Msg{Subject: "flowyprompt.session." + sessionID, Reply: inbox,
					Header: nats.Header{hdrRequest: {string(head)}}, Data: []byte(body)}
			}
			unsigned, forged := msg(), msg()
			forgedSigner(t).sign(forged)
			for _, m := range []*nats.Msg{unsigned, forged} {
				if err := nc.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
			}
			refusedAtLeast(t, p.holderNode, map[string]uint64{"unsigned": 1, "forged": 1})
			// A replica's request, after the stranger's: it runs, and is
			// the only one that did.
			resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{"from":"a replica"}`))
			if got := readAll(t, resp); got != "ran" {
				t.Fatalf("a replica's request: %d %q", resp.StatusCode, got)
			}
			if got := <-ran; got != `{"from":"a replica"}` {
				t.Fatalf("the handler ran %q, the stranger's request", got)
			}
			select {
			case got := <-ran:
				t.Fatalf("the handler ran %q as well", got)
			case m := <-answers:
				t.Fatalf("the stranger got an answer: %v %q", m.Header, m.Data)
			default:
			}
		})
	}
}

func TestStrangerCannotForgeAnAnswer(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"genuine":true}`))
	})
	p := newFwdPair(t, h, RouterOptions{})
	fwdNode := p.forwarder.node
	nc := stranger(t, natsURL(p.holderNode))
	forger := forgedSigner(t)
	sent := make(chan struct{})
	// The stranger reads the request's reply subject off the bus and
	// answers first: an accept, then a whole response, unsigned and
	// signed with keys of its own.
	sub, err := nc.Subscribe("flowyprompt.session.>", func(m *nats.Msg) {
		for _, sign := range []bool{false, true} {
			for _, a := range []answerFrame{
				{Seq: 0, Control: "flowyprompt.fwd.evil.x"},
				{Seq: 1, Head: &wireHead{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
					Data: []byte(`{"forged":true}`), End: endDone},
			} {
				f, _ := a.msg(m.Reply)
				if sign {
					forger.sign(f)
				}
				nc.PublishMsg(f)
			}
		}
		nc.Flush()
		close(sent)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{}`))
		got <- readAll(t, resp)
	}()
	select {
	case <-sent:
	case <-time.After(promptly):
		t.Fatal("the stranger saw no request")
	}
	refusedAtLeast(t, fwdNode, map[string]uint64{"unsigned": 2, "forged": 2})
	close(release)
	if body := <-got; body != `{"genuine":true}` {
		t.Errorf("the client got %q, want the holder's answer", body)
	}
}

// TestStrangerCannotMakeAReplicaAllocate: twenty messages of a few hundred
// bytes declaring 64 MiB each (as found on an unauthenticated bus) and a
// flood of requests cost the holder neither memory nor slots: a
// replica's request, with room for one at a time, is served after them.
func TestStrangerCannotMakeAReplicaAllocate(t *testing.T) {
	p := newFwdPair(t, echo, RouterOptions{MaxExchanges: 1, MaxBodyBytes: 128 << 20})
	nc := stranger(t, natsURL(p.holderNode))
	head, _ := json.Marshal(wireRequest{Method: "POST", URI: "/mcp", Host: "h", Len: 64 << 20, Exchange: "e0123456789", Client: "c"})
	const flood = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range flood {
		m := &nats.Msg{Subject: "flowyprompt.session." + sessionID, Reply: nc.NewInbox(),
			Header: nats.Header{hdrRequest: {string(head)}}, Data: []byte("x")}
		if i < 20 {
			forgedSigner(t).sign(m)
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	refusedAtLeast(t, p.holderNode, map[string]uint64{"forged": 20, "unsigned": flood - 20})
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("the process allocated %d MiB for %d messages declaring 64 MiB; want at most 4 MiB", grew>>20, flood)
	}
	resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{}`))
	if body := readAll(t, resp); resp.StatusCode != http.StatusCreated {
		t.Errorf("a replica's request after the flood: %d %q", resp.StatusCode, body)
	}
}

// TestStrangerCannotReplay: a replica's genuine request, read off the bus
// and published again verbatim, is refused; so is a heartbeat; the
// handler ran once.
func TestStrangerCannotReplay(t *testing.T) {
	var runs atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Write([]byte("ran"))
	})
	p := newFwdPair(t, h, RouterOptions{})
	nc := stranger(t, natsURL(p.holderNode))
	captured := make(chan *nats.Msg, 64)
	if _, err := nc.ChanSubscribe("flowyprompt.>", captured); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	resp := p.do(t, context.Background(), "POST", "/mcp", sessionID, []byte(`{"once":true}`))
	if got := readAll(t, resp); got != "ran" {
		t.Fatalf("the genuine request: %d %q", resp.StatusCode, got)
	}
	var request, heartbeat *nats.Msg
	for request == nil || heartbeat == nil {
		select {
		case m := <-captured:
			switch {
			case strings.HasPrefix(m.Subject, "flowyprompt.session."):
				request = m
			case m.Subject == "flowyprompt.presence":
				heartbeat = m
			}
		case <-time.After(promptly):
			t.Fatal("the stranger did not see the request and a heartbeat")
		}
	}
	for _, m := range []*nats.Msg{request, heartbeat} {
		if err := nc.PublishMsg(&nats.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data}); err != nil {
			t.Fatal(err)
		}
	}
	refusedAtLeast(t, p.holderNode, map[string]uint64{"replayed": 2})
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}

// TestStrangerCannotJoin: a stranger's heartbeat lists no replica.
func TestStrangerCannotJoin(t *testing.T) {
	srv := natstest.Start(t)
	logs := &testfiles.SyncBuffer{}
	n := join(t, srv.URL(), "r1", logs)
	nc := stranger(t, srv.URL())
	hb, _ := json.Marshal(heartbeat{Replica: "intruder"})
	// Counted, then logged: checked again at each heartbeat heard. The
	// stranger speaks again at each check until it is heard, since its
	// first word may reach the server before the replica's subscription.
	waitFor(t, "the refusal counted and logged", n.changes, func() bool {
		if n.Health().Refused["unsigned"] >= 1 && strings.Contains(logs.String(), "refused a message on the NATS bus") {
			return true
		}
		if err := nc.Publish("flowyprompt.presence", hb); err != nil {
			t.Fatal(err)
		}
		return false
	})
	if got := n.Health().Replicas; len(got) != 1 || got[0] != "r1" {
		t.Errorf("replicas %v, want only r1", got)
	}
	log := logs.String()
	for _, want := range []string{"refused a message on the NATS bus: unsigned", "a client without the state keys speaks on the bus",
		"subject=flowyprompt.presence"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "intruder") {
		t.Errorf("the log shows the message's data:\n%s", log)
	}
}

// TestStrangerCannotWriteTheCatalog: a value a stranger puts in the
// catalog's bucket, or a genuine one it copies under another key, reads
// as empty (with its revision, so a replica writes over it), and a watch
// passes over it.
func TestStrangerCannotWriteTheCatalog(t *testing.T) {
	srv := natstest.Start(t)
	n := joinFresh(t, srv.URL(), "r1", "flowyprompt")
	c := NewCatalog(n)
	ctx := ctxFor(t)
	if err := c.Put(ctx, "genuine", []byte(`{"commit":"good"}`)); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, c, "state")
	js, err := jetstream.New(stranger(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "flowyprompt-catalog")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := kv.Get(ctx, "genuine")
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string][]byte{"state": []byte(`{"commit":"evil"}`), "copied": stored.Value()} {
		if _, err := kv.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"state", "copied"} {
		v, rev, err := c.Get(ctx, key)
		if err != nil || v == nil || len(v) != 0 || rev == 0 {
			t.Errorf("Get %s: %q rev %d, %v; want empty, with its revision", key, v, rev, err)
		}
	}
	refusedAtLeast(t, n, map[string]uint64{"unsigned": 1, "forged": 1})
	// The watch's next value is a replica's: the stranger's never came.
	if _, ok, err := c.Update(ctx, "state", []byte(`{"commit":"next"}`), lastRev(t, c, "state")); err != nil || !ok {
		t.Fatalf("a replica's update over the stranger's value: %v %v", ok, err)
	}
	waitFor(t, "the replica's value", rec.changes, func() bool { return rec.last() == `{"commit":"next"}` })
	if got := rec.all(); len(got) != 1 {
		t.Errorf("the watch saw %q, want the replica's value alone", got)
	}
}

func lastRev(t *testing.T, c *Catalog, key string) uint64 {
	t.Helper()
	_, rev, err := c.Get(ctxFor(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// natsURL is the URL n is connected to.
func natsURL(n *Node) string { return n.Conn().ConnectedUrl() }
