package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// rpcSession is one MCP session over HTTP with at most one request in
// flight: the SSE and Streamable HTTP drivers differ only in how a message
// travels, so the load logic (warmup, barrier, timing) is shared.
type rpcSession interface {
	// call sends a request and returns the server's response to it.
	call(ctx context.Context, id int, msg []byte) ([]byte, error)
	// idle drops the connections the session does not need to hear from
	// the server; the next call dials again.
	idle()
	// close ends the session (SSE: drop the stream; Streamable: DELETE).
	close()
}

// opener opens a session and completes the MCP handshake.
type opener func(ctx context.Context) (rpcSession, error)

// newOpener opens sessions of transport ("sse" or "http") at rawURL,
// asking for protocol proto (default: the revision that defined the
// transport). A session's connections close when life ends; with life nil,
// when the context the opener is called with ends.
func newOpener(transport, rawURL, proto string, life context.Context) (opener, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s url: %w", transport, err)
	}
	lifeOf := func(ctx context.Context) context.Context {
		if life != nil {
			return life
		}
		return ctx
	}
	switch transport {
	case "sse":
		if proto == "" {
			proto = "2024-11-05"
		}
		return func(ctx context.Context) (rpcSession, error) { return openSSE(ctx, lifeOf(ctx), u, proto) }, nil
	case "http":
		if proto == "" {
			proto = "2025-06-18"
		}
		return func(ctx context.Context) (rpcSession, error) { return openStreamable(ctx, lifeOf(ctx), u, proto) }, nil
	}
	return nil, fmt.Errorf("unknown transport %q (want sse or http)", transport)
}

// load is one concurrent run: n sessions, each with one request in flight.
type load struct {
	sessions int
	work     Work // Requests and Warmup per session
	pid      int
	open     opener
	// complete: every result must say "resultType":"complete" (protocol
	// 2026-07-28 and later).
	complete bool
}

// verdict classifies a response: "" when it is good, else a reason quoting
// it (see check).
func (l load) verdict(resp []byte) string {
	if bad := check(resp, l.work.Expect); bad != "" {
		return bad
	}
	if l.complete {
		if rt := resultType(resp); rt != "complete" {
			return fmt.Sprintf("resultType %q, want \"complete\": %s", rt, resp[:min(len(resp), 300)])
		}
	}
	return ""
}

// run opens every session (handshake and warmup), waits for all of them at
// a barrier so the measured phase starts with the whole load present, then
// times requests until every session has made its share. A transport
// failure (refused connection, closed stream, wrong response id) stops the
// run with an error: numbers from a broken transport mean nothing. A
// JSON-RPC error or failed tool result in the measured phase is counted.
func (l load) run(ctx context.Context) (Stats, error) {
	if l.sessions <= 0 {
		l.sessions = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		fatalOnce sync.Once
		fatal     error
	)
	fail := func(err error) {
		fatalOnce.Do(func() { fatal = err })
		cancel()
	}
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(l.sessions)
	done.Add(l.sessions)
	lats := make([][]time.Duration, l.sessions)
	errs := make([]int, l.sessions)
	firstErrs := make([]string, l.sessions)
	prefix := requestPrefix(l.work.Method, l.work.Params)

	for i := range l.sessions {
		go func() {
			defer done.Done()
			readied := false
			defer func() {
				if !readied {
					ready.Done()
				}
			}()
			s, err := l.open(ctx)
			if err != nil {
				fail(fmt.Errorf("session %d: %w", i, err))
				return
			}
			defer s.close()
			buf := make([]byte, 0, len(prefix)+16)
			id := 0
			for range l.work.Warmup {
				id++
				buf = appendRequest(buf[:0], prefix, id)
				resp, err := s.call(ctx, id, buf)
				if err != nil {
					fail(fmt.Errorf("session %d warmup: %w", i, err))
					return
				}
				if bad := l.verdict(resp); bad != "" {
					fail(fmt.Errorf("session %d warmup: bad response %s", i, bad))
					return
				}
			}
			readied = true
			ready.Done()
			select {
			case <-start:
			case <-ctx.Done():
				return
			}
			lat := make([]time.Duration, 0, l.work.Requests)
			for range l.work.Requests {
				id++
				buf = appendRequest(buf[:0], prefix, id)
				t0 := time.Now()
				resp, err := s.call(ctx, id, buf)
				if err != nil {
					fail(fmt.Errorf("session %d request %d: %w", i, id, err))
					return
				}
				lat = append(lat, time.Since(t0))
				if bad := l.verdict(resp); bad != "" {
					if errs[i] == 0 {
						firstErrs[i] = bad
					}
					errs[i]++
				}
			}
			lats[i] = lat
		}()
	}

	allReady := make(chan struct{})
	go func() { ready.Wait(); close(allReady) }()
	select {
	case <-allReady:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		done.Wait()
		return Stats{}, runErr(fatal, ctx)
	}
	ph := startPhase(l.pid)
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	usage := ph.end()
	if fatal != nil || ctx.Err() != nil {
		return Stats{}, runErr(fatal, ctx)
	}
	var all []time.Duration
	total, firstErr := 0, ""
	for i := range l.sessions {
		all = append(all, lats[i]...)
		total += errs[i]
		if firstErr == "" {
			firstErr = firstErrs[i]
		}
	}
	st := summarize(all, total, elapsed)
	st.Server = usage
	st.FirstError = firstErr
	return st, nil
}

func runErr(fatal error, ctx context.Context) error {
	if fatal != nil {
		return fatal
	}
	return ctx.Err()
}

// requestPrefix is a request up to its id, which comes last so each request
// is an append of the id and '}'.
func requestPrefix(method string, params json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","method":`)
	b.WriteString(strconv.Quote(method))
	if len(params) > 0 {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteString(`,"id":`)
	return b.Bytes()
}

func appendRequest(dst, prefix []byte, id int) []byte {
	dst = append(dst, prefix...)
	dst = strconv.AppendInt(dst, int64(id), 10)
	return append(dst, '}')
}

// initializeRequest is the client's first message, id 0.
func initializeRequest(protocol string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":` +
		strconv.Quote(protocol) + `,"capabilities":{},"clientInfo":{"name":"flowyprompt-loadgen","version":"1"}}}`)
}

var initializedNotification = []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

// sameID reports whether a raw JSON id is the integer id.
func sameID(raw json.RawMessage, id int) bool {
	return string(bytes.TrimSpace(raw)) == strconv.Itoa(id)
}

// parseResponse checks that msg is the response to request id.
func parseResponse(msg []byte, id int) error {
	env, err := parseEnvelope(msg)
	if err != nil {
		return err
	}
	return env.answers(id)
}

// answers checks that env is the response to request id.
func (env envelope) answers(id int) error {
	if !env.isResponse() {
		return fmt.Errorf("expected the response to %d, got a %q request", id, env.Method)
	}
	if !sameID(env.ID, id) {
		return fmt.Errorf("response id %s, want %d: a response reached the wrong request", env.ID, id)
	}
	return nil
}

var errStreamEnded = errors.New("the server closed the event stream")
