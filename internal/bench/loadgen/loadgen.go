// Package loadgen drives an MCP server with a bounded load and measures
// throughput and latency. It is flowyprompt's own load generator for
// benchmarks (crosscheck.sh runs an independent one beside it).
//
// Stdio pipelines requests over a child's stdin/stdout; SSE (legacy
// HTTP+SSE) and Streamable (Streamable HTTP) run many sessions with one
// request in flight each; Stateless runs as many clients of protocol
// 2026-07-28, which has no initialize and no session; Idle weighs the
// memory a server holds per idle session. With the server's PID they also report its CPU time per request
// and peak RSS from /proc (Usage); StartProcess runs an HTTP server for
// them.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Stats summarises one run.
type Stats struct {
	Requests int
	Errors   int
	Elapsed  time.Duration
	RPS      float64
	P50, P90 time.Duration
	P99, Max time.Duration
	// Server is the server process's CPU and memory over the measured
	// phase, when the driver knows the process (see Usage).
	Server Usage
	// FirstError quotes the first failed response, for the report.
	FirstError string
}

func (s Stats) String() string {
	return fmt.Sprintf("requests=%d errors=%d rps=%.0f p50=%s p90=%s p99=%s max=%s",
		s.Requests, s.Errors, s.RPS, s.P50, s.P90, s.P99, s.Max)
}

func summarize(lat []time.Duration, errs int, elapsed time.Duration) Stats {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	s := Stats{Requests: len(lat), Errors: errs, Elapsed: elapsed, P50: q(0.50), P90: q(0.90), P99: q(0.99)}
	if len(lat) > 0 {
		s.Max = lat[len(lat)-1]
	}
	if elapsed > 0 {
		s.RPS = float64(len(lat)) / elapsed.Seconds()
	}
	return s
}

// StdioConfig describes a stdio run.
type StdioConfig struct {
	Command []string // server command line
	Work
	Inflight int // requests kept outstanding
}

// Work is what a run asks of a server, whatever the transport: one method
// with the same params, warm-up requests first, and a check of every
// answer.
type Work struct {
	Method   string          // e.g. "prompts/get"
	Params   json.RawMessage // the request params
	Requests int             // measured requests (over HTTP: per session)
	Warmup   int             // unmeasured requests first (over HTTP: per session)
	// Expect, when set, must appear in every successful response.
	Expect []byte
}

// Stdio starts the server, initializes, and pipelines requests keeping
// Inflight outstanding. Latency is from writing a request to reading its
// response line.
func Stdio(ctx context.Context, cfg StdioConfig) (Stats, error) {
	if cfg.Inflight <= 0 {
		cfg.Inflight = 1
	}
	cmd := exec.CommandContext(ctx, cfg.Command[0], cfg.Command[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Stats{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Stats{}, err
	}
	// The last few KB, for an error: a server at its defaults logs a line
	// per request, which a run must not keep whole.
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return Stats{}, fmt.Errorf("start %v: %w", cfg.Command, err)
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	w := bufio.NewWriterSize(stdin, 64<<10)
	r := bufio.NewReaderSize(stdout, 1<<20)

	for _, msg := range [][]byte{initializeRequest("2025-06-18"), initializedNotification} {
		w.Write(msg)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return Stats{}, err
	}
	if _, err := r.ReadBytes('\n'); err != nil {
		return Stats{}, fmt.Errorf("no initialize response: %w (stderr: %s)", err, stderr.Bytes())
	}
	total := cfg.Warmup + cfg.Requests
	prefix := requestPrefix(cfg.Method, cfg.Params)

	sent := make([]time.Time, total+1)
	var mu sync.Mutex
	window := make(chan struct{}, cfg.Inflight)
	readErr := make(chan error, 1)
	lat := make([]time.Duration, 0, cfg.Requests)
	errs := 0
	firstErr := ""
	var start time.Time
	var ph *phase
	go func() {
		for got := 0; got < total; got++ {
			line, err := r.ReadBytes('\n')
			if err != nil {
				readErr <- fmt.Errorf("read response %d: %w", got, err)
				return
			}
			now := time.Now()
			id, ok := responseID(line)
			if !ok || id < 1 || id > total {
				readErr <- fmt.Errorf("unexpected message: %.200s", line)
				return
			}
			mu.Lock()
			d := now.Sub(sent[id])
			mu.Unlock()
			if id > cfg.Warmup {
				lat = append(lat, d)
				if reason := check(line, cfg.Expect); reason != "" {
					if errs == 0 {
						firstErr = reason
					}
					errs++
				}
			}
			<-window
		}
		readErr <- nil
	}()
	buf := make([]byte, 0, len(prefix)+32)
	for id := 1; id <= total; id++ {
		select {
		case window <- struct{}{}:
		case err := <-readErr:
			return Stats{}, orEOF(err)
		case <-ctx.Done():
			return Stats{}, ctx.Err()
		}
		if id == cfg.Warmup+1 {
			ph = startPhase(cmd.Process.Pid)
			start = time.Now()
		}
		buf = append(appendRequest(buf[:0], prefix, id), '\n')
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		if _, err := w.Write(buf); err != nil {
			return Stats{}, err
		}
		// Flush when the window is full or this is the last request, so
		// pipelined requests share a write.
		if len(window) == cap(window) || id == total {
			if err := w.Flush(); err != nil {
				return Stats{}, err
			}
		}
	}
	select {
	case err := <-readErr:
		if err != nil {
			return Stats{}, err
		}
	case <-ctx.Done():
		return Stats{}, ctx.Err()
	}
	elapsed := time.Since(start)
	st := summarize(lat, errs, elapsed)
	st.Server = ph.end()
	st.FirstError = firstErr
	return st, nil
}

func orEOF(err error) error {
	if err == nil {
		return errors.New("server closed the stream early")
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("server closed stdout: %w", err)
	}
	return err
}

// responseID reads the integer id of a response cheaply.
func responseID(line []byte) (int, bool) {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	j := i + 5
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(string(line[j:k]))
	return n, err == nil
}
