package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// ackRoute is a subscription's stream whose client, as soon as it is
// handed the acknowledgement, changes the prompt list: the change is
// announced while the subscription's goroutine has just pushed the
// acknowledgement, the moment a client that read it could act.
type ackRoute struct {
	e *mcp.Engine

	mu      sync.Mutex
	methods []string
	changed chan struct{}
}

func (rt *ackRoute) Push(m mcp.Outgoing) bool {
	var method string
	for _, name := range []string{mcp.NotificationSubscriptionsAcknowledged, mcp.NotificationPromptsListChanged} {
		if strings.Contains(string(m.Data), `"method":"`+name+`"`) {
			method = name
		}
	}
	rt.mu.Lock()
	rt.methods = append(rt.methods, method)
	rt.mu.Unlock()
	switch method {
	case mcp.NotificationSubscriptionsAcknowledged:
		// Push must not block, and the engine may hold what Notify needs:
		// give the change a moment to go out, no more.
		done := make(chan struct{})
		go func() {
			rt.e.Notify(mcp.NotificationPromptsListChanged, nil)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(100 * time.Millisecond):
		}
	case mcp.NotificationPromptsListChanged:
		close(rt.changed)
	}
	return true
}

func (rt *ackRoute) Resumable() bool { return false }

// TestListenHearsChangesAfterItsAcknowledgement: a change announced after
// the acknowledgement was handed to the stream reaches the subscription,
// after the acknowledgement.
func TestListenHearsChangesAfterItsAcknowledgement(t *testing.T) {
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Prompts: fakePrompts{n: 1}}, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	in, err := mcp.ParseInbound([]byte(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"promptsListChanged":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	rt := &ackRoute{e: e, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		x.Run(ctx, rt)
		close(ran)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	select {
	case <-rt.changed:
	case <-time.After(mcptest.Wait):
		t.Fatal("the change announced after the acknowledgement never reached the subscription")
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if diff := cmp.Diff([]string{mcp.NotificationSubscriptionsAcknowledged, mcp.NotificationPromptsListChanged}, rt.methods); diff != "" {
		t.Errorf("the stream's messages (-want +got):\n%s", diff)
	}
}
