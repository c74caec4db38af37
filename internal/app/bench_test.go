package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

// countSink signals each response so a benchmark can wait for it, and
// counts those that are errors: a benchmark that times errors measures
// nothing.
type countSink struct {
	responses chan struct{}
	errors    atomic.Int64
}

func (c *countSink) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if m.Kind == mcp.KindResponse {
			if bytes.Contains(m.Data, []byte(`"error":{`)) {
				c.errors.Add(1)
			}
			c.responses <- struct{}{}
		}
	}
	return nil
}
func (c *countSink) Close() {}

// benchTemplates holds a copy of the peer comparison's Bench_API_00 (2 KB
// rendered, three required arguments), so the engine's figures describe the
// same work as the harness's, without the product depending on the harness
// module (internal/bench).
const benchTemplates = "testdata/bench"

// benchPrompt and benchArguments are the template the benchmarks render and
// the values they pass, as in the peer comparison.
const benchPrompt = "Bench_API_00"

var benchArguments = map[string]string{"topic": "rate limits", "audience": "platform engineers", "tone": "direct"}

// observedSession is an initialized session of an engine over the bench
// templates, with obs (nil: none) as the engine's hook.
func observedSession(b *testing.B, obs mcp.Observer) (*mcp.Session, *countSink) {
	lib := templates.NewLibrary(folder.New(benchTemplates, templates.BuildOptions{}), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The sink counts error responses too: without the template the
	// benchmarks would time "prompt not found".
	if _, ok := lib.Catalog().Lookup(benchPrompt); !ok {
		b.Fatalf("%s not in %s", benchPrompt, benchTemplates)
	}
	e := mcp.NewEngine(app.New(app.Options{Library: lib}).Server(), mcp.EngineOptions{Observer: obs})
	b.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	sink := &countSink{responses: make(chan struct{}, 1024)}
	s, err := e.NewSession(sink, 0)
	if err != nil {
		b.Fatal(err)
	}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`), mcp.Delivery{})
	<-sink.responses
	b.Cleanup(func() {
		if n := sink.errors.Load(); n > 0 {
			b.Fatalf("%d of the responses were errors", n)
		}
	})
	return s, sink
}

// benchRequests sends b.N requests with inFlight of them outstanding at a
// time. With one, ns/op is a round trip through three goroutines (mostly
// hand-off latency); with many, the engine stays busy and ns/op is close
// to the CPU one request costs on this machine.
func benchRequests(b *testing.B, method string, params any, inFlight int) {
	benchObserved(b, nil, method, params, inFlight)
}

func benchObserved(b *testing.B, obs mcp.Observer, method string, params any, inFlight int) {
	s, sink := observedSession(b, obs)
	p, err := json.Marshal(params)
	if err != nil {
		b.Fatal(err)
	}
	// Every request has an id of its own: requests finish in any order,
	// and an id still in flight is refused.
	head := []byte(`{"jsonrpc":"2.0","method":` + strconv.Quote(method) + `,"params":` + string(p) + `,"id":`)
	frame := func(id int) []byte {
		return append(strconv.AppendInt(append([]byte(nil), head...), int64(id), 10), '}')
	}
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for ; sent < inFlight && sent < b.N; sent++ {
		s.Deliver(frame(sent), mcp.Delivery{})
	}
	for i := 0; i < b.N; i++ {
		<-sink.responses
		if sent < b.N {
			s.Deliver(frame(sent), mcp.Delivery{})
			sent++
		}
	}
}

var (
	promptsGet = map[string]any{"name": benchPrompt, "arguments": benchArguments}
	renderCall = map[string]any{"name": "flowyprompt_render_template",
		"arguments": map[string]any{"name": benchPrompt, "arguments": benchArguments}}
)

// BenchmarkEnginePromptsGet is one prompts/get of a 2 KB template through
// the engine: decode, dispatch, render, encode, outbox.
func BenchmarkEnginePromptsGet(b *testing.B) { benchRequests(b, "prompts/get", promptsGet, 1) }

// BenchmarkEngineToolsCallRender is one tools/call of the render tool,
// schema validation included.
func BenchmarkEngineToolsCallRender(b *testing.B) { benchRequests(b, "tools/call", renderCall, 1) }

// BenchmarkEnginePipelined keeps 32 requests in flight, as the stdio load
// scenarios do.
func BenchmarkEnginePipelined(b *testing.B) {
	b.Run("method=prompts/get", func(b *testing.B) { benchRequests(b, "prompts/get", promptsGet, 32) })
	b.Run("method=tools/call", func(b *testing.B) { benchRequests(b, "tools/call", renderCall, 32) })
}
