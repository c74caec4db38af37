package h1

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// response is the light path's http.ResponseWriter. An answer is buffered
// and written with its head in one system call when the handler returns;
// a handler that flushes (an event stream) turns it into a chunked stream.
type response struct {
	c           *conn
	header      http.Header // reused per connection, cleared each time
	status      int
	wroteHeader bool
	streaming   bool
	closeAfter  bool
	buf         []byte // the body so far, or the pending chunk
	out         []byte // what goes on the wire, reused
	err         error
}

func (w *response) reset(c *conn, closeAfter bool) {
	w.c = c
	if w.header == nil {
		w.header = make(http.Header, 8)
	}
	clear(w.header)
	w.status, w.wroteHeader, w.streaming, w.closeAfter, w.err = 0, false, false, closeAfter, nil
	w.buf = w.buf[:0]
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader || code < 100 || code > 999 {
		return
	}
	if code < 200 {
		return // no interim answers on the light path
	}
	w.status, w.wroteHeader = code, true
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush sends what is written so far; the first flush commits the head
// and makes the rest of the answer a chunked stream.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting the write's error (http.ResponseController
// uses it).
func (w *response) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	out := w.out[:0]
	if !w.streaming {
		w.streaming = true
		w.header.Del("Content-Length")
		out = w.appendHead(out, -1)
		// Only streams pay for a watch on the connection: a buffered
		// answer is written as soon as its handler returns.
		w.c.rd.startWatch(w.c.cancel)
	}
	out = appendChunk(out, w.buf)
	w.buf = w.buf[:0]
	return w.write(out)
}

// SetWriteDeadline bounds the next writes (http.ResponseController).
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }

// finish completes the answer after the handler returned.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	if w.streaming {
		out := appendChunk(w.out[:0], w.buf)
		out = append(out, "0\r\n\r\n"...)
		w.buf = w.buf[:0]
		return w.write(out)
	}
	if w.c.s.closing.Load() {
		w.closeAfter = true // shutting down: this answer is the connection's last
	}
	out := w.appendHead(w.out[:0], len(w.buf))
	out = append(out, w.buf...)
	return w.write(out)
}

func (w *response) write(out []byte) error {
	w.out = out[:0]
	if _, err := w.c.nc.Write(out); err != nil {
		w.err = err
		w.closeAfter = true
		return err
	}
	return nil
}

// appendHead writes the status line and headers; length is the body's
// size, or -1 for a chunked stream.
func (w *response) appendHead(out []byte, length int) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(w.status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(w.status)...)
	out = append(out, "\r\n"...)
	h := w.header
	if length > 0 && h.Get("Content-Type") == "" {
		// What net/http does for a handler that named no type.
		h.Set("Content-Type", http.DetectContentType(w.buf))
	}
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, k...)
			out = append(out, ": "...)
			out = appendValue(out, v)
			out = append(out, "\r\n"...)
		}
	}
	out = append(out, "Date: "...)
	out = append(out, date()...)
	out = append(out, "\r\n"...)
	switch {
	case length < 0:
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	case !bodyAllowed(w.status):
	case h.Get("Content-Length") == "":
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, int64(length), 10)
		out = append(out, "\r\n"...)
	}
	if w.closeAfter {
		out = append(out, "Connection: close\r\n"...)
	}
	return append(out, "\r\n"...)
}

// appendValue writes a header value with line breaks turned into spaces,
// as net/http does, so no value can end the head early.
func appendValue(out []byte, v string) []byte {
	if !strings.ContainsAny(v, "\r\n") {
		return append(out, v...)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		out = append(out, c)
	}
	return out
}

func appendChunk(out, data []byte) []byte {
	if len(data) == 0 {
		return out
	}
	out = strconv.AppendInt(out, int64(len(data)), 16)
	out = append(out, "\r\n"...)
	out = append(out, data...)
	return append(out, "\r\n"...)
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// date is the Date header's value, formatted once a second.
func date() string {
	now := time.Now().Unix()
	if d := cachedDate.Load(); d != nil && d.unix == now {
		return d.text
	}
	d := &dateText{unix: now, text: time.Unix(now, 0).UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	unix int64
	text string
}

var cachedDate atomic.Pointer[dateText]
