// Package httpx holds what the two HTTP transports share: errors written as
// JSON-RPC error bodies that explain themselves, capped body reading, the
// session cap, Accept parsing and an SSE event writer with write deadlines.
// It exists so that /sse and /mcp fail the same way for the same mistake.
package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// Symbolic codes of HTTP-level failures, carried in error.data.code like
// the protocol's own codes so clients match on one field.
const (
	CodeSessionRequired    = "SESSION_REQUIRED"
	CodeSessionNotFound    = "SESSION_NOT_FOUND"
	CodeTooManySessions    = "TOO_MANY_SESSIONS"
	CodeBodyTooLarge       = "BODY_TOO_LARGE"
	CodeBadRequest         = "BAD_REQUEST"
	CodeNotAcceptable      = "NOT_ACCEPTABLE"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnsupportedVersion = "UNSUPPORTED_PROTOCOL_VERSION"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeConflict           = "STREAM_ALREADY_OPEN"
	CodeStreamNotResumable = "STREAM_NOT_RESUMABLE"
	CodeForbiddenHost      = "FORBIDDEN_HOST"
	CodeForbiddenOrigin    = "FORBIDDEN_ORIGIN"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeNotFound           = "NOT_FOUND"
	CodeShuttingDown       = "SHUTTING_DOWN"
)

// JSON-RPC codes for errors that are not answers to a request. -32001 for
// an unknown session is what the TypeScript SDK's server sends, so SDK
// clients recognise it.
const (
	rpcServerError     = -32000
	rpcSessionNotFound = -32001
	rpcParseError      = -32700
	rpcInvalidRequest  = -32600
)

type errorBody struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      *struct{} `json:"id"` // always null: no request is being answered
	Error   errorObj  `json:"error"`
}

type errorObj struct {
	Code    int64         `json:"code"`
	Message string        `json:"message"`
	Data    mcp.ErrorData `json:"data"`
}

// WriteError answers with status and a JSON-RPC error body whose data
// carries f's code and what / why / how. RetryAfter also becomes the
// Retry-After header.
func WriteError(w http.ResponseWriter, status int, f *fault.Error) {
	code := int64(rpcServerError)
	switch {
	case f.Code == CodeSessionNotFound:
		code = rpcSessionNotFound
	case f.Code == mcp.CodeParseError:
		code = rpcParseError
	case f.Code == mcp.CodeInvalidRequest:
		code = rpcInvalidRequest
	}
	data := mcp.ErrorData{Code: f.Code, What: f.What, Why: f.Why, How: f.How, Suggestions: f.Suggestions, Details: f.Details}
	if f.RetryAfter > 0 {
		secs := int64(math.Ceil(f.RetryAfter.Seconds()))
		data.RetryAfter = secs
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	body, err := json.Marshal(errorBody{JSONRPC: "2.0", Error: errorObj{Code: code, Message: f.Error(), Data: data}})
	if err != nil {
		// Details held something JSON cannot carry; the explanation matters more.
		data.Details = nil
		body, _ = json.Marshal(errorBody{JSONRPC: "2.0", Error: errorObj{Code: code, Message: f.Error(), Data: data}})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// SessionNotFound is the 404 for a session id that names no live session.
func SessionNotFound(how string) *fault.Error {
	return &fault.Error{Code: CodeSessionNotFound, What: "unknown session",
		Why: "the session id names no live session: it never existed, was closed, or expired after being idle",
		How: how}
}

// MethodNotAllowed answers 405 with the Allow header.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	WriteError(w, http.StatusMethodNotAllowed, &fault.Error{Code: CodeMethodNotAllowed,
		What: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path),
		Why:  "this endpoint answers only " + strings.Join(allow, ", "),
		How:  "use one of the allowed methods"})
}

// ReadBody reads a request body of at most max bytes. On failure it has
// already answered (413 for an over-size body, 400 when the read failed)
// and returns false. The bytes are the handler's until it returns: a body
// that is already in memory (the light HTTP path's) is returned in place.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	tooLarge := func(size int64) {
		d := map[string]any{"max": max}
		if size > 0 {
			d["size"] = size
		}
		WriteError(w, http.StatusRequestEntityTooLarge, &fault.Error{Code: CodeBodyTooLarge,
			What: "request body too large", Why: fmt.Sprintf("the server accepts at most %d bytes per message", max),
			How: "send smaller arguments, or raise --max-message-size", Details: d})
	}
	if r.ContentLength > max {
		tooLarge(r.ContentLength)
		return nil, false
	}
	if b, ok := r.Body.(interface{ InPlace() []byte }); ok && int64(len(b.InPlace())) == r.ContentLength {
		return b.InPlace(), true
	}
	failed := func(err error) ([]byte, bool) {
		WriteError(w, http.StatusBadRequest, &fault.Error{Code: CodeBadRequest, What: "could not read the request body",
			Why: err.Error(), How: "send the whole JSON-RPC message as the body", Err: err})
		return nil, false
	}
	if r.ContentLength >= 0 {
		// The length is known and within the cap: one exact allocation
		// (bytes.Buffer would grow by 512-byte steps past it).
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return failed(err)
		}
		// Closed at EOF, the body needs no discarding by net/http after the
		// handler (which otherwise copies the rest of it to io.Discard).
		r.Body.Close()
		return buf, true
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge(0)
			return nil, false
		}
		return failed(err)
	}
	r.Body.Close()
	return buf.Bytes(), true
}

// ParseError is the 400 for a body that is not JSON.
func ParseError() *fault.Error {
	return &fault.Error{Code: mcp.CodeParseError, What: "the body is not valid JSON",
		Why: "a message must be one JSON-RPC object", How: `send one object such as {"jsonrpc":"2.0","id":1,"method":"ping"}`}
}

// OpenSession starts a session on e for sink under the cap on live
// sessions (0: no cap). At the cap it answers 503 with Retry-After and
// returns nil.
func OpenSession(w http.ResponseWriter, e *mcp.Engine, sink mcp.Sink, max int) *mcp.Session {
	if s := e.TryNewSession(sink, max); s != nil {
		return s
	}
	WriteError(w, http.StatusServiceUnavailable, &fault.Error{Code: CodeTooManySessions,
		What: "too many sessions", Why: fmt.Sprintf("the server already holds its maximum of %d live sessions", max),
		How: "retry later, close sessions you no longer use, or raise --max-sessions", RetryAfter: 10 * time.Second,
		Details: map[string]any{"max_sessions": max}})
	return nil
}

// Accepts reports which of JSON and an event stream the Accept header
// allows. A missing header accepts anything, as HTTP says; q=0 refuses.
func Accepts(r *http.Request) (json, events bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return true, true
	}
	if len(values) == 1 {
		// What the SDKs send, answered without parsing media types on
		// every request.
		switch values[0] {
		case "application/json, text/event-stream", "text/event-stream, application/json":
			return true, true
		case "application/json":
			return true, false
		case "text/event-stream":
			return false, true
		}
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					continue
				}
			}
			switch mt {
			case "*/*":
				json, events = true, true
			case "application/*", "application/json":
				json = true
			case "text/*", "text/event-stream":
				events = true
			}
		}
	}
	return json, events
}

// JSONContentType reports whether the request's Content-Type is JSON or
// absent (curl and some clients omit it; the body is checked anyway).
func JSONContentType(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// UnsupportedMediaType answers 415 for a body that is not declared JSON.
func UnsupportedMediaType(w http.ResponseWriter, r *http.Request) {
	WriteError(w, http.StatusUnsupportedMediaType, &fault.Error{Code: CodeUnsupportedMedia,
		What: fmt.Sprintf("Content-Type %q is not JSON", r.Header.Get("Content-Type")),
		Why:  "messages are JSON-RPC objects", How: "send Content-Type: application/json"})
}

// EventWriter writes server-sent events to one response, arming a write
// deadline before each write so a client that stops reading is dropped
// instead of holding the session's writer forever.
type EventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	err     error
}

// NewEventWriter wraps w; timeout bounds each write (0: none).
func NewEventWriter(w http.ResponseWriter, timeout time.Duration) *EventWriter {
	return &EventWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// Start sends the event-stream headers with status 200.
func (ew *EventWriter) Start() error {
	ew.begin()
	return ew.Flush()
}

// StartPrimed sends the event-stream headers and, at once, the event that
// makes a stream resumable (SEP-1699): an event id with empty data, which
// clients keep as their Last-Event-ID, and the reconnection delay in the
// retry field.
func (ew *EventWriter) StartPrimed(id string, retry time.Duration) error {
	ew.begin()
	ew.w.Write(fieldID)
	ew.w.Write([]byte(id))
	ew.w.Write(fieldRetry)
	ew.w.Write(strconv.AppendInt(nil, retry.Milliseconds(), 10))
	ew.w.Write(primeEnd)
	return ew.Flush()
}

// StartRetry sends the event-stream headers and a retry field alone, which
// sets the client's reconnection delay without dispatching an event.
func (ew *EventWriter) StartRetry(retry time.Duration) error {
	ew.begin()
	ew.w.Write(fieldRetry[1:]) // no leading newline: it is the first line
	ew.w.Write(strconv.AppendInt(nil, retry.Milliseconds(), 10))
	ew.w.Write(eventEnd)
	return ew.Flush()
}

func (ew *EventWriter) begin() {
	h := ew.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back
	ew.w.WriteHeader(http.StatusOK)
}

var (
	eventMessage = []byte("event: message\ndata: ")
	eventEnd     = []byte("\n\n")
	comment      = []byte(": ping\n\n")
	fieldID      = []byte("id: ")
	fieldRetry   = []byte("\nretry: ")
	primeEnd     = []byte("\ndata: \n\n")
)

// Message buffers one `event: message` carrying data, which must be one
// line (compact JSON); call Flush to send.
func (ew *EventWriter) Message(data []byte) error {
	return ew.Event("", data)
}

// Event is Message with an event id, which a client sends back as
// Last-Event-ID to resume the stream after it; "" writes none.
func (ew *EventWriter) Event(id string, data []byte) error {
	if ew.err != nil {
		return ew.err
	}
	ew.arm()
	if id != "" {
		ew.w.Write(fieldID)
		ew.w.Write([]byte(id))
		ew.w.Write(eventEnd[:1])
	}
	ew.w.Write(eventMessage)
	ew.w.Write(OneLine(data))
	_, ew.err = ew.w.Write(eventEnd)
	return ew.err
}

// KeepAlive writes and flushes an SSE comment, which clients ignore and
// proxies see as traffic.
func (ew *EventWriter) KeepAlive() error {
	if ew.err != nil {
		return ew.err
	}
	ew.arm()
	if _, ew.err = ew.w.Write(comment); ew.err != nil {
		return ew.err
	}
	return ew.Flush()
}

// Flush sends what is buffered.
func (ew *EventWriter) Flush() error {
	if ew.err != nil {
		return ew.err
	}
	ew.arm()
	ew.err = ew.rc.Flush()
	return ew.err
}

func (ew *EventWriter) arm() {
	if ew.timeout > 0 {
		_ = ew.rc.SetWriteDeadline(time.Now().Add(ew.timeout))
	}
}

// OneLine returns data without line breaks. The engine already sends
// compact JSON; this guards the SSE framing against a handler that
// returned pre-encoded, indented JSON.
func OneLine(data []byte) []byte {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return data
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err == nil {
		return buf.Bytes()
	}
	out := bytes.ReplaceAll(data, []byte("\r\n"), []byte(" "))
	out = bytes.ReplaceAll(out, []byte("\n"), []byte(" "))
	return bytes.ReplaceAll(out, []byte("\r"), []byte(" "))
}

// Defaults both HTTP transports share.
const (
	DefaultKeepAlive    = 15 * time.Second // interval of keep-alive comments
	DefaultWriteTimeout = 30 * time.Second // bound on one write to a client
)

// FillDefaults sets the unset stream settings both transports share: the
// keep-alive interval (0 → default; negative means none), the body cap
// (the engine's message cap), the write timeout and a silent logger.
func FillDefaults(e *mcp.Engine, keepAlive *time.Duration, maxBody *int64, writeTimeout *time.Duration, logger **slog.Logger) {
	if *keepAlive == 0 {
		*keepAlive = DefaultKeepAlive
	}
	if *maxBody <= 0 {
		*maxBody = int64(e.Options().MaxMessageSize)
	}
	if *writeTimeout <= 0 {
		*writeTimeout = DefaultWriteTimeout
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
}
