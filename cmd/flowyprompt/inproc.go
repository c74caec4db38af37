package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/sourcegraph/jsonrpc2"
)

// chanSink hands a session's messages to an in-process caller.
type chanSink chan []byte

var _ mcp.Sink = chanSink(nil)

func (c chanSink) Send(msgs []mcp.Outgoing) error {
	for _, m := range msgs {
		c <- m.Data
	}
	return nil
}

func (c chanSink) Close() {}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc2.Error `json:"error"`
}

// callOnce initializes an in-process session and calls one tool.
func callOnce(ctx context.Context, e *mcp.Engine, tool string, args json.RawMessage) (*rpcResponse, error) {
	out := make(chanSink, 16)
	s, err := e.NewSession(context.Background(), out, 0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	send := func(id int, method string, params any) (*rpcResponse, error) {
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			return nil, err
		}
		s.Deliver(msg, nil)
		for {
			select {
			case data := <-out:
				var r rpcResponse
				if err := json.Unmarshal(data, &r); err != nil {
					return nil, fmt.Errorf("decode response: %w", err)
				}
				if string(r.ID) == fmt.Sprint(id) {
					return &r, nil
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	init, err := send(1, mcp.MethodInitialize, map[string]any{"protocolVersion": mcp.LatestVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "flowyprompt-call", "version": version()}})
	if err != nil {
		return nil, err
	}
	if init.Error != nil {
		return nil, errors.New(init.Error.Message)
	}
	return send(2, mcp.MethodToolsCall, map[string]any{"name": tool, "arguments": args})
}
