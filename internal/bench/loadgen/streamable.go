package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"
)

// StreamableConfig describes a run over Streamable HTTP (protocol
// 2025-03-26 and later): each client POSTs initialize to URL, keeps the
// Mcp-Session-Id the server assigns, and POSTs its requests with it; a
// response body is JSON or an event stream carrying the response.
type StreamableConfig struct {
	URL string // the MCP endpoint, e.g. http://127.0.0.1:3000/mcp
	Work
	Clients int // concurrent clients (sessions), one request in flight each
	// Protocol is the protocolVersion asked for in initialize; default
	// "2025-06-18". Later requests carry the version the server chose in
	// the MCP-Protocol-Version header.
	Protocol string
	// PID, when set, is the server process to read CPU and memory from.
	PID int
}

// Streamable runs cfg: all clients initialize and warm up, meet at a
// barrier, then each makes Requests requests. Latency is from starting the
// POST to having read the response; the rest of the body is then drained so
// the connection is reused.
func Streamable(ctx context.Context, cfg StreamableConfig) (Stats, error) {
	open, err := newOpener("http", cfg.URL, cfg.Protocol, nil)
	if err != nil {
		return Stats{}, err
	}
	return load{sessions: cfg.Clients, work: cfg.Work, pid: cfg.PID, open: open}.run(ctx)
}

// httpSession is one Streamable HTTP session on a connection of its own.
type httpSession struct {
	conn    *httpConn
	target  string // request target of the endpoint
	headers []header
	events  *eventReader // for answers that come as event streams
	session bool         // the server assigned a session id (headers[2])
	stop    context.CancelFunc
}

// postHeaders are the headers every Streamable HTTP POST carries; a
// session's own follow them.
func postHeaders() []header {
	return []header{{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}}
}

// newHTTPSession returns a client of the endpoint u that sends headers with
// every POST, on a connection of its own closed when life ends.
func newHTTPSession(life context.Context, u *url.URL, headers []header) *httpSession {
	sctx, stop := context.WithCancel(life)
	return &httpSession{conn: newHTTPConn(sctx, u), target: u.RequestURI(), stop: stop, headers: headers}
}

func openStreamable(ctx, life context.Context, u *url.URL, proto string) (*httpSession, error) {
	s := newHTTPSession(life, u, postHeaders())
	resp, sessionID, err := s.exchange(ctx, 0, initializeRequest(proto))
	if err != nil {
		s.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if isFailure(resp) {
		s.close()
		return nil, fmt.Errorf("initialize: %.300s", resp)
	}
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &init); err != nil {
		s.close()
		return nil, fmt.Errorf("initialize result: %w", err)
	}
	if sessionID != "" {
		s.headers = append(s.headers, header{"Mcp-Session-Id", sessionID})
		s.session = true
	}
	if v := init.Result.ProtocolVersion; v != "" {
		s.headers = append(s.headers, header{"MCP-Protocol-Version", v})
	}
	if _, _, err := s.exchange(ctx, -1, initializedNotification); err != nil {
		s.close()
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

func (s *httpSession) call(ctx context.Context, id int, msg []byte) ([]byte, error) {
	resp, _, err := s.exchange(ctx, id, msg)
	return resp, err
}

// exchange POSTs msg and, for a request (id >= 0), returns the response
// from the body (valid until the next exchange); for a notification
// (id < 0) it expects 202 Accepted (any 2xx is taken) and no response.
func (s *httpSession) exchange(ctx context.Context, id int, msg []byte) ([]byte, string, error) {
	resp, err := s.conn.do(ctx, "POST", s.target, s.headers, msg, id >= 0)
	if err != nil {
		return nil, "", err
	}
	if resp.status/100 != 2 {
		if resp.stream != nil {
			_ = s.conn.drain(resp.stream)
		}
		return nil, "", statusError("post", resp)
	}
	if id < 0 {
		return nil, resp.sessionID, nil
	}
	if resp.stream == nil {
		return resp.body, resp.sessionID, parseResponse(resp.body, id)
	}
	if s.events == nil {
		s.events = newEventReader(resp.stream)
	} else {
		s.events.reset(resp.stream)
	}
	out, err := responseFromStream(s.events, id)
	if err != nil {
		s.conn.Close()
		return nil, "", err
	}
	// Read what follows (the end of the stream), so the connection is
	// reused rather than closed, and make sure it holds no second response.
	clean, err := restOfStream(s.events, id)
	if !clean {
		s.conn.Close()
	}
	if err != nil {
		return nil, "", err
	}
	return out, resp.sessionID, nil
}

// restOfStream reads the events that follow the response to id until the
// stream ends; clean is false when it did not end well, and the connection
// cannot be reused. Notifications and requests are skipped; another
// response, or a message that is not JSON, is an error: every request gets
// exactly one response.
func restOfStream(er *eventReader, id int) (clean bool, err error) {
	// The response is the reader's last event data, which the next event
	// would overwrite: events after it, rare, get a buffer of their own.
	keep := er.data
	er.data = nil
	defer func() { er.data = keep }()
	for {
		ev, err := er.next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, nil // the response came whole; a broken end only costs the connection
		}
		if ev.name != "message" {
			continue
		}
		env, err := parseEnvelope(ev.data)
		if err != nil {
			return false, fmt.Errorf("after the response to %d: %w", id, err)
		}
		if env.isResponse() {
			return false, fmt.Errorf("after the response to %d, another response (every request gets exactly one): %.200s", id, ev.data)
		}
	}
}

// responseFromStream reads events until the response to id; notifications
// and server requests before it are skipped (a POST stream cannot carry a
// reply back, and the servers measured send none).
func responseFromStream(er *eventReader, id int) ([]byte, error) {
	for {
		ev, err := er.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("stream ended before the response to %d", id)
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
		if !env.isResponse() {
			continue
		}
		if !sameID(env.ID, id) {
			return nil, fmt.Errorf("response id %s, want %d: a response reached the wrong request", env.ID, id)
		}
		return ev.data, nil
	}
}

func (s *httpSession) idle() { s.conn.Close() }

// close ends the session with DELETE, as a well-behaved client does; a
// server that does not support it (405) is fine.
func (s *httpSession) close() {
	defer s.stop()
	defer s.conn.Close()
	if !s.session {
		return // no session to end
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.conn.do(ctx, "DELETE", s.target, s.headers[2:], nil, false)
}
