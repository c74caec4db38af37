package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// event is one server-sent event.
type event struct {
	name string // "message" when the stream names none
	data []byte
}

// eventReader reads server-sent events (the text/event-stream format): lines
// "event: X" and "data: Y", comments starting with ':', and a blank line
// ending each event. Data lines are joined with '\n', as the format says.
type eventReader struct {
	r    *bufio.Reader
	data []byte // the last event's data, reused
}

// newEventReader keeps its buffer small (an idle-sessions run holds a
// thousand streams open); longer lines are assembled in next.
func newEventReader(r io.Reader) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// maxEvent bounds one event, so a server that never ends an event cannot
// make the load generator grow without limit.
const maxEvent = 16 << 20

// reset reads r from now on, keeping the buffers.
func (e *eventReader) reset(r io.Reader) { e.r.Reset(r) }

// next returns the next event with data; events with none (keep-alive
// comments, a lone "event:" line, the empty data of a priming event) are
// skipped. The event's data is valid until the next call.
func (e *eventReader) next() (event, error) {
	var ev event
	data := e.data[:0]
	hasData := false
	for {
		line, err := e.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long data line: collect the rest of it.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = e.r.ReadSlice('\n')
				full = append(full, line...)
				if len(full) > maxEvent {
					return event{}, fmt.Errorf("event larger than %d bytes", maxEvent)
				}
			}
			line = full
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return event{}, io.EOF
			}
			if !errors.Is(err, io.EOF) {
				return event{}, err
			}
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData && len(data) > 0 {
				if ev.name == "" {
					ev.name = "message"
				}
				ev.data = data
				e.data = data
				return ev, nil
			}
			ev, data, hasData = event{}, data[:0], false
			if err != nil {
				return event{}, io.EOF
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			switch string(value) { // compared without allocating
			case "message":
				ev.name = "message"
			case "endpoint":
				ev.name = "endpoint"
			default:
				ev.name = string(value)
			}
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			if len(data) > maxEvent {
				return event{}, fmt.Errorf("event larger than %d bytes", maxEvent)
			}
		}
		if err != nil {
			// EOF in the middle of an event: the stream ended without the
			// blank line, so the event is incomplete.
			return event{}, io.ErrUnexpectedEOF
		}
	}
}

// envelope is the part of a JSON-RPC message the drivers look at.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  json.RawMessage `json:"error"`
}

// isResponse reports whether m answers a request, rather than being a
// request or notification from the server.
func (m envelope) isResponse() bool { return m.Method == "" }

// isFailure reports whether a response line is a JSON-RPC error or a tool
// result flagged isError. Inside JSON text these keys would be escaped
// (\"error\":), so a plain substring test does not misfire on content.
func isFailure(msg []byte) bool {
	return bytes.Contains(msg, []byte(`"error":`)) || bytes.Contains(msg, []byte(`"isError":true`))
}

// check classifies a measured response: "" when it is good, else a reason
// quoting the start of the message.
func check(msg, expect []byte) string {
	if isFailure(msg) || (expect != nil && !bytes.Contains(msg, expect)) {
		return string(msg[:min(len(msg), 300)])
	}
	return ""
}
