// Package hostguard decides which Host and Origin headers a listener of
// flowyprompt answers. A server on 127.0.0.1 is reachable from every web
// page the user opens: a page whose DNS name is rebound to 127.0.0.1 sends
// requests with its own Host (and Origin), so every listener, the MCP one
// and the Prometheus one alike, checks Host against one allow list built
// here, and the MCP listener checks Origin with ParseOrigin.
package hostguard

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// Hosts is a Host allow list: names allowed on any port, and exact
// name:port pairs. It is read only once built, by any goroutine.
type Hosts struct {
	any     bool
	anyPort map[string]bool
	exact   map[string]bool
}

// Config says what a listener's Host allow list holds.
type Config struct {
	// ListenHost is the host of the listen address: allowed with Port
	// when it is a specific address (not "" or 0.0.0.0).
	ListenHost string
	// Port is the bound port: the loopback names (localhost, 127.0.0.1,
	// [::1]) are allowed with it; on port 80, with no port as well.
	Port string
	// Public, when set, is the URL clients use behind a reverse proxy:
	// its host is allowed.
	Public *url.URL
	// Allowed are extra values, "name" (any port) or "name:port"; "*"
	// turns the check off (--allowed-hosts).
	Allowed []string
}

// New builds the allow list c describes.
func New(c Config) *Hosts {
	h := &Hosts{anyPort: map[string]bool{}, exact: map[string]bool{}}
	names := []string{"localhost", "127.0.0.1", "::1"}
	if lh := strings.ToLower(c.ListenHost); lh != "" {
		if ip := net.ParseIP(lh); ip == nil || !ip.IsUnspecified() {
			names = append(names, lh)
		}
	}
	if c.Port != "" && c.Port != "0" {
		for _, n := range names {
			h.exact[net.JoinHostPort(n, c.Port)] = true
			if c.Port == "80" {
				h.anyPort[n] = true
			}
		}
	}
	if c.Public != nil {
		h.exact[strings.ToLower(c.Public.Host)] = true
		if c.Public.Port() == "" {
			h.exact[strings.ToLower(c.Public.Hostname())] = true
		}
	}
	for _, a := range c.Allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case a == "":
		case a == "*":
			h.any = true
		default:
			if name, p, err := net.SplitHostPort(a); err == nil {
				h.exact[net.JoinHostPort(name, p)] = true
			} else {
				h.anyPort[strings.Trim(a, "[]")] = true
			}
		}
	}
	return h
}

// Allowed reports whether a request's Host header is on the list.
func (h *Hosts) Allowed(host string) bool {
	if h.any {
		return true
	}
	host = strings.ToLower(host)
	if name, port, err := net.SplitHostPort(host); err == nil {
		return h.exact[net.JoinHostPort(name, port)] || h.anyPort[name]
	}
	return h.exact[host] || h.anyPort[strings.Trim(host, "[]")]
}

// ErrNotOrigin is ParseOrigin's error for a value that is not the origin
// of an http(s) page.
var ErrNotOrigin = errors.New("not an http(s) origin: want scheme://host[:port], without user, path, query or fragment")

// ParseOrigin reads an Origin header (or an --allowed-origins value) with
// net/url and returns it as scheme://host[:port], lower case. A browser
// sends exactly that; anything else is refused, so that what passes the
// check is what is compared and echoed: user information
// ("http://evil.com@localhost" is a page of localhost to a careless
// parser and of evil.com to nobody), a fragment, a query or a path, an
// opaque or relative value, "null" (sandboxed frames, file:// pages), a
// scheme other than http and https, percent-encoding (which would hide a
// host from the comparison) and control characters. A single
// trailing "/" is taken, as people write origins with one.
func ParseOrigin(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(origin, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" ||
		u.User != nil || u.Path != "" || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		strings.ContainsAny(origin, "@#?%\\ \t") {
		return "", ErrNotOrigin
	}
	if port := u.Port(); port == "" && strings.HasSuffix(u.Host, ":") {
		return "", ErrNotOrigin // "http://host:" names no port
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// Loopback reports whether host (a name or an IP, without a port) is this
// machine: localhost, or a loopback address. What listens only there, or
// may speak plain HTTP there, asks it.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
