// Package mcptest connects an in-memory client to an mcp.Engine, for tests
// that drive the protocol without a transport: every message the session
// sends is captured in order, and responses can be awaited by id.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// Wait bounds how long a test waits for a message before failing: a guard
// against hangs, not a speed assertion.
var Wait = 10 * time.Second

// Message is one message the server sent, decoded loosely.
type Message struct {
	Raw    json.RawMessage
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *ErrorObject    `json:"error"`
}

// ErrorObject is a JSON-RPC error with our error.data.
type ErrorObject struct {
	Code    int64         `json:"code"`
	Message string        `json:"message"`
	Data    mcp.ErrorData `json:"data"`
}

// Client is an in-memory MCP client bound to one session.
type Client struct {
	S *mcp.Session

	mu    sync.Mutex
	cond  *sync.Cond
	msgs  []Message
	block chan struct{} // when non-nil, Send blocks until it is closed
}

type sink struct{ c *Client }

var _ mcp.Sink = sink{}

func (k sink) Send(msgs []mcp.Outgoing) error {
	if b := k.c.block; b != nil {
		<-b
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	for _, o := range msgs {
		if o.Data == nil {
			continue
		}
		m := Message{Raw: append(json.RawMessage(nil), o.Data...)}
		if err := json.Unmarshal(o.Data, &m); err != nil {
			panic(fmt.Sprintf("server sent invalid JSON %q: %v", o.Data, err))
		}
		k.c.msgs = append(k.c.msgs, m)
	}
	k.c.cond.Broadcast()
	return nil
}

// Close needs nothing: a test sees a closed session through Client.S.Done.
func (sink) Close() {}

// Engine returns mcp.NewEngine(srv, opts), shut down when the test ends
// (within shutdownBound: a guard against a hang).
func Engine(t testing.TB, srv *mcp.Server, opts mcp.EngineOptions) *mcp.Engine {
	e := mcp.NewEngine(srv, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return e
}

// shutdownBound bounds an Engine's shutdown at the test's end.
const shutdownBound = 10 * time.Second

// Connect opens a session on e. The session is closed when the test ends.
func Connect(t testing.TB, e *mcp.Engine) *Client {
	return connect(t, e, nil)
}

// ConnectBlocked opens a session whose transport does not write until
// release is closed: a client that stopped reading.
func ConnectBlocked(t testing.TB, e *mcp.Engine, release chan struct{}) *Client {
	return connect(t, e, release)
}

// ConnectAs opens a session on e as opener's caller: its requests run
// with opener's values (auth.MemberOf finds the member it carries), as
// those of a session an HTTP request opened do.
func ConnectAs(t testing.TB, e *mcp.Engine, opener context.Context) *Client {
	return connectFrom(t, e, opener, nil)
}

func connect(t testing.TB, e *mcp.Engine, block chan struct{}) *Client {
	return connectFrom(t, e, context.Background(), block)
}

func connectFrom(t testing.TB, e *mcp.Engine, opener context.Context, block chan struct{}) *Client {
	c := &Client{block: block}
	c.cond = sync.NewCond(&c.mu)
	s, err := e.NewSession(opener, sink{c}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.S = s
	t.Cleanup(c.S.Close)
	return c
}

// Send delivers one raw frame.
func (c *Client) Send(raw string) { c.S.Deliver([]byte(raw), nil) }

// Request sends a request with the given id (any JSON value) and returns
// its response, keeping other messages for Next.
func (c *Client) Request(t testing.TB, id any, method string, params any) Message {
	t.Helper()
	b, idRaw := request(t, id, method, params)
	c.S.Deliver(b, nil)
	return c.Response(t, idRaw)
}

// request is the frame of a request (params left out when nil) and its
// id as JSON.
func request(t testing.TB, id any, method string, params any) (frame []byte, idRaw json.RawMessage) {
	t.Helper()
	idRaw, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": idRaw, "method": method}
	if params != nil {
		msg["params"] = params
	}
	frame, err = json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return frame, idRaw
}

// RequestFrom is Request for a request that arrived as an HTTP request
// with context from, as the HTTP transports deliver one
// (Session.DeliverInbound).
func (c *Client) RequestFrom(t testing.TB, from context.Context, id any, method string, params any) Message {
	t.Helper()
	b, idRaw := request(t, id, method, params)
	in, err := mcp.ParseInbound(b)
	if err != nil {
		t.Fatal(err)
	}
	c.S.DeliverInbound(from, in, nil)
	return c.Response(t, idRaw)
}

// Notify sends a notification.
func (c *Client) Notify(t testing.TB, method string, params any) {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	c.S.Deliver(b, nil)
}

// Initialize performs the handshake with the given protocol version.
func (c *Client) Initialize(t testing.TB, version string) Message {
	t.Helper()
	return c.InitializeWith(t, version, map[string]any{})
}

// InitializeWith performs the handshake declaring the given client
// capabilities (e.g. {"elicitation": {}}).
func (c *Client) InitializeWith(t testing.TB, version string, caps map[string]any) Message {
	t.Helper()
	m := c.Request(t, "init", "initialize", map[string]any{
		"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "mcptest", "version": "1"}})
	if m.Error != nil {
		t.Fatalf("initialize failed: %+v", m.Error)
	}
	c.Notify(t, "notifications/initialized", nil)
	return m
}

// Response waits for the response whose id equals idRaw (compared as JSON).
func (c *Client) Response(t testing.TB, idRaw json.RawMessage) Message {
	t.Helper()
	var want any
	_ = json.Unmarshal(idRaw, &want)
	m, ok := c.await(func(m Message) bool {
		if m.Method != "" || m.ID == nil {
			return false
		}
		var got any
		_ = json.Unmarshal(m.ID, &got)
		return fmt.Sprint(got) == fmt.Sprint(want) && string(m.ID[0]) == string(idRaw[0])
	})
	if !ok {
		t.Fatalf("no response with id %s within %s (got %d messages)", idRaw, Wait, c.Len())
	}
	return m
}

// Next returns the next message not yet taken.
func (c *Client) Next(t testing.TB) Message {
	t.Helper()
	m, ok := c.await(func(Message) bool { return true })
	if !ok {
		t.Fatalf("no message within %s", Wait)
	}
	return m
}

// Notification waits for the next notification with the given method.
func (c *Client) Notification(t testing.TB, method string) Message {
	t.Helper()
	m, ok := c.await(func(m Message) bool { return m.Method == method && m.ID == nil })
	if !ok {
		t.Fatalf("no %s notification within %s", method, Wait)
	}
	return m
}

// All returns the messages received so far that no Response, Next or
// Notification has taken.
func (c *Client) All() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

// Len returns the number of messages received and not yet taken.
func (c *Client) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// await waits for the first message not yet taken that matches pred, and
// takes it: it is never returned twice.
func (c *Client) await(pred func(Message) bool) (Message, bool) {
	deadline := time.Now().Add(Wait)
	timer := time.AfterFunc(Wait, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i := 0; i < len(c.msgs); i++ {
			if pred(c.msgs[i]) {
				m := c.msgs[i]
				c.msgs = append(c.msgs[:i:i], c.msgs[i+1:]...)
				return m, true
			}
		}
		if time.Now().After(deadline) {
			return Message{}, false
		}
		c.cond.Wait()
	}
}
