// Package stdio serves one MCP session over newline-delimited JSON on a
// reader and a writer (stdin and stdout for Claude Desktop). Nothing but
// protocol messages is ever written to the writer.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// Options tune Serve.
type Options struct {
	// DrainTimeout bounds how long in-flight requests may finish after EOF
	// or cancellation (default 10 s).
	DrainTimeout time.Duration
}

// sink writes a session's messages as lines, one flush per batch. The
// session calls Send from one goroutine at a time (see mcp.Sink), so the
// writer needs no lock; the error that ended the session is read by Serve,
// on another goroutine, hence its own.
type sink struct {
	w *bufio.Writer

	mu  sync.Mutex
	err error // the write that failed, which ended the session
}

var _ mcp.Sink = (*sink)(nil)

func (k *sink) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		k.w.Write(m.Data)
		k.w.WriteByte('\n')
	}
	err := k.w.Flush()
	if err != nil {
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
	}
	return err
}

func (k *sink) failure() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

func (k *sink) Close() { _ = k.w.Flush() }

// Serve runs one session until r reaches EOF or ctx ends, then lets
// in-flight requests finish (bounded by DrainTimeout) and returns. EOF is a
// normal end and returns nil.
func Serve(ctx context.Context, e *mcp.Engine, r io.Reader, w io.Writer, opts Options) error {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	out := &sink{w: bufio.NewWriterSize(w, 64<<10)}
	s, err := e.NewSession(context.Background(), out, 0)
	if err != nil {
		return fmt.Errorf("open the stdio session: %w", err)
	}
	s.SetTransport(mcp.TransportPipe)
	defer s.Wait() // the writer has flushed and stopped before we return
	defer s.Close()

	readErr := make(chan error, 1)
	go func() { readErr <- readLoop(s, r, e.Options().MaxMessageSize) }()

	select {
	case err = <-readErr:
	case <-ctx.Done():
		// stdin cannot be interrupted portably; the read goroutine ends with
		// the process.
	case <-s.Done():
		// A client that closed its end of stdout has hung up, which ends
		// the session as EOF on stdin does.
		switch werr := out.failure(); {
		case werr == nil:
			err = errors.New("the session ended: its client stopped reading stdout")
		case errors.Is(werr, syscall.EPIPE):
			err = nil
		default:
			err = fmt.Errorf("write to stdout: %w", werr)
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), opts.DrainTimeout)
	defer cancel()
	if derr := s.Drain(dctx); derr != nil {
		return fmt.Errorf("in-flight requests did not finish within %s: %w", opts.DrainTimeout, derr)
	}
	return err
}

// readLoop feeds each line to the session. A line longer than max is
// skipped whole and answered with an error; the session goes on.
func readLoop(s *mcp.Session, r io.Reader, max int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if len(long)+len(line) > max {
				n, skipErr := skipLine(br)
				s.RejectTooLarge(len(long) + len(line) + n)
				long = long[:0]
				if skipErr != nil {
					return eofNil(skipErr)
				}
				continue
			}
			long = append(long, line...)
			continue
		case err != nil && len(line) == 0 && len(long) == 0:
			return eofNil(err)
		}
		if len(long) > 0 {
			line = append(long, line...)
		}
		if len(line) > max+1 {
			s.RejectTooLarge(len(line))
		} else if msg := trimEOL(line); len(msg) > 0 {
			// A copy of its own: the session keeps the frame, and the
			// reader's buffer is reused for the next line.
			s.Deliver(bytes.Clone(msg), nil)
		}
		long = long[:0]
		if err != nil {
			return eofNil(err)
		}
	}
}

func skipLine(br *bufio.Reader) (int, error) {
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		n += len(line)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func eofNil(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
