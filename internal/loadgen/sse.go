package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
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
	base, err := url.Parse(cfg.URL)
	if err != nil {
		return Stats{}, fmt.Errorf("sse url: %w", err)
	}
	hc := newHTTPClient(cfg.Sessions)
	defer hc.CloseIdleConnections()
	proto := cfg.Protocol
	if proto == "" {
		proto = "2024-11-05"
	}
	return load{
		sessions: cfg.Sessions, work: cfg.Work, pid: cfg.PID,
		open: func(ctx context.Context) (rpcSession, error) { return openSSE(ctx, ctx, hc, base, proto) },
	}.run(ctx)
}

// response is a response message with its envelope, parsed once.
type response struct {
	data []byte
	env  envelope
}

// sseSession is one legacy SSE session: a GET stream for server messages and
// an endpoint to POST client messages to.
type sseSession struct {
	hc       *http.Client
	endpoint string
	sctx     context.Context // the stream's lifetime
	stop     context.CancelFunc
	msgs     chan response // responses, in arrival order
	done     chan struct{} // closed when the stream ends
	mu       sync.Mutex
	readErr  error
}

// openSSE opens the stream, learns the endpoint and completes the MCP
// handshake within ctx. The stream lives until close or until life ends.
func openSSE(ctx, life context.Context, hc *http.Client, base *url.URL, proto string) (*sseSession, error) {
	sctx, stop := context.WithCancel(life)
	s := &sseSession{hc: hc, sctx: sctx, stop: stop, msgs: make(chan response, 8), done: make(chan struct{})}
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, base.String(), nil)
	if err != nil {
		stop()
		return nil, err
	}
	// The handshake deadline (ctx) bounds the wait for the stream's
	// headers and endpoint event too.
	unbind := context.AfterFunc(ctx, stop)
	defer unbind()
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		stop()
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		stop()
		return nil, errStatus("open stream", resp, body)
	}
	er := newEventReader(resp.Body)
	for s.endpoint == "" {
		ev, err := er.next()
		if err != nil {
			resp.Body.Close()
			stop()
			return nil, fmt.Errorf("waiting for the endpoint event: %w", err)
		}
		if ev.name != "endpoint" {
			continue
		}
		u, err := base.Parse(string(bytes.TrimSpace(ev.data)))
		if err != nil {
			resp.Body.Close()
			stop()
			return nil, fmt.Errorf("endpoint event %q: %w", ev.data, err)
		}
		s.endpoint = u.String()
	}
	go s.read(resp.Body, er)

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
	if err := s.post(ctx, initializedNotification); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// read delivers responses to msgs and answers the server's own requests
// (ping) with an empty result, as a client must; notifications are dropped.
func (s *sseSession) read(body io.ReadCloser, er *eventReader) {
	defer close(s.done)
	defer body.Close()
	for {
		ev, err := er.next()
		if err != nil {
			s.mu.Lock()
			s.readErr = err
			s.mu.Unlock()
			return
		}
		if ev.name != "message" {
			continue
		}
		env, err := parseEnvelope(ev.data)
		if err != nil {
			s.mu.Lock()
			s.readErr = err
			s.mu.Unlock()
			return
		}
		switch {
		case env.isResponse():
			select {
			case s.msgs <- response{ev.data, env}:
			case <-s.sctx.Done():
				return
			}
		case len(env.ID) > 0 && string(env.ID) != "null":
			reply := []byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{}}`)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.post(ctx, reply)
			}()
		}
	}
}

// post sends one message to the session endpoint and expects a 2xx answer
// with the response, if any, to come on the stream.
func (s *sseSession) post(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return errStatus("post", resp, body)
	}
	// Drain, so the connection goes back to the pool.
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (s *sseSession) call(ctx context.Context, id int, msg []byte) ([]byte, error) {
	if err := s.post(ctx, msg); err != nil {
		return nil, err
	}
	select {
	case resp := <-s.msgs:
		return resp.data, resp.env.answers(id)
	case <-s.done:
		// A response may have arrived just before the stream ended.
		select {
		case resp := <-s.msgs:
			return resp.data, resp.env.answers(id)
		default:
		}
		s.mu.Lock()
		err := s.readErr
		s.mu.Unlock()
		if err == nil || errors.Is(err, io.EOF) {
			err = errStreamEnded
		}
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sseSession) close() {
	s.stop()
	<-s.done
}
