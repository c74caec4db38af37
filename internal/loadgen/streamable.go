package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
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
	hc := newHTTPClient(cfg.Clients)
	defer hc.CloseIdleConnections()
	proto := cfg.Protocol
	if proto == "" {
		proto = "2025-06-18"
	}
	return load{
		sessions: cfg.Clients, work: cfg.Work, pid: cfg.PID,
		open: func(ctx context.Context) (rpcSession, error) { return openStreamable(ctx, hc, cfg.URL, proto) },
	}.run(ctx)
}

// httpSession is one Streamable HTTP session.
type httpSession struct {
	hc       *http.Client
	url      string
	id       string // Mcp-Session-Id; empty for a server that keeps no sessions
	protocol string // negotiated, sent as MCP-Protocol-Version
}

func openStreamable(ctx context.Context, hc *http.Client, url, proto string) (*httpSession, error) {
	s := &httpSession{hc: hc, url: url}
	resp, hdr, err := s.exchange(ctx, 0, initializeRequest(proto))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if isFailure(resp) {
		return nil, fmt.Errorf("initialize: %.300s", resp)
	}
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &init); err != nil {
		return nil, fmt.Errorf("initialize result: %w", err)
	}
	s.id = hdr.Get("Mcp-Session-Id")
	s.protocol = init.Result.ProtocolVersion
	if _, _, err := s.exchange(ctx, -1, initializedNotification); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

func (s *httpSession) call(ctx context.Context, id int, msg []byte) ([]byte, error) {
	resp, _, err := s.exchange(ctx, id, msg)
	return resp, err
}

// exchange POSTs msg and, for a request (id >= 0), returns the response
// from the body; for a notification (id < 0) it expects 202 Accepted (any
// 2xx is taken) and no response.
func (s *httpSession) exchange(ctx context.Context, id int, msg []byte) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(msg))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	if s.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", s.protocol)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, nil, errStatus("post", resp, body)
	}
	if id < 0 {
		_, err := io.Copy(io.Discard, resp.Body)
		return nil, resp.Header, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var out []byte
	if mt == "text/event-stream" {
		out, err = responseFromStream(resp.Body, id)
	} else {
		out, err = io.ReadAll(io.LimitReader(resp.Body, maxEvent))
		if err == nil {
			err = parseResponse(out, id)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// Drain what follows (the end of the stream), so the connection is
	// reused rather than closed.
	_, _ = io.Copy(io.Discard, resp.Body)
	return out, resp.Header, nil
}

// responseFromStream reads events until the response to id; notifications
// and server requests before it are skipped (a POST stream cannot carry a
// reply back, and the servers measured send none).
func responseFromStream(body io.Reader, id int) ([]byte, error) {
	er := newEventReader(body)
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

// close ends the session with DELETE, as a well-behaved client does; a
// server that does not support it (405) is fine.
func (s *httpSession) close() {
	if s.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.id)
	if s.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", s.protocol)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
