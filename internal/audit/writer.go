package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Queue is how many lines may wait for the log's goroutine; a line that
// finds the queue full is dropped and counted. At about 300 bytes a
// waiting line, a full queue holds about 1.2 MB.
const Queue = 4096

// batchDelay is how long the goroutine lets lines gather after the first
// one arrives, so that one write to stderr carries many: a busy server
// writes stderr about a hundred times a second rather than once per
// request, and a line reaches stderr at most this much after its request
// ended. A queue half full cuts the wait short.
const batchDelay = 10 * time.Millisecond

// batchSize is the most bytes one write to out carries.
const batchSize = 64 << 10

// Log is the audit log, an mcp.Observer. A request's line is queued when
// the request ends and written by the log's own goroutine; Close writes
// what is queued and stops it. A request never waits: when the queue is
// full (stderr is read more slowly than requests end), its line is dropped,
// counted in Dropped, and a warning line says how many were lost.
type Log struct {
	h slog.Handler // formats a line, writing it to buf (or elsewhere, for New)
	// buf is the batch being written and out where it goes; both nil for
	// New, whose handler writes each line itself.
	buf *bytes.Buffer
	out io.Writer

	queue chan *record
	nudge chan struct{} // the queue is half full: write now
	// mu is held for reading to queue a line and for writing by Close,
	// so that once closed is set no line can still be on its way in.
	mu      sync.RWMutex
	closed  bool
	closing chan struct{}
	done    chan struct{}

	dropped atomic.Uint64
	// The goroutine's own: dropped as of the last warning, and room for
	// a line's attributes.
	reported uint64
	attrs    []slog.Attr
}

// New returns an audit log whose lines are formatted by log's handler,
// on the audit log's goroutine, and written as that handler writes them:
// one write per line. Buffered is the one that batches.
func New(log *slog.Logger) *Log {
	return start(log.Handler(), nil, nil)
}

// Buffered returns an audit log that writes its lines to out in batches
// of up to 64 KB: handler(w) must return the slog handler that formats a
// line into w (the server's log format and level), which writes each line
// with one call, as slog's handlers do.
func Buffered(out io.Writer, handler func(w io.Writer) slog.Handler) *Log {
	buf := new(bytes.Buffer)
	return start(handler(buf), buf, out)
}

func start(h slog.Handler, buf *bytes.Buffer, out io.Writer) *Log {
	l := &Log{h: h, buf: buf, out: out, queue: make(chan *record, Queue), nudge: make(chan struct{}, 1),
		closing: make(chan struct{}), done: make(chan struct{}), attrs: make([]slog.Attr, 0, 16)}
	go l.run()
	return l
}

// Dropped is how many lines were lost because the queue was full, or
// because their requests ended after Close.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// enqueue hands rec to the goroutine, or drops it: it never blocks.
func (l *Log) enqueue(rec *record) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	select {
	case l.queue <- rec:
	default:
		l.dropped.Add(1)
	}
	if len(l.queue) >= Queue/2 {
		select {
		case l.nudge <- struct{}{}:
		default:
		}
	}
}

// Close writes every queued line and stops the goroutine; lines of
// requests that end later are dropped and counted. It returns ctx's error
// if out does not take the lines in time (a reader that stopped reading
// stderr without closing it).
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if !already {
		close(l.closing)
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit log not flushed: %w", context.Cause(ctx))
	}
}

// run is the log's goroutine: it waits for a line, lets more gather for
// batchDelay, then writes all that are queued.
func (l *Log) run() {
	defer close(l.done)
	wait := time.NewTimer(batchDelay)
	wait.Stop()
	for {
		select {
		case rec := <-l.queue:
			l.format(rec)
		case <-l.closing:
			l.drain()
			return
		}
		wait.Reset(batchDelay)
		select {
		case <-wait.C:
		case <-l.nudge:
			wait.Stop()
		case <-l.closing:
			l.drain()
			return
		}
		l.drain()
	}
}

// drain formats every queued line and writes them.
func (l *Log) drain() {
	for {
		select {
		case rec := <-l.queue:
			l.format(rec)
			if l.buf != nil && l.buf.Len() >= batchSize {
				l.flush()
			}
		default:
			l.reportDropped()
			l.flush()
			return
		}
	}
}

func (l *Log) format(rec *record) {
	_ = l.h.Handle(context.Background(), rec.line(l.attrs))
}

// reportDropped adds a warning line when lines were dropped since the
// last one, so that whoever reads the log sees the gap where it is.
func (l *Log) reportDropped() {
	n := l.dropped.Load()
	if n == l.reported {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelWarn, "audit lines dropped: stderr was read more slowly than requests ended", 0)
	r.AddAttrs(slog.Uint64("dropped", n-l.reported), slog.Uint64("dropped_total", n))
	_ = l.h.Handle(context.Background(), r)
	l.reported = n
}

// flush writes the batch. A failed write loses its lines, as any log
// line written to a closed stderr is lost.
func (l *Log) flush() {
	if l.buf == nil || l.buf.Len() == 0 {
		return
	}
	_, _ = l.out.Write(l.buf.Bytes())
	l.buf.Reset()
}
