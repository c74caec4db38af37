package mcp

import (
	"encoding/json"

	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
)

// The hot results (prompts/get, text tool results) are encoded by hand:
// encoding/json reflects over them and escapes through a generic path,
// which profiles showed as the largest cost of a prompts/get after decoding.
// Everything else goes through encoding/json. The output is compact JSON
// without HTML escaping, byte for byte what encodeJSON produces (a test
// checks both ways give the same bytes).

// appendFast appends v's JSON when v is one of the hot result shapes and
// reports whether it did.
func appendFast(dst []byte, v any) ([]byte, bool) {
	switch r := v.(type) {
	case *GetPromptResult:
		if r.Meta != nil {
			return dst, false
		}
		for _, m := range r.Messages {
			if !plainText(m.Content) {
				return dst, false
			}
		}
		dst = append(dst, '{')
		if r.Description != "" {
			dst = append(dst, `"description":`...)
			dst = jsonstr.Append(dst, r.Description)
			dst = append(dst, ',')
		}
		dst = append(dst, `"messages":[`...)
		for i, m := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = jsonstr.Append(dst, m.Role)
			dst = append(dst, `,"content":`...)
			dst = appendTextContent(dst, m.Content)
			dst = append(dst, '}')
		}
		return append(dst, ']', '}'), true
	case *CallToolResult:
		if r.Meta != nil {
			return dst, false
		}
		for _, c := range r.Content {
			if !plainText(c) {
				return dst, false
			}
		}
		var structured []byte
		switch sc := r.StructuredContent.(type) {
		case nil:
		case json.RawMessage:
			// Encoded by the tool already (it is valid JSON: see CallToolResult).
			structured = sc
		default:
			// Encoded first, so that a failure leaves dst as it was; the
			// buffer is done with once its bytes are copied into dst below.
			buf := getBuffer()
			defer putBuffer(buf)
			if encodeJSON(buf, sc) != nil {
				return dst, false
			}
			structured = buf.Bytes()
		}
		dst = append(dst, `{"content":[`...)
		for i, c := range r.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTextContent(dst, c)
		}
		dst = append(dst, ']')
		if structured != nil {
			dst = append(dst, `,"structuredContent":`...)
			dst = append(dst, structured...)
		}
		if r.IsError {
			dst = append(dst, `,"isError":true`...)
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// fastSize estimates what appendFast will write for v, from what v can
// tell without encoding anything: every optional member counted as present,
// text with room for its escapes (see escapedSize), and structuredContent
// when it is encoded already. It is 0 for the shapes appendFast does not
// take.
func fastSize(v any) int {
	switch r := v.(type) {
	case *GetPromptResult:
		n := len(`{"description":"","messages":[]}`) + escapedSize(r.Description)
		for _, m := range r.Messages {
			n += len(`{"role":"","content":},`) + len(m.Role) + textContentSize(m.Content)
		}
		return n
	case *CallToolResult:
		n := len(`{"content":[],"structuredContent":,"isError":true}`)
		for _, c := range r.Content {
			n += len(",") + textContentSize(c)
		}
		if sc, ok := r.StructuredContent.(json.RawMessage); ok {
			n += len(sc)
		}
		return n
	}
	return 0
}

func textContentSize(c Content) int {
	return len(`{"type":"text","text":""}`) + escapedSize(c.Text)
}

// escapedSize is room for s escaped: prompts are text with a newline or
// a quote every few words, each of which escapes to two bytes. Text that
// needs more only makes the buffer grow once more.
func escapedSize(s string) int { return len(s) + len(s)/8 + 16 }

// plainText reports whether c is a text block with nothing but its text.
func plainText(c Content) bool {
	return c.Type == "text" && c.Data == "" && c.MimeType == "" && c.Resource == nil &&
		c.URI == "" && c.Name == "" && c.Annotations == nil
}

func appendTextContent(dst []byte, c Content) []byte {
	dst = append(dst, `{"type":"text"`...)
	if c.Text != "" {
		dst = append(dst, `,"text":`...)
		dst = jsonstr.Append(dst, c.Text)
	}
	return append(dst, '}')
}
