package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// servedResources serves the resources r://N, N any digits.
type servedResources struct{}

func (servedResources) ListResources(context.Context, *Request) ([]Resource, error) { return nil, nil }

func (servedResources) ListResourceTemplates(context.Context, *Request) ([]ResourceTemplate, error) {
	return nil, nil
}

func (servedResources) ReadResource(context.Context, *Request, string) (*ReadResourceResult, error) {
	return nil, &fault.Error{Code: fault.ResourceNotFound, What: "not read in this test"}
}

func (servedResources) CheckResource(_ context.Context, _ *Request, uri string) error {
	if n, ok := strings.CutPrefix(uri, "r://"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return nil
	}
	return &fault.Error{Code: fault.ResourceNotFound, What: "unknown resource"}
}

// firstSink hands the first batch a session sends to a channel.
type firstSink chan []Outgoing

func (s firstSink) Send(b []Outgoing) error {
	select {
	case s <- b:
	default:
	}
	return nil
}

func (firstSink) Close() {}

// answered waits for what the session sends in answer to method.
func answered(t *testing.T, sink firstSink, method string) {
	t.Helper()
	select {
	case <-sink:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s got no answer", method)
	}
}

// FuzzSessionKeepsBounded: whatever params an initialize or a
// subscriptions/listen carries, what the session or the stream keeps is
// within the limits: clientInfo fields of at most MaxClientInfoField
// bytes, capabilities of at most MaxCapabilitiesSize, at most
// MaxSubscriptions resources of at most MaxURILength bytes, each one the
// server serves. Anything else is refused, and never a panic.
func FuzzSessionKeepsBounded(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}`),
		[]byte(`{"resourceSubscriptions":["r://1","r://2"],"promptsListChanged":true}`))
	f.Add([]byte(`{"protocolVersion":"2025-06-18","capabilities":{"roots":{"pad":"`+strings.Repeat("x", MaxCapabilitiesSize)+`"}},"clientInfo":{"name":"c"}}`),
		[]byte(`{"resourceSubscriptions":["r://1","r://1","r://1","r://1"]}`))
	f.Add([]byte(`{"clientInfo":{"name":"`+strings.Repeat("n", MaxClientInfoField+1)+`","title":null}}`),
		[]byte(`{"resourceSubscriptions":["r://`+strings.Repeat("1", MaxURILength)+`"]}`))
	f.Add([]byte(`{"capabilities":[],"clientInfo":"x"}`), []byte(`{"resourceSubscriptions":["x://1"]}`))
	f.Add([]byte(`null`), []byte(`{"resourceSubscriptions":null}`))
	const limit = 3
	e := NewEngine(&Server{Info: Implementation{Name: "t", Version: "1"}, Resources: servedResources{}}, EngineOptions{MaxSubscriptions: limit})
	f.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	f.Fuzz(func(t *testing.T, initParams, notifications []byte) {
		// One JSON value each, so that they are the params and the
		// notifications and not members they add to the message.
		if !json.Valid(initParams) || !json.Valid(notifications) {
			return
		}
		sink := make(firstSink, 1)
		s, err := e.NewSession(context.Background(), sink, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+string(initParams)+`}`), nil)
		p := s.peer.Load()
		for _, v := range []string{p.Info.Name, p.Info.Title, p.Info.Version} {
			if len(v) > MaxClientInfoField {
				t.Fatalf("the session keeps a clientInfo field of %d bytes", len(v))
			}
		}
		if n := len(p.Capabilities.Sampling) + len(p.Capabilities.Elicitation) + len(p.Capabilities.Roots); n > MaxCapabilitiesSize {
			t.Fatalf("the session keeps %d bytes of capabilities", n)
		}
		answered(t, sink, "initialize")

		s.Deliver([]byte(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`+
			`"notifications":`+string(notifications)+`}}`), nil)
		answered(t, sink, MethodSubscriptionsListen) // the acknowledgement, or the refusal
		e.lmu.Lock()
		defer e.lmu.Unlock()
		for l := range e.listeners {
			if l.r.s != s {
				continue
			}
			if len(l.uris) > limit {
				t.Fatalf("a stream listens to %d resources", len(l.uris))
			}
			for u := range l.uris {
				if len(u) > MaxURILength || (servedResources{}).CheckResource(context.Background(), nil, u) != nil {
					t.Fatalf("a stream listens to %.80q (%d bytes), which it must not", u, len(u))
				}
			}
		}
	})
}
