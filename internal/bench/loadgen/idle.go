package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// IdleConfig describes an idle-sessions run: how much memory a server holds
// for each session that is open and does nothing.
type IdleConfig struct {
	// Transport is "sse" (legacy: an idle session is an open event stream)
	// or "http" (Streamable HTTP: an idle session is server-side state with
	// no connection held open).
	Transport string
	URL       string        // /sse or /mcp endpoint
	Sessions  int           // sessions to open
	Parallel  int           // sessions opened at once; default 10
	Settle    time.Duration // wait after the last open before weighing
	PID       int           // the server process (required)
	// Protocol is the protocolVersion sent in initialize; default as the
	// transport's driver.
	Protocol string
	// Verify pings every session after weighing and counts the answers, so
	// a server that silently dropped sessions is caught.
	Verify bool
}

// IdleStats is the result of an idle-sessions run.
type IdleStats struct {
	Sessions    int           // sessions opened (transport and MCP handshake)
	OpenElapsed time.Duration // time to open them all
	RSSBefore   int64         // server VmRSS before opening, bytes
	RSSAfter    int64         // server VmRSS after Settle, bytes
	PeakRSS     int64         // server VmHWM at the end, bytes
	Verified    int           // sessions that answered a ping after weighing (with Verify)
}

// PerSession is the growth in resident memory per opened session, in
// bytes. RSS counts heap the Go runtime has not yet collected or returned
// to the system, so read it as "memory the machine must provide", not as
// live heap.
func (s IdleStats) PerSession() float64 {
	if s.Sessions == 0 {
		return 0
	}
	return float64(s.RSSAfter-s.RSSBefore) / float64(s.Sessions)
}

func (s IdleStats) String() string {
	return fmt.Sprintf("sessions=%d open=%s rss_before=%dKB rss_after=%dKB per_session=%.1fKB verified=%d",
		s.Sessions, s.OpenElapsed.Round(time.Millisecond), s.RSSBefore>>10, s.RSSAfter>>10, s.PerSession()/1024, s.Verified)
}

// Idle reads the server's RSS, opens cfg.Sessions sessions, Parallel at a
// time, waits Settle, reads the RSS again, optionally pings every session,
// and closes them all.
func Idle(ctx context.Context, cfg IdleConfig) (IdleStats, error) {
	if cfg.PID <= 0 {
		return IdleStats{}, errors.New("idle sessions: the server's PID is required to weigh it")
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 10
	}
	life, end := context.WithCancel(ctx)
	defer end()
	open, err := newOpener(cfg.Transport, cfg.URL, cfg.Protocol, life)
	if err != nil {
		return IdleStats{}, fmt.Errorf("idle sessions: %w", err)
	}

	before, err := ReadProc(cfg.PID)
	if err != nil {
		return IdleStats{}, err
	}
	st := IdleStats{RSSBefore: before.RSS}
	sessions := make([]rpcSession, cfg.Sessions)
	defer func() {
		closeAll(sessions, cfg.Parallel)
	}()

	t0 := time.Now()
	if err := forEach(ctx, cfg.Sessions, cfg.Parallel, func(ctx context.Context, i int) error {
		s, err := open(ctx)
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		// An idle client holds only what the transport needs to hear from
		// the server: the SSE stream, and nothing at all for Streamable
		// HTTP. Connections for requests come back when the pings need them.
		s.idle()
		sessions[i] = s
		return nil
	}); err != nil {
		return IdleStats{}, err
	}
	st.OpenElapsed = time.Since(t0)
	st.Sessions = cfg.Sessions

	select {
	case <-time.After(cfg.Settle):
	case <-ctx.Done():
		return IdleStats{}, ctx.Err()
	}
	after, err := ReadProc(cfg.PID)
	if err != nil {
		return IdleStats{}, err
	}
	st.RSSAfter, st.PeakRSS = after.RSS, after.HWM

	if cfg.Verify {
		var mu sync.Mutex
		ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		_ = forEach(ctx, cfg.Sessions, cfg.Parallel, func(ctx context.Context, i int) error {
			resp, err := sessions[i].call(ctx, 1, ping)
			if err == nil && !isFailure(resp) {
				mu.Lock()
				st.Verified++
				mu.Unlock()
			}
			return nil
		})
	}
	return st, nil
}

// forEach runs f for 0..n-1 with at most par at once, stopping at the
// first error.
func forEach(ctx context.Context, n, par int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					errOnce.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func closeAll(sessions []rpcSession, par int) {
	_ = forEach(context.Background(), len(sessions), par, func(_ context.Context, i int) error {
		if sessions[i] != nil {
			sessions[i].close()
		}
		return nil
	})
}
