package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
)

// SSEConfig describes a run over the legacy HTTP+SSE transport
// (protocol 2024-11-05): each session GETs URL, reads the "endpoint" event,
// POSTs its requests there, and reads the responses as "message" events on
// its stream.
type SSEConfig struct {
	URL string // the stream endpoint, e.g. http://127.0.0.1:3000/sse
	Work
	Sessions int // concurrent sessions, one request in flight each
	// Protocol is the protocolVersion sent in initialize; default
	// "2024-11-05", the revision that defined this transport.
	Protocol string
	// PID, when set, is the server process to read CPU and memory from.
	PID int
}

// SSE runs cfg: all sessions open and warm up, meet at a barrier, then each
// makes Requests requests. Latency is from starting the POST to reading the
// response event.
func SSE(ctx context.Context, cfg SSEConfig) (Stats, error) {
	open, err := newOpener("sse", cfg.URL, cfg.Protocol, nil)
	if err != nil {
		return Stats{}, err
	}
	return load{sessions: cfg.Sessions, work: cfg.Work, pid: cfg.PID, open: open}.run(ctx)
}

// sseSession is one legacy SSE session: a GET stream for server messages and
// an endpoint to POST client messages to, each on a connection of its own.
// With one request in flight, one goroutine does both: it posts, then
// reads the stream until the answer comes.
type sseSession struct {
	stream   *httpConn
	events   *eventReader
	post     *httpConn
	endpoint string // request target of the endpoint (path and query)
	headers  []header
	stop     context.CancelFunc
}

// openSSE opens the stream, learns the endpoint and completes the MCP
// handshake within ctx. The stream lives until close or until life ends.
func openSSE(ctx, life context.Context, base *url.URL, proto string) (*sseSession, error) {
	sctx, stop := context.WithCancel(life)
	s := &sseSession{stream: newHTTPConn(sctx, base), stop: stop,
		headers: []header{{"Content-Type", "application/json"}}}
	resp, err := s.stream.do(ctx, "GET", base.RequestURI(), []header{{"Accept", "text/event-stream"}}, nil, true)
	if err != nil {
		stop()
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if resp.status != 200 || resp.stream == nil {
		stop()
		if resp.status == 200 {
			return nil, fmt.Errorf("open stream: the answer is not an event stream")
		}
		return nil, statusError("open stream", resp)
	}
	s.events = newEventReader(resp.stream)
	for s.endpoint == "" {
		ev, err := s.events.next()
		if err != nil {
			stop()
			return nil, fmt.Errorf("waiting for the endpoint event: %w", err)
		}
		if ev.name != "endpoint" {
			continue
		}
		u, err := base.Parse(string(bytes.TrimSpace(ev.data)))
		if err != nil {
			stop()
			return nil, fmt.Errorf("endpoint event %q: %w", ev.data, err)
		}
		s.endpoint = u.RequestURI()
		s.post = newHTTPConn(sctx, u)
	}
	if err := s.handshake(ctx, proto); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *sseSession) handshake(ctx context.Context, proto string) error {
	resp, err := s.call(ctx, 0, initializeRequest(proto))
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if isFailure(resp) {
		return fmt.Errorf("initialize: %.300s", resp)
	}
	if err := s.send(ctx, initializedNotification); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// send posts one message to the session endpoint and expects a 2xx answer;
// a response, if any, comes on the stream.
func (s *sseSession) send(ctx context.Context, msg []byte) error {
	resp, err := s.post.do(ctx, "POST", s.endpoint, s.headers, msg, false)
	if err != nil {
		return err
	}
	if resp.status/100 != 2 {
		return statusError("post", resp)
	}
	return nil
}

// call posts a request and reads the stream until its response, answering
// the server's own requests (ping) with an empty result, as a client must;
// notifications are skipped. The response is valid until the next call.
func (s *sseSession) call(ctx context.Context, id int, msg []byte) ([]byte, error) {
	if err := s.send(ctx, msg); err != nil {
		return nil, err
	}
	for {
		ev, err := s.events.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errStreamEnded
			}
			return nil, err
		}
		if ev.name != "message" {
			continue
		}
		env, err := parseEnvelope(ev.data)
		if err != nil {
			return nil, err
		}
		switch {
		case env.isResponse():
			return ev.data, env.answers(id)
		case len(env.ID) > 0 && string(env.ID) != "null":
			reply := []byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{}}`)
			if err := s.send(ctx, reply); err != nil {
				return nil, fmt.Errorf("answering the server's %s: %w", env.Method, err)
			}
		}
	}
}

func (s *sseSession) idle() { s.post.Close() }

func (s *sseSession) close() {
	s.stop()
	s.stream.Close()
	if s.post != nil {
		s.post.Close()
	}
}
