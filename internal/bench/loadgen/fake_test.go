package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeServer is a minimal MCP server over legacy SSE (/sse, posting to
// /message) and Streamable HTTP (/mcp), enough to drive the load
// generator's HTTP paths without building a real server. Its behaviour is
// switched by the test: how it answers, and which mistakes it makes.
type fakeServer struct {
	fakeOptions

	mu      sync.Mutex
	streams map[string]chan []byte // SSE session id -> outbox
	// noStreams are closed when the last open stream ends.
	noStreams []chan struct{}
	sessions  map[string]bool // Streamable session ids
	nextID    atomic.Int64
	clientOK  atomic.Int64 // client answers to our pings
	requests  atomic.Int64 // requests handled (both transports)
	deleted   atomic.Int64
	// stateless counts requests served at protocol 2026-07-28, without
	// a session.
	stateless atomic.Int64
}

// fakeOptions are the test's switches.
type fakeOptions struct {
	// misroute answers request N with id N+1, which a driver must catch.
	misroute bool
	// sseReplies makes /mcp answer requests as an event stream rather
	// than JSON (every other request, so both paths run in one test).
	sseReplies bool
	// pingClient makes the SSE stream send the client a ping request
	// right after the endpoint event.
	pingClient bool
	// secondResponse makes event-stream replies carry the response twice.
	secondResponse bool
	// noResultType leaves "resultType":"complete" out of 2026-07-28
	// results.
	noResultType bool
}

func newFakeServer(t *testing.T, opts fakeOptions) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := &fakeServer{fakeOptions: opts, streams: map[string]chan []byte{}, sessions: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", f.serveStream)
	mux.HandleFunc("POST /message", f.serveMessage)
	mux.HandleFunc("/mcp", f.serveMCP)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// statelessProtocol is the revision the fake serves without sessions.
const statelessProtocol = "2026-07-28"

// answer returns the response to m, or nil for a notification or a client
// response.
func (f *fakeServer) answer(m rpcMessage) []byte {
	if m.Method == "" {
		if string(m.ID) == `"srv-ping"` {
			f.clientOK.Add(1)
		}
		return nil
	}
	if len(m.ID) == 0 {
		return nil
	}
	f.requests.Add(1)
	id := string(m.ID)
	if f.misroute {
		if n, err := strconv.Atoi(id); err == nil && n > 0 {
			id = strconv.Itoa(n + 1)
		}
	}
	switch m.Method {
	case "initialize":
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}}`)
	case "ping":
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
	case "echo", "prompts/get":
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"hello from ` + id + `"}]}}`)
	case "tool_fails":
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}`)
	default:
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
	}
}

// streamsClosed returns a channel closed once no SSE stream is open:
// at once if none is.
func (f *fakeServer) streamsClosed() <-chan struct{} {
	c := make(chan struct{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.streams) == 0 {
		close(c)
	} else {
		f.noStreams = append(f.noStreams, c)
	}
	return c
}

func (f *fakeServer) serveStream(w http.ResponseWriter, r *http.Request) {
	id := strconv.FormatInt(f.nextID.Add(1), 10)
	out := make(chan []byte, 16)
	f.mu.Lock()
	f.streams[id] = out
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.streams, id)
		if len(f.streams) == 0 {
			for _, c := range f.noStreams {
				close(c)
			}
			f.noStreams = nil
		}
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	// A relative endpoint, as go-sdk sends; CRLF line ends and a comment,
	// which the format allows.
	fmt.Fprintf(w, ": hello\r\nevent: endpoint\r\ndata: /message?session=%s\r\n\r\n", id)
	if f.pingClient {
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-ping\",\"method\":\"ping\"}\n\n")
	}
	fl.Flush()
	for {
		select {
		case msg := <-out:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeServer) serveMessage(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	out, ok := f.streams[r.URL.Query().Get("session")]
	f.mu.Unlock()
	if !ok {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	var m rpcMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	if resp := f.answer(m); resp != nil {
		out <- resp
	}
}

func (f *fakeServer) serveMCP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	known := f.sessions[sid]
	f.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		if !known {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		f.mu.Lock()
		delete(f.sessions, sid)
		f.mu.Unlock()
		f.deleted.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") || !strings.Contains(r.Header.Get("Accept"), "application/json") {
		http.Error(w, "accept both", http.StatusNotAcceptable)
		return
	}
	var m rpcMessage
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if r.Header.Get("MCP-Protocol-Version") == statelessProtocol {
		f.serveStateless(w, r, m)
		return
	}
	if m.Method == "initialize" {
		sid = "s-" + strconv.FormatInt(f.nextID.Add(1), 10)
		f.mu.Lock()
		f.sessions[sid] = true
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
	} else {
		if !known {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		if r.Header.Get("MCP-Protocol-Version") != "2025-06-18" {
			http.Error(w, "bad protocol version header", http.StatusBadRequest)
			return
		}
	}
	f.reply(w, m, f.answer(m))
}

// reply writes the answer to m: 202 for none, else JSON, or (every other
// request, with sseReplies) an event stream with a notification on each
// side of the response.
func (f *fakeServer) reply(w http.ResponseWriter, m rpcMessage, resp []byte) {
	if resp == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	n, _ := strconv.Atoi(string(m.ID))
	if f.sseReplies && n%2 == 1 {
		w.Header().Set("Content-Type", "text/event-stream")
		// Notifications before and after, which the driver must skip.
		note := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
		fmt.Fprint(w, note)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", resp)
		if f.secondResponse {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", resp)
		}
		fmt.Fprint(w, note)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// serveStateless answers a POST at protocol 2026-07-28, checking what the
// revision asks of a client as the peers do: no session, headers that
// repeat the body's method and name, and the request _meta.
func (f *fakeServer) serveStateless(w http.ResponseWriter, r *http.Request, m rpcMessage) {
	var p struct {
		Name string `json:"name"`
		Meta *struct {
			ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
			ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
			ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var why string
	switch {
	case r.Header.Get("Mcp-Session-Id") != "":
		why = "a session id at 2026-07-28"
	case m.Method == "initialize" || len(m.ID) == 0:
		why = "not a request of 2026-07-28: " + m.Method
	case r.Header.Get("Mcp-Method") != m.Method:
		why = "Mcp-Method does not match"
	case (m.Method == "prompts/get" || m.Method == "tools/call") && (p.Name == "" || r.Header.Get("Mcp-Name") != p.Name):
		why = "Mcp-Name does not match"
	case p.Meta == nil || p.Meta.ProtocolVersion != statelessProtocol:
		why = "no _meta protocolVersion " + statelessProtocol
	case !strings.HasPrefix(string(p.Meta.ClientCapabilities), "{") || !strings.HasPrefix(string(p.Meta.ClientInfo), "{"):
		why = "no _meta clientCapabilities or clientInfo"
	}
	if why != "" {
		http.Error(w, why, http.StatusBadRequest)
		return
	}
	f.stateless.Add(1)
	resp := f.answer(m)
	if !f.noResultType {
		resp = bytes.Replace(resp, []byte(`"result":{}`), []byte(`"result":{"resultType":"complete"}`), 1)
		if !bytes.Contains(resp, []byte(`"resultType"`)) {
			resp = bytes.Replace(resp, []byte(`"result":{`), []byte(`"result":{"resultType":"complete",`), 1)
		}
	}
	f.reply(w, m, resp)
}

func (f *fakeServer) liveSessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}
