package h1

import (
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
// The fields are appended to fields, which callers reuse.
func parseHead(buf []byte, fields []field) (h head, ok bool) {
	h.size = len(buf)
	h.fields = fields[:0]
	// One string for the whole head: every field is a substring of it.
	s := string(buf[:len(buf)-4])
	line, rest, _ := strings.Cut(s, "\r\n")
	method, line, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(line, " ")
	if !ok1 || !ok2 || proto != "HTTP/1.1" || !isToken(method) || !validTarget(target) {
		return head{}, false
	}
	h.method, h.target = method, target
	h.path, h.query, _ = strings.Cut(target, "?")
	hosts, lengths := 0, 0
	for rest != "" {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		name, value, found := strings.Cut(l, ":")
		if !found || !isToken(name) {
			return head{}, false // includes folded lines, which start with a space
		}
		value = strings.Trim(value, " \t")
		if !validValue(value) {
			return head{}, false
		}
		name = textproto.CanonicalMIMEHeaderKey(name)
		switch name {
		case "Host":
			hosts++
			h.host = value
			continue // net/http keeps it out of the header map too
		case "Content-Length":
			lengths++
			n, ok := parseLength(value)
			if !ok {
				return head{}, false
			}
			h.contentLength = n
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer":
			return head{}, false
		case "Connection":
			for _, opt := range strings.Split(value, ",") {
				switch strings.ToLower(strings.Trim(opt, " \t")) {
				case "close":
					h.close = true
				case "keep-alive":
				default:
					return head{}, false
				}
			}
		}
		h.fields = append(h.fields, field{name, value})
	}
	if hosts != 1 || lengths != 1 || !validHost(h.host) {
		return head{}, false
	}
	return h, true
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
func isToken(s string) bool {
	if s == "" {
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
func validTarget(t string) bool {
	if t == "" || t[0] != '/' {
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
func validValue(v string) bool {
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
