package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// What a 2026-07-28 request over HTTP mirrors in headers, for the
// transport to check against the body before the request is dispatched.

// ParamHeader is a tool argument its input schema marks with x-mcp-header:
// a modern HTTP client mirrors it in the header Mcp-Param-<Header>.
type ParamHeader struct {
	Property string
	Header   string
}

// ParamHeaders returns the arguments tool mirrors in headers (none for an
// unknown tool).
func (e *Engine) ParamHeaders(ctx context.Context, tool string) ([]ParamHeader, error) {
	if e.srv.Tools == nil {
		return nil, nil
	}
	tools, err := e.srv.Tools.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		if t.Name != tool {
			continue
		}
		// Every modern tools/call over HTTP asks, and a schema seldom
		// changes: it is read once for as long as its bytes stay the same.
		if c, ok := e.paramHeaders.Load(tool); ok && bytes.Equal(c.(*paramHeaders).schema, t.InputSchema) {
			return c.(*paramHeaders).headers, nil
		}
		headers := readParamHeaders(t.InputSchema)
		e.paramHeaders.Store(tool, &paramHeaders{schema: bytes.Clone(t.InputSchema), headers: headers})
		return headers, nil
	}
	return nil, nil
}

// paramHeaders is what ParamHeaders read from one tool's input schema.
type paramHeaders struct {
	schema  json.RawMessage
	headers []ParamHeader
}

// readParamHeaders lists the properties schema marks with x-mcp-header
// (none when it is not an object schema).
func readParamHeaders(schema json.RawMessage) []ParamHeader {
	var s struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []ParamHeader
	for name, p := range s.Properties {
		if p.Header != "" {
			out = append(out, ParamHeader{Property: name, Header: p.Header})
		}
	}
	return out
}

// SameParamValue reports whether a header value v mirrors the argument
// raw: a string as it is, a number numerically (42 and 42.0 agree), a
// boolean as true or false.
func SameParamValue(raw json.RawMessage, v string) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == v
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b) == v
	}
	var n, hv float64
	if json.Unmarshal(raw, &n) == nil {
		var err error
		hv, err = strconv.ParseFloat(v, 64)
		return err == nil && hv == n
	}
	return false
}
