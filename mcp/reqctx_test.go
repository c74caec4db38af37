package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestRequestContext: a handler's context is the standard library's, so
// what a handler derives from it behaves as anywhere else. Derived
// contexts cost no goroutine of their own (a context that did not
// implement the runtime's cancellation hooks would cost one each);
// context.AfterFunc runs when the request ends; context.Cause says why it
// ended, whether the client cancelled it, its deadline passed, or its
// session ended.
func TestRequestContext(t *testing.T) {
	type seen struct {
		goroutines int   // more goroutines while 100 derived contexts wait
		afterFunc  bool  // context.AfterFunc ran once the request ended
		cause      error // context.Cause once the request ended
	}
	const children = 100
	run := func(ctx context.Context, ready chan<- struct{}, out chan<- seen) {
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		for range children {
			c, cancel := context.WithTimeout(ctx, time.Hour)
			cancels = append(cancels, cancel)
			go func() { <-c.Done() }() // one waiter each, counted below
		}
		grown := runtime.NumGoroutine() - before - children
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		close(ready)
		<-ctx.Done()
		var s seen
		s.goroutines = grown
		select {
		case <-ran:
			s.afterFunc = true
		case <-time.After(mcptest.Wait):
		}
		s.cause = context.Cause(ctx)
		for _, cancel := range cancels {
			cancel()
		}
		out <- s
	}
	tests := []struct {
		name      string
		opts      mcp.EngineOptions
		end       func(c *mcptest.Client)
		wantCause error
	}{
		{name: "cancelled by the client", end: func(c *mcptest.Client) {
			c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		}, wantCause: mcp.ErrCancelledByClient},
		{name: "its deadline passed", opts: mcp.EngineOptions{RequestTimeout: 50 * time.Millisecond},
			wantCause: context.DeadlineExceeded},
		{name: "its session ended", end: func(c *mcptest.Client) { c.S.Close() }, wantCause: mcp.ErrSessionClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready, out := make(chan struct{}), make(chan seen, 1)
			srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"}, Methods: map[string]mcp.Handler{
				"test/derive": func(ctx context.Context, _ *mcp.Request) (any, error) {
					run(ctx, ready, out)
					return nil, ctx.Err()
				},
			}}
			e := mcp.NewEngine(srv, tc.opts)
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			c := mcptest.Connect(t, e)
			c.Initialize(t, mcp.LatestVersion)
			c.Send(`{"jsonrpc":"2.0","id":1,"method":"test/derive"}`)
			select {
			case <-ready:
			case <-time.After(mcptest.Wait):
				t.Fatal("the handler never started")
			}
			if tc.end != nil {
				tc.end(c)
			}
			var got seen
			select {
			case got = <-out:
			case <-time.After(mcptest.Wait):
				t.Fatal("the request's context never ended")
			}
			if got.goroutines > 2 {
				t.Errorf("%d derived contexts cost %d goroutines, want none", children, got.goroutines)
			}
			if !got.afterFunc {
				t.Error("context.AfterFunc did not run when the request ended")
			}
			if !errors.Is(got.cause, tc.wantCause) {
				t.Errorf("context.Cause = %v, want %v", got.cause, tc.wantCause)
			}
		})
	}
}

// TestRequestDoneEndsItsContext: what a handler started under its
// request's context is stopped once the handler has returned.
func TestRequestDoneEndsItsContext(t *testing.T) {
	leaked := make(chan context.Context, 1)
	srv := &mcp.Server{Info: mcp.Implementation{Name: "t", Version: "0"}, Methods: map[string]mcp.Handler{
		"test/leak": func(ctx context.Context, _ *mcp.Request) (any, error) {
			leaked <- ctx
			return json.RawMessage(`{}`), nil
		},
	}}
	e := mcp.NewEngine(srv, mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	if m := c.Request(t, 1, "test/leak", nil); m.Error != nil {
		t.Fatalf("%s", m.Raw)
	}
	ctx := <-leaked
	select {
	case <-ctx.Done():
	case <-time.After(mcptest.Wait):
		t.Fatal("the context of a finished request is still live")
	}
	if ctx.Err() == nil || errors.Is(context.Cause(ctx), mcp.ErrCancelledByClient) {
		t.Errorf("Err %v, Cause %v: want cancelled, and not by the client", ctx.Err(), context.Cause(ctx))
	}
}
