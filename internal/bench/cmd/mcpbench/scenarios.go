package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/bench"
	"github.com/flowyprompt/flowyprompt/internal/bench/loadgen"
)

// kind is how a scenario drives a server.
type kind int

const (
	kindStdio kind = iota
	kindSSE
	kindStreamable
	// kindStateless is Streamable HTTP at protocol 2026-07-28: no
	// initialize, no session, each POST on its own; the peers run their
	// stateless modes.
	kindStateless
	kindIdleSSE
	kindIdleStreamable
)

// scenario is one row group of the report.
type scenario struct {
	id    string
	title string
	kind  kind
	tools bool // tools/call of the render tool instead of prompts/get
	// stdio: requests kept in flight; sse/http: sessions (clients).
	concurrency int
	// requests: stdio, in total; sse/http, per session. idle: sessions.
	requests int
	warmup   int
	// latency is the percentile the issue asks for: "p50" or "p99".
	latency string
	// note says, in the report, how the scenario drives the servers when
	// the title cannot.
	note string
	// againstBest: the target is set against the better of the peers,
	// mcp-go or go-sdk, so the report compares flowyprompt with it too.
	againstBest bool
}

// scenarios are the seven, and the stateless one asked for since,
// sized like http-get-50. Request counts are sized so the fastest
// server's run lasts about a second (CPU time comes in 10 ms ticks, so
// shorter runs make CPU per request coarse) and five repetitions of all of
// them, on three servers (four for the tool one), take about six minutes
// on a quiet 2-core machine, and about eight with the stateless one (go-sdk
// makes a session per request there, at a few thousand a second); with
// flowyprompt-quiet, a fourth server (fifth), about eleven. scale
// multiplies the request counts.
func scenarios(scale float64) []scenario {
	n := func(v int) int { return max(1, int(math.Round(float64(v)*scale))) }
	return []scenario{
		{id: "stdio-get-1", title: "stdio prompts/get, 1 in flight", kind: kindStdio, concurrency: 1, requests: n(40000), warmup: n(2000), latency: "p50"},
		{id: "stdio-get-32", title: "stdio prompts/get, 32 in flight", kind: kindStdio, concurrency: 32, requests: n(100000), warmup: n(5000), latency: "p50"},
		{id: "stdio-tool-32", title: "stdio tools/call render, 32 in flight", kind: kindStdio, tools: true, concurrency: 32, requests: n(60000), warmup: n(5000), latency: "p50"},
		{id: "sse-get-50", title: "SSE prompts/get, 50 sessions", kind: kindSSE, concurrency: 50, requests: n(600), warmup: n(20), latency: "p99"},
		{id: "http-get-50", title: "Streamable HTTP prompts/get, 50 clients", kind: kindStreamable, concurrency: 50, requests: n(600), warmup: n(20), latency: "p99"},
		{id: "http-stateless-get-50", title: "Streamable HTTP prompts/get, 50 stateless clients (2026-07-28)", kind: kindStateless, concurrency: 50, requests: n(600), warmup: n(20), latency: "p99",
			againstBest: true, note: "every request at protocol " + loadgen.StatelessProtocol + ", with no initialize and no session: each POST carries MCP-Protocol-Version, Mcp-Method and Mcp-Name headers and the protocol version, client and capabilities in params._meta, and every result must say \"resultType\":\"complete\"; " +
				"go-sdk runs StreamableHTTPOptions{Stateless: true} and mcp-go server.WithStateLess(true), the modes in which they serve that revision; flowyprompt gets the same requests on its one /mcp endpoint"},
		{id: "sse-idle-1000", title: "memory per idle SSE session (1,000 open)", kind: kindIdleSSE, concurrency: 10, requests: 1000},
		{id: "http-idle-1000", title: "memory per idle /mcp session (1,000 open)", kind: kindIdleStreamable, concurrency: 10, requests: 1000},
	}
}

func (s scenario) idle() bool { return s.kind == kindIdleSSE || s.kind == kindIdleStreamable }
func (s scenario) transport() string {
	switch s.kind {
	case kindSSE, kindIdleSSE:
		return "sse"
	case kindStreamable, kindIdleStreamable:
		return "http"
	case kindStateless:
		return transportStateless
	}
	return "stdio"
}

// transportStateless is Streamable HTTP served statelessly, as a server's
// listen function is asked for it.
const transportStateless = "http-stateless"

// path is the endpoint the scenario's transport is served at.
func (s scenario) path() string {
	if s.transport() == "sse" {
		return "/sse"
	}
	return "/mcp"
}

// params returns the request method and params for srv.
func (s scenario) params(srv *server) (string, json.RawMessage, error) {
	if s.tools {
		p, err := json.Marshal(map[string]any{"name": srv.tool, "arguments": map[string]any{"name": bench.PromptName, "arguments": bench.Arguments}})
		return "tools/call", p, err
	}
	p, err := json.Marshal(map[string]any{"name": bench.PromptName, "arguments": bench.Arguments})
	return "prompts/get", p, err
}

// expect is text every good response contains: an argument value, so a
// response that did not render the prompt is counted as an error.
var expect = []byte(bench.Arguments["audience"])

// result is one measured run: a scenario on a server in one repetition.
type result struct {
	Rep      int                `json:"rep"`
	Scenario string             `json:"scenario"`
	Server   string             `json:"server"`
	Metrics  map[string]float64 `json:"metrics,omitempty"`
	Error    string             `json:"error,omitempty"`
	// Skipped says why the run did not happen (a transport the server
	// does not have); such runs are reported, not counted as failures.
	Skipped string    `json:"skipped,omitempty"`
	Start   time.Time `json:"start"`
	Wall    float64   `json:"wall_s"` // the whole run, start to stop
}

// Metric names. Latencies in microseconds, memory in KiB.
const (
	mRPS          = "rps"
	mP50          = "p50_us"
	mP99          = "p99_us"
	mCPUPerReq    = "cpu_us_per_req"
	mCliCPUPerReq = "client_cpu_us_per_req"
	mPeakRSS      = "peak_rss_kb"
	mErrors       = "errors"
	mRequests     = "requests"
	mPerSession   = "kb_per_session"
	mOpenRate     = "opens_per_s"
	mVerified     = "verified"
	mRSSBefore    = "rss_before_kb"
	mRSSAfter     = "rss_after_kb"
)

// runner runs scenarios against servers.
type runner struct {
	// serverWait bounds how long an HTTP server may take to listen.
	serverWait time.Duration
	// settle is the pause before and after opening idle sessions.
	settle time.Duration
	// unavailable remembers servers that lack a transport, so they are
	// tried once, not once per repetition.
	unavailable map[string]string
}

// errUnavailable marks a run skipped because the server lacks the
// transport.
var errUnavailable = errors.New("transport not available")

func (r *runner) run(ctx context.Context, sc scenario, srv *server) (map[string]float64, error) {
	method, params, err := sc.params(srv)
	if err != nil {
		return nil, err
	}
	work := loadgen.Work{Method: method, Params: params, Requests: sc.requests, Warmup: sc.warmup, Expect: expect}
	if sc.kind == kindStdio {
		st, err := loadgen.Stdio(ctx, loadgen.StdioConfig{Command: srv.stdio(), Work: work, Inflight: sc.concurrency})
		if err != nil {
			return nil, err
		}
		return statsMetrics(st), nil
	}

	key := srv.name + "/" + sc.transport()
	if why, ok := r.unavailable[key]; ok {
		return nil, fmt.Errorf("%w: %s", errUnavailable, why)
	}
	addr, err := loadgen.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := loadgen.StartProcess(ctx, srv.listen(sc.transport(), addr), addr, r.serverWait)
	if errors.Is(err, loadgen.ErrExited) {
		r.unavailable[key] = err.Error()
		return nil, fmt.Errorf("%w: %s", errUnavailable, err.Error())
	}
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	url := "http://" + addr + sc.path()

	switch sc.kind {
	case kindSSE:
		st, err := loadgen.SSE(ctx, loadgen.SSEConfig{URL: url, Work: work, Sessions: sc.concurrency, PID: p.PID()})
		if err != nil {
			return nil, withOutput(err, p)
		}
		return statsMetrics(st), nil
	case kindStreamable:
		st, err := loadgen.Streamable(ctx, loadgen.StreamableConfig{URL: url, Work: work, Clients: sc.concurrency, PID: p.PID()})
		if err != nil {
			return nil, withOutput(err, p)
		}
		return statsMetrics(st), nil
	case kindStateless:
		st, err := loadgen.Stateless(ctx, loadgen.StatelessConfig{URL: url, Work: work, Clients: sc.concurrency, PID: p.PID()})
		if err != nil {
			return nil, withOutput(err, p)
		}
		return statsMetrics(st), nil
	default:
		// Let the server finish starting (caches, goroutines) so only
		// the sessions are weighed.
		select {
		case <-time.After(r.settle / 2):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		st, err := loadgen.Idle(ctx, loadgen.IdleConfig{
			Transport: sc.transport(), URL: url, Sessions: sc.requests, Parallel: sc.concurrency,
			Settle: r.settle, PID: p.PID(), Verify: true,
		})
		if err != nil {
			return nil, withOutput(err, p)
		}
		if st.Verified != st.Sessions {
			return nil, fmt.Errorf("only %d of %d idle sessions answered a ping afterwards", st.Verified, st.Sessions)
		}
		return map[string]float64{
			mPerSession: st.PerSession() / 1024,
			mOpenRate:   float64(st.Sessions) / st.OpenElapsed.Seconds(),
			mVerified:   float64(st.Verified),
			mRSSBefore:  float64(st.RSSBefore >> 10),
			mRSSAfter:   float64(st.RSSAfter >> 10),
			mPeakRSS:    float64(st.PeakRSS >> 10),
		}, nil
	}
}

// withOutput adds the server's last output to a failed run's error.
func withOutput(err error, p *loadgen.Process) error {
	if out := p.Output(); out != "" {
		if len(out) > 600 {
			out = "…" + out[len(out)-600:]
		}
		return fmt.Errorf("%w (server output: %s)", err, out)
	}
	return err
}

func statsMetrics(st loadgen.Stats) map[string]float64 {
	m := map[string]float64{
		mRPS:      st.RPS,
		mP50:      float64(st.P50.Nanoseconds()) / 1e3,
		mP99:      float64(st.P99.Nanoseconds()) / 1e3,
		mErrors:   float64(st.Errors),
		mRequests: float64(st.Requests),
		mPeakRSS:  float64(st.Server.PeakRSS >> 10),
	}
	if st.Requests > 0 {
		m[mCPUPerReq] = float64(st.Server.CPU.Nanoseconds()) / 1e3 / float64(st.Requests)
		m[mCliCPUPerReq] = float64(st.Server.ClientCPU.Nanoseconds()) / 1e3 / float64(st.Requests)
	}
	return m
}
