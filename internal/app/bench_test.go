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
	// keep, set while no request is in flight, makes the sink keep a copy
	// of each response in last, read after its signal.
	keep bool
	last []byte
}

func (c *countSink) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		if m.Kind == mcp.KindResponse {
			if bytes.Contains(m.Data, []byte(`"error":{`)) || bytes.Contains(m.Data, []byte(`"isError":true`)) {
				c.errors.Add(1)
			}
			if c.keep {
				c.last = bytes.Clone(m.Data)
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
	s, sink, lib := dirSession(b, benchTemplates, obs)
	// The sink counts error responses too: without the template the
	// benchmarks would time "prompt not found".
	if _, ok := lib.Catalog().Lookup(benchPrompt); !ok {
		b.Fatalf("%s not in %s", benchPrompt, benchTemplates)
	}
	return s, sink
}

// dirSession is an initialized session of an engine over the templates of
// dir, with obs (nil: none) as the engine's hook.
func dirSession(b *testing.B, dir string, obs mcp.Observer) (*mcp.Session, *countSink, *templates.Library) {
	lib := templates.NewLibrary(folder.New(dir, templates.BuildOptions{}), slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	e := mcp.NewEngine(app.New(app.Options{Library: lib}).Server(), mcp.EngineOptions{Observer: obs})
	b.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	sink := &countSink{responses: make(chan struct{}, 1024)}
	s, err := e.NewSession(context.Background(), sink, 0)
	if err != nil {
		b.Fatal(err)
	}
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`), nil)
	<-sink.responses
	b.Cleanup(func() {
		if n := sink.errors.Load(); n > 0 {
			b.Fatalf("%d of the responses were errors", n)
		}
	})
	return s, sink, lib
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
	benchSession(b, s, sink, method, params, inFlight)
}

func benchSession(b *testing.B, s *mcp.Session, sink *countSink, method string, params any, inFlight int) {
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
		s.Deliver(frame(sent), nil)
	}
	for i := 0; i < b.N; i++ {
		<-sink.responses
		if sent < b.N {
			s.Deliver(frame(sent), nil)
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

// BenchmarkFlowNextStep is one flowyprompt_next_flow_step of the
// support_reply flow (testdata/flowlib): open the sealed handle, check the
// flow's versions, render the next step, seal the new handle.
func BenchmarkFlowNextStep(b *testing.B) {
	s, sink, lib := dirSession(b, "testdata/flowlib", nil)
	if len(lib.Catalog().Flows()) != 1 {
		b.Fatalf("testdata/flowlib has %d valid flows, want 1", len(lib.Catalog().Flows()))
	}
	// The first step's handle, from a start_flow in the same session.
	sink.keep = true
	s.Deliver([]byte(`{"jsonrpc":"2.0","id":"start","method":"tools/call","params":{"name":"flowyprompt_start_flow",`+
		`"arguments":{"name":"support_reply","arguments":{"ticket":"The export button does nothing."}}}}`), nil)
	<-sink.responses
	sink.keep = false
	var res struct {
		Result struct {
			StructuredContent struct {
				Handle string `json:"handle"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sink.last, &res); err != nil || res.Result.StructuredContent.Handle == "" {
		b.Fatalf("start_flow gave no handle (%v): %s", err, sink.last)
	}
	next := map[string]any{"name": "flowyprompt_next_flow_step",
		"arguments": map[string]any{"handle": res.Result.StructuredContent.Handle, "output": "bug"}}
	benchSession(b, s, sink, "tools/call", next, 1)
	// After the timed loop: ResetTimer drops metrics reported before it.
	b.ReportMetric(float64(len(res.Result.StructuredContent.Handle)), "handle-bytes")
}
