package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

type benchOptions struct {
	requests int           // per run, at most
	duration time.Duration // per run, at most
	clients  int           // concurrent, one request in flight each
}

// benchResult is one run: a workload through the proxy against a cluster
// of some size.
type benchResult struct {
	Replicas  int     `json:"replicas"`
	Workload  string  `json:"workload"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	RPS       float64 `json:"rps"`
	CPUPerReq float64 `json:"cpu_us_per_request"` // the replicas' CPU, microseconds
	// HarnessCPUPerReq is this process's: the proxy, the load generator
	// and the embedded NATS server, which share the cores with the
	// replicas.
	HarnessCPUPerReq float64 `json:"harness_cpu_us_per_request"`
	P50ms            float64 `json:"p50_ms"`
	P99ms            float64 `json:"p99_ms"`
	Crossed          float64 `json:"crossed_share"` // session requests sent to a replica that does not hold the session
	FirstErr         string  `json:"first_error,omitempty"`
}

// workload is what the clients of one run ask for, and how the proxy routes it.
type workload struct {
	name   string
	modern bool // 2026-07-28 requests, no session; else a 2025 session each
	sticky bool // the proxy sends a session's requests to its replica
	min    int  // replicas needed for the run to mean something
}

var workloads = []workload{
	{name: "2026 prompts/get (stateless)", modern: true},
	{name: "2025 session prompts/get, round robin"},
	{name: "2025 session prompts/get, sticky", sticky: true, min: 2},
}

// runBench measures each workload with one replica and with three. The
// proxy and the load generator run in this process and share the machine's
// cores with the replicas, so the numbers compare cluster sizes with each
// other, not with other servers.
func runBench(ctx context.Context, cfg config, opts benchOptions, w io.Writer) error {
	if opts.clients < 1 || opts.requests < 1 || opts.duration <= 0 {
		return errors.New("-bench-clients, -bench-requests and -bench-time must be positive")
	}
	// Revalidation would add GitHub traffic to what is measured.
	cfg.cacheTTL = time.Hour
	var results []benchResult
	for _, n := range []int{1, 3} {
		cfg.replicas = n
		c, err := newCluster(cfg)
		if err != nil {
			return err
		}
		err = c.waitReady(ctx, 20*time.Second)
		for _, wl := range workloads {
			if err != nil {
				break
			}
			if n < wl.min {
				continue // one replica holds every session: sticky changes nothing
			}
			c.proxy.sticky.Store(wl.sticky)
			var r benchResult
			r, err = c.load(ctx, wl, opts)
			r.Replicas = n
			results = append(results, r)
			fmt.Fprintf(os.Stderr, "testcluster: %d replica(s), %s: %.0f req/s, %.0f µs CPU/request, %d errors\n",
				n, wl.name, r.RPS, r.CPUPerReq, r.Errors)
		}
		c.close()
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "| replicas | workload | requests | req/s | replicas' CPU per request | harness CPU per request | p50 | p99 | sent to a replica without the session | errors |\n")
	fmt.Fprintf(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		crossed := "–"
		if strings.HasPrefix(r.Workload, "2025") {
			crossed = fmt.Sprintf("%.0f%%", 100*r.Crossed)
		}
		fmt.Fprintf(w, "| %d | %s | %d | %.0f | %.0f µs | %.0f µs | %.1f ms | %.1f ms | %s | %d |\n",
			r.Replicas, r.Workload, r.Requests, r.RPS, r.CPUPerReq, r.HarnessCPUPerReq, r.P50ms, r.P99ms, crossed, r.Errors)
	}
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("print results: %w", err)
		}
	}
	for _, r := range results {
		if r.Errors > 0 {
			return fmt.Errorf("%d replica(s), %s: %d errors, first: %s", r.Replicas, r.Workload, r.Errors, r.FirstErr)
		}
	}
	return nil
}

// waitReady waits until every replica has loaded the whole library and,
// with more than one, is linked to NATS.
func (c *cluster) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var notReady error
		for _, r := range c.reps {
			status, body, err := r.health(ctx)
			if err != nil {
				notReady = err
				break
			}
			var h struct {
				Templates int `json:"templates"`
				Cluster   struct {
					Connected bool `json:"connected"`
				} `json:"cluster"`
			}
			if status != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Templates != c.cfg.templates || !h.Cluster.Connected {
				notReady = fmt.Errorf("replica %s not ready: %d %s", r.id, status, body)
				break
			}
		}
		if notReady == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return notReady
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the replicas: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// benchClient is one simulated client: its own keep-alive connection, and
// for the 2025 era its own session.
type benchClient struct {
	hc      *http.Client
	url     string
	headers map[string]string
	modern  bool
	nextID  int
}

func (c *cluster) load(ctx context.Context, wl workload, opts benchOptions) (benchResult, error) {
	res := benchResult{Workload: wl.name}
	modern := wl.modern
	clients := make([]*benchClient, opts.clients)
	for i := range clients {
		bc := &benchClient{
			hc:      &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
			url:     c.proxy.url() + "/mcp",
			headers: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
			modern:  modern,
		}
		defer bc.hc.CloseIdleConnections()
		if err := bc.open(ctx); err != nil {
			return res, err
		}
		// A few requests each warm the connections, the replicas' caches
		// and, with NATS, the forwarding subscriptions.
		for k := range 20 {
			if err := bc.promptsGet(ctx, (i+k)%c.cfg.templates); err != nil {
				return res, fmt.Errorf("warm-up: %w", err)
			}
		}
		clients[i] = bc
	}
	before := c.proxy.stats()
	cpu0, err := c.cpu()
	if err != nil {
		return res, err
	}
	self0, err := procCPU(os.Getpid())
	if err != nil {
		return res, err
	}
	var (
		left     atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Value
		mu       sync.Mutex
		lat      []time.Duration
		wg       sync.WaitGroup
	)
	left.Store(int64(opts.requests))
	rctx, cancel := context.WithTimeout(ctx, opts.duration)
	defer cancel()
	start := time.Now()
	for i, bc := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for k := i; left.Add(-1) >= 0 && rctx.Err() == nil; k += opts.clients {
				t0 := time.Now()
				if err := bc.promptsGet(rctx, k%c.cfg.templates); err != nil {
					if rctx.Err() != nil {
						break // the run's time was up mid-request: not the server's error
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := c.cpu()
	if err != nil {
		return res, err
	}
	self1, err := procCPU(os.Getpid())
	if err != nil {
		return res, err
	}
	after := c.proxy.stats()
	slices.Sort(lat)
	res.Requests = int64(len(lat))
	res.Errors = errs.Load()
	if s, ok := firstErr.Load().(string); ok {
		res.FirstErr = s
	}
	res.Seconds = elapsed.Seconds()
	if res.Requests > 0 {
		res.RPS = float64(res.Requests) / res.Seconds
		n := float64(res.Requests + res.Errors)
		res.CPUPerReq = float64(cpu1-cpu0) / clockTicks * 1e6 / n
		res.HarnessCPUPerReq = float64(self1-self0) / clockTicks * 1e6 / n
		res.P50ms = float64(lat[len(lat)/2].Microseconds()) / 1000
		res.P99ms = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	}
	if s := after["session"].(int64) - before["session"].(int64); s > 0 {
		res.Crossed = float64(after["crossed"].(int64)-before["crossed"].(int64)) / float64(s)
	}
	return res, nil
}

// cpu sums the replicas' user and system time, in clock ticks.
func (c *cluster) cpu() (int64, error) {
	var sum int64
	for _, r := range c.reps {
		_, pid, _ := r.info()
		t, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// procCPU reads utime+stime of pid from /proc/PID/stat.
func procCPU(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu time (Linux only): %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, from field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time: unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time: short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	return ut + st, nil
}

// open starts a 2025-era session (initialize, then initialized); the
// 2026 era has nothing to open.
func (bc *benchClient) open(ctx context.Context) error {
	if bc.modern {
		bc.headers["MCP-Protocol-Version"] = "2026-07-28"
		bc.headers["Mcp-Method"] = "prompts/get"
		return nil
	}
	resp, _, err := bc.post(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"testcluster-bench","version":"1"}}}`))
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	sid := resp.Header.Get(sessionHeader)
	if sid == "" {
		return errors.New("initialize: no session id")
	}
	bc.headers[sessionHeader] = sid
	bc.headers["MCP-Protocol-Version"] = "2025-11-25"
	if _, _, err := bc.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

// promptsGet asks for template k and checks the rendered text.
func (bc *benchClient) promptsGet(ctx context.Context, k int) error {
	bc.nextID++
	name := fmt.Sprintf("Generated_%03d", k)
	meta := ""
	if bc.modern {
		bc.headers["Mcp-Name"] = name
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"testcluster-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":%q,"arguments":{"subject":"load"}%s}}`, bc.nextID, name, meta)
	_, msg, err := bc.post(ctx, []byte(body))
	if err != nil {
		return err
	}
	var r struct {
		ID     int `json:"id"`
		Result struct {
			Messages []struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return fmt.Errorf("prompts/get %s: %w: %.200s", name, err, msg)
	}
	if r.Error != nil {
		return fmt.Errorf("prompts/get %s: %s", name, r.Error.Message)
	}
	want := fmt.Sprintf("Write about load (template %d).", k)
	if r.ID != bc.nextID || len(r.Result.Messages) == 0 || !strings.Contains(r.Result.Messages[0].Content.Text, want) {
		return fmt.Errorf("prompts/get %s: wrong answer: %.300s", name, msg)
	}
	return nil
}

// post sends one message and returns the JSON-RPC message of the answer,
// whether it came as JSON or as an event stream.
func (bc *benchClient) post(ctx context.Context, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, bc.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("request: %w", err)
	}
	for k, v := range bc.headers {
		req.Header.Set(k, v)
	}
	resp, err := bc.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("read answer: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return resp, nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, nil, fmt.Errorf("status %d: %.300s", resp.StatusCode, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.Contains(data, `"id"`) {
				return resp, []byte(strings.TrimSpace(data)), nil
			}
		}
		return nil, nil, fmt.Errorf("no response in the event stream: %.300s", raw)
	}
	return resp, raw, nil
}
