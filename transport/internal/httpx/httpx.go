// Package httpx holds what the two HTTP transports share: errors written as
// JSON-RPC error bodies that explain themselves, capped body reading, the
// admission of sessions and listen streams under the caps (Gate), Accept
// parsing and an SSE event writer with write deadlines.
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
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/sourcegraph/jsonrpc2"
)

// WriteError answers r with status and a JSON-RPC error body (id null:
// no request is being answered) whose error object is mcp.ErrorObject's,
// the one mapping from errors to JSON-RPC codes; its data carries the
// symbolic code and what / why / how. A RetryAfter also becomes the
// Retry-After header.
//
// A request with a body is answered on a connection that closes after
// the answer: most errors refuse a request before its body is read, and
// net/http would otherwise read the rest of the body first, to keep the
// connection for another request, so a body that never finishes would
// hold the refusal back.
func WriteError(w http.ResponseWriter, r *http.Request, status int, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	SetRetryAfter(w, err)
	body, merr := json.Marshal(errorBody{JSONRPC: "2.0", Error: mcp.ErrorObject(err)})
	if merr != nil {
		// ErrorObject's data is JSON it marshalled itself; this cannot fail.
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// SetRetryAfter sets the Retry-After header from err's RetryAfter, when
// it has one: for answers written otherwise than by WriteError.
func SetRetryAfter(w http.ResponseWriter, err error) {
	if f := fault.As(err); f != nil && f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(f.RetryAfter.Seconds())), 10))
	}
}

type errorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *struct{}       `json:"id"` // always null
	Error   *jsonrpc2.Error `json:"error"`
}

// SessionNotFound is the 404 for a session id that names no live session.
func SessionNotFound(how string) *fault.Error {
	return &fault.Error{Code: mcp.CodeSessionNotFound, What: "unknown session",
		Why: "the session id names no live session: it never existed, was closed, or expired after being idle",
		How: how}
}

// MethodNotAllowed answers 405 with the Allow header.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	WriteError(w, r, http.StatusMethodNotAllowed, &fault.Error{Code: mcp.CodeMethodNotAllowed,
		What: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path),
		Why:  "this endpoint answers only " + strings.Join(allow, ", "),
		How:  "use one of the allowed methods"})
}

// ReadBody reads a request body of at most max bytes, allowing the client
// timeout to send it whole (0: no limit of its own). Call it only once the
// request has passed every check that needs no body (Host, Origin, token,
// session), so that nothing unchecked is read. On failure it has already
// answered (413 for an over-size body, 400 when the read failed or timed
// out) and returns false. Memory grows with what actually arrives, not
// with what Content-Length claims.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, bool) {
	return readBody(w, r, max, timeout, 64<<10)
}

// readBody is ReadBody, taking a body of a known length up to exact bytes
// in one allocation of that length.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration, exact int64) ([]byte, bool) {
	tooLarge := func(size int64) {
		d := map[string]any{"max": max}
		if size > 0 {
			d["size"] = size
		}
		WriteError(w, r, http.StatusRequestEntityTooLarge, &fault.Error{Code: mcp.CodeBodyTooLarge,
			What: "request body too large", Why: fmt.Sprintf("the server accepts at most %d bytes per message", max),
			How: "send smaller arguments, or raise --max-message-size", Details: d})
	}
	if r.ContentLength > max {
		tooLarge(r.ContentLength)
		return nil, false
	}
	rc := http.NewResponseController(w)
	if timeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
	}
	var body []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= exact {
		// What nearly every message is: a known length, small enough to
		// take at once (net/http's body reads no more than it); or one
		// whose length the budget of messages in flight has granted.
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		// Unknown or large: grown as the bytes arrive, so memory follows
		// what the client sends rather than what it claims.
		buf := bytes.NewBuffer(make([]byte, 0, 512))
		_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
		body = buf.Bytes()
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge(0)
			return nil, false
		}
		what := "could not read the request body"
		if errors.Is(err, os.ErrDeadlineExceeded) {
			what = fmt.Sprintf("the request body did not arrive within %s", timeout)
		}
		WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeBadRequest, What: what,
			Why: err.Error(), How: "send the whole JSON-RPC message as the body, promptly", Err: err})
		return nil, false
	}
	if timeout > 0 {
		// The deadline is for the body: left in place, it would end the
		// connection's wait for the client to hang up while a streamed
		// answer is written, which cancels the request.
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, true
}

// ParseError is the 400 for a body that is not JSON.
func ParseError() *fault.Error {
	return &fault.Error{Code: mcp.CodeParseError, What: "the body is not valid JSON",
		Why: "a message must be one JSON-RPC object", How: `send one object such as {"jsonrpc":"2.0","id":1,"method":"ping"}`}
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
	WriteError(w, r, http.StatusUnsupportedMediaType, &fault.Error{Code: mcp.CodeUnsupportedMedia,
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
	DefaultBodyTimeout  = 30 * time.Second // bound on receiving one posted message
)

// Settings are what both HTTP transports share about streams and bodies.
type Settings struct {
	// KeepAlive is the interval of keep-alive comments on streams
	// (0: DefaultKeepAlive; negative: none).
	KeepAlive time.Duration
	// MaxBodyBytes caps a posted message (0: the engine's MaxMessageSize).
	MaxBodyBytes int64
	// WriteTimeout drops a client that has not taken a write for this long
	// (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// BodyTimeout bounds how long a client may take to send a posted
	// message once its request head has been checked (0: DefaultBodyTimeout).
	BodyTimeout time.Duration
	Logger      *slog.Logger
	// OnSession, when set, is called as a session opens, with its id,
	// before the id is handed to the client (the initialize answer, the
	// endpoint event), so that other replicas can reach the session from
	// the client's next request on; the session's end calls what it
	// returns. It must not fail the session: a session it cannot announce
	// is still served here.
	OnSession func(id string) (release func())
	// Gate admits sessions and listen streams under the server's caps,
	// one gate for both transports (nil: a gate without caps).
	Gate *Gate
	// Budget bounds the bytes of posted messages in flight, one budget
	// for both transports (nil: Budgets(DefaultMaxInflightBytes,
	// MaxBodyBytes)).
	Budget *Budget
	// Admit, when set, is asked about each posted message once it is read
	// and before it runs (POST /mcp of both eras, /sse/message and POST
	// /sse): false means it answered the POST itself (the OAuth step-up
	// challenge, 403, for a token without a scope the message needs), and
	// the message is not run.
	Admit func(w http.ResponseWriter, r *http.Request, in *mcp.Inbound) bool
}

// Fill sets what is unset to the defaults, the body cap to e's message cap.
func (st *Settings) Fill(e *mcp.Engine) {
	if st.KeepAlive == 0 {
		st.KeepAlive = DefaultKeepAlive
	}
	if st.MaxBodyBytes <= 0 {
		st.MaxBodyBytes = int64(e.Options().MaxMessageSize)
	}
	if st.WriteTimeout <= 0 {
		st.WriteTimeout = DefaultWriteTimeout
	}
	if st.BodyTimeout <= 0 {
		st.BodyTimeout = DefaultBodyTimeout
	}
	if st.Logger == nil {
		st.Logger = slog.New(slog.DiscardHandler)
	}
	if st.Gate == nil {
		st.Gate = NewGate(Limits{})
	}
	if st.Budget == nil {
		st.Budget = NewBudget(Budgets(DefaultMaxInflightBytes, st.MaxBodyBytes))
	}
}
