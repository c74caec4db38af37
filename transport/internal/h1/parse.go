package h1

import (
	"bytes"
	"net/textproto"
	"strconv"
	"strings"
)

// head is a request head the light path takes on.
type head struct {
	size          int // bytes, the blank line included
	method        string
	target        string // as sent: path and query
	path, query   string
	host          string
	contentLength int64
	close         bool    // Connection: close
	fields        []field // every header but Host, names canonical
}

type field struct{ name, value string }

// parseHead parses buf, a whole head ending in "\r\n\r\n", when it is in
// the strict form the light path serves: request line "METHOD /path[?query]
// HTTP/1.1", one Host, one Content-Length, header names that are tokens,
// values of visible ASCII, spaces and tabs. Anything else (including what
// HTTP allows but is rare: folded lines, Transfer-Encoding, Expect,
// Upgrade, other Connection options, escapes in the path) is left to
// net/http: ok is false.
//
// The fields are appended to fields, which callers reuse. cache, when not
// nil, holds the connection's previous head: a client sends the same lines
// on every request of a connection, and a line seen before takes the
// strings made for it then instead of new ones.
func parseHead(buf []byte, fields []field, cache *lineCache) (h head, ok bool) {
	h.size = len(buf)
	h.fields = fields[:0]
	rest := buf[:len(buf)-4]
	reqLine, rest := cutLine(rest)
	if cache != nil && cache.request != "" && string(reqLine) == cache.request {
		h.method, h.target = cache.method, cache.target
	} else {
		method, line, ok1 := bytes.Cut(reqLine, []byte(" "))
		target, proto, ok2 := bytes.Cut(line, []byte(" "))
		if !ok1 || !ok2 || string(proto) != "HTTP/1.1" || !isToken(method) || !validTarget(target) {
			return head{}, false
		}
		h.method, h.target = methodString(method), string(target)
		if cache != nil {
			cache.request, cache.method, cache.target = string(reqLine), h.method, h.target
		}
	}
	h.path, h.query, _ = strings.Cut(h.target, "?")
	hosts, lengths := 0, 0
	for i := 0; len(rest) > 0; i++ {
		var l []byte
		l, rest = cutLine(rest)
		var f field
		if cache != nil && i < len(cache.lines) && string(l) == cache.lines[i].raw {
			f = cache.lines[i].field
		} else {
			name, value, found := bytes.Cut(l, []byte(":"))
			if !found || !isToken(name) {
				return head{}, false // includes folded lines, which start with a space
			}
			value = bytes.Trim(value, " \t")
			if !validValue(value) {
				return head{}, false
			}
			f = field{textproto.CanonicalMIMEHeaderKey(string(name)), string(value)}
			if cache != nil {
				cache.remember(i, l, f)
			}
		}
		switch f.name {
		case "Host":
			hosts++
			h.host = f.value
			continue // net/http keeps it out of the header map too
		case "Content-Length":
			lengths++
			n, ok := parseLength(f.value)
			if !ok {
				return head{}, false
			}
			h.contentLength = n
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer":
			return head{}, false
		case "Connection":
			for _, opt := range strings.Split(f.value, ",") {
				switch strings.ToLower(strings.Trim(opt, " \t")) {
				case "close":
					h.close = true
				case "keep-alive":
				default:
					return head{}, false
				}
			}
		}
		h.fields = append(h.fields, f)
	}
	if hosts != 1 || lengths != 1 || !validHost(h.host) {
		return head{}, false
	}
	return h, true
}

// lineCache is a connection's previous head, line by line.
type lineCache struct {
	request        string // the request line
	method, target string
	lines          []cachedLine
}

type cachedLine struct {
	raw   string
	field field
}

func (c *lineCache) remember(i int, raw []byte, f field) {
	if i > 64 {
		return // a head this long is not worth keeping
	}
	for len(c.lines) <= i {
		c.lines = append(c.lines, cachedLine{})
	}
	c.lines[i] = cachedLine{string(raw), f}
}

func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.Index(b, []byte("\r\n")); i >= 0 {
		return b[:i], b[i+2:]
	}
	return b, nil
}

// methodString spares an allocation for the methods clients use.
func methodString(m []byte) string {
	switch string(m) {
	case "POST":
		return "POST"
	case "GET":
		return "GET"
	case "DELETE":
		return "DELETE"
	}
	return string(m)
}

func parseLength(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// isToken: RFC 9110 tchar.
func isToken(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return false
		}
	}
	return true
}

var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validTarget: an absolute path with an optional query, in visible ASCII,
// with no escapes in the path (the light path compares it as sent, and
// net/http would unescape it) and no fragment.
func validTarget(t []byte) bool {
	if len(t) == 0 || t[0] != '/' {
		return false
	}
	inPath := true
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
		if c == '?' {
			inPath = false
		}
		if inPath && c == '%' {
			return false
		}
	}
	return true
}

// validValue: visible ASCII, spaces and tabs.
func validValue(v []byte) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// validHost: a host name, IPv4 or bracketed IPv6 address, and an optional
// port; no user info or anything else net/http would question.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}
