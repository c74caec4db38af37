package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

var objectSchema = `{"type":"object"}`

type whoKey struct{}

func who(ctx context.Context) string { s, _ := ctx.Value(whoKey{}).(string); return s }

func withWho(name string) context.Context {
	return context.WithValue(context.Background(), whoKey{}, name)
}

// streamRoute is a subscriptions/listen stream: the methods pushed to it,
// in order, each also sent on got.
type streamRoute struct {
	mu      sync.Mutex
	methods []string
	got     chan string
}

func (rt *streamRoute) Push(m mcp.Outgoing) bool {
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(m.Data, &msg)
	rt.mu.Lock()
	rt.methods = append(rt.methods, msg.Method)
	rt.mu.Unlock()
	rt.got <- msg.Method
	return true
}

func (rt *streamRoute) Resumable() bool { return false }

// await waits for method on the stream, and returns what came before it.
func (rt *streamRoute) await(t *testing.T, method string) []string {
	t.Helper()
	for {
		select {
		case m := <-rt.got:
			if m == method {
				rt.mu.Lock()
				defer rt.mu.Unlock()
				return append([]string(nil), rt.methods[:len(rt.methods)-1]...)
			}
		case <-time.After(mcptest.Wait):
			t.Fatalf("no %s on the stream", method)
		}
	}
}

// listenAs opens a subscriptions/listen stream for the list changes, run
// with ctx's values, and waits for its acknowledgement.
func listenAs(t *testing.T, e *mcp.Engine, ctx context.Context) *streamRoute {
	t.Helper()
	in, err := mcp.ParseInbound([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"promptsListChanged":true,"toolsListChanged":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	rt := &streamRoute{got: make(chan string, 16)}
	ctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		x.Run(ctx, rt)
		close(ran)
	}()
	t.Cleanup(func() {
		cancel()
		<-ran
	})
	rt.await(t, mcp.NotificationSubscriptionsAcknowledged)
	return rt
}

// TestNotifyWhere: a notification with an audience reaches the sessions
// whose opener and the streams whose request it picks, and no others; the
// notification everyone gets after it proves the absence.
func TestNotifyWhere(t *testing.T) {
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Prompts: fakePrompts{n: 1}, Tools: schemaTools{schema: &objectSchema}}, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	sessions := map[string]*mcptest.Client{}
	streams := map[string]*streamRoute{}
	for _, name := range []string{"ada", "bob"} {
		sessions[name] = mcptest.ConnectAs(t, e, withWho(name))
		sessions[name].Initialize(t, mcp.LatestVersion)
		streams[name] = listenAs(t, e, withWho(name))
	}
	var mu sync.Mutex
	asked := map[string]bool{} // "who session" or "who stream"
	onlyAda := func(ctx context.Context, r *mcp.Request) bool {
		kind := " session"
		if r != nil && r.Method == mcp.MethodSubscriptionsListen {
			kind = " stream"
		}
		mu.Lock()
		asked[who(ctx)+kind] = true
		mu.Unlock()
		return who(ctx) == "ada"
	}
	e.NotifyWhere(mcp.NotificationPromptsListChanged, nil, onlyAda)
	e.Log(mcp.LevelWarning, "t", "to everyone") // sessions
	e.Notify(mcp.NotificationToolsListChanged, nil)

	for name, c := range sessions {
		c.Notification(t, mcp.NotificationToolsListChanged)
		got := false
		for _, m := range c.All() {
			got = got || m.Method == mcp.NotificationPromptsListChanged
		}
		// Everything sent before the later notification has arrived.
		if want := name == "ada"; got != want {
			t.Errorf("session of %s told prompts/list_changed: %v, want %v", name, got, want)
		}
	}
	for name, rt := range streams {
		before := rt.await(t, mcp.NotificationToolsListChanged)
		got := strings.Contains(strings.Join(before, " "), mcp.NotificationPromptsListChanged)
		if want := name == "ada"; got != want {
			t.Errorf("stream of %s told prompts/list_changed: %v (%v), want %v", name, got, before, want)
		}
	}
	// Asked about each session with its opener's values and no request,
	// about each stream with its request's values and the request.
	want := map[string]bool{"ada session": true, "bob session": true, "ada stream": true, "bob stream": true}
	mu.Lock()
	defer mu.Unlock()
	if !maps.Equal(asked, want) {
		t.Errorf("the audience was asked about %v, want %v", asked, want)
	}
}

// TestLogWhere: a log message with an audience reaches the sessions it
// picks.
func TestLogWhere(t *testing.T) {
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Prompts: fakePrompts{n: 1}}, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	ada, bob := mcptest.ConnectAs(t, e, withWho("ada")), mcptest.ConnectAs(t, e, withWho("bob"))
	for _, c := range []*mcptest.Client{ada, bob} {
		c.Initialize(t, mcp.LatestVersion)
	}
	e.LogWhere(mcp.LevelWarning, "t", "for ada", func(ctx context.Context, _ *mcp.Request) bool { return who(ctx) == "ada" })
	e.Log(mcp.LevelWarning, "t", "for all")
	for name, c := range map[string]*mcptest.Client{"ada": ada, "bob": bob} {
		var data []string
		for {
			m := c.Notification(t, "notifications/message")
			var p struct {
				Data string `json:"data"`
			}
			_ = json.Unmarshal(m.Params, &p)
			data = append(data, p.Data)
			if p.Data == "for all" {
				break
			}
		}
		want := "for all"
		if name == "ada" {
			want = "for ada for all"
		}
		if got := strings.Join(data, " "); got != want {
			t.Errorf("%s was told %q, want %q", name, got, want)
		}
	}
}

// TestDeliverInboundContext: a request delivered with DeliverInbound runs
// with the values of the context it came with (the POST's, which carry
// who sent it) before the session opener's, which fill in a key the POST
// has no value for, and not its cancellation: and Request.Meta reads its
// params' _meta.
func TestDeliverInboundContext(t *testing.T) {
	type seen struct {
		who, label string
		cancelled  bool
	}
	got := make(chan seen, 1)
	srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Prompts: fakePrompts{n: 1},
		Methods: map[string]mcp.Handler{"test/who": func(ctx context.Context, r *mcp.Request) (any, error) {
			var label string
			_ = json.Unmarshal(r.Meta("io.flowyprompt/label"), &label)
			got <- seen{who: who(ctx), label: label, cancelled: ctx.Err() != nil}
			return map[string]any{}, nil
		}}}
	e := mcp.NewEngine(srv, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	c := mcptest.ConnectAs(t, e, withWho("opener"))
	c.Initialize(t, mcp.LatestVersion)
	tests := []struct {
		name string
		from context.Context
		meta string
		want seen
	}{
		{"the poster's values", withWho("poster"), `{"io.flowyprompt/label":"beta"}`, seen{who: "poster", label: "beta"}},
		{"a cancelled POST's values, not its end", func() context.Context {
			ctx, cancel := context.WithCancel(withWho("gone"))
			cancel()
			return ctx
		}(), `{}`, seen{who: "gone"}},
		{"no values: the opener's", context.Background(), `null`, seen{who: "opener"}},
		{"a key written with escapes", withWho("poster"), `{"io.flowyprompt\/label":"esc\u0061ped"}`, seen{who: "poster", label: "escaped"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := mcp.ParseInbound([]byte(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"test/who","params":{"_meta":` + tt.meta + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			c.S.DeliverInbound(tt.from, in, nil)
			select {
			case s := <-got:
				if s != tt.want {
					t.Errorf("the handler saw %+v, want %+v", s, tt.want)
				}
			case <-time.After(mcptest.Wait):
				t.Fatal("the handler did not run")
			}
		})
	}
	// Deliver, the transports' other way in, runs with the opener's.
	c.Send(`{"jsonrpc":"2.0","id":9,"method":"test/who"}`)
	if s := <-got; s.who != "opener" {
		t.Errorf("Deliver ran with %q's values, want the opener's", s.who)
	}
}
