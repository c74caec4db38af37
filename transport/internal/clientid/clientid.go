// Package clientid says which client an HTTP request comes from, for the
// caps the server keeps per client (sessions, listen streams): the
// credential it presented when it presented one, else its address. Behind
// a reverse proxy every request comes from the proxy's address, so the
// address a trusted proxy reports in X-Forwarded-For is believed instead,
// and only from the proxies the operator listed: a client talking to the
// server directly could write any address there.
//
// A key names a client without saying who it is: a credential becomes a
// part of its digest, never the credential itself. Keys are for counting
// and are never shown.
package clientid

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/realclientip/realclientip-go"
)

// Proxies are the reverse proxies whose X-Forwarded-For is believed. The
// zero value trusts none: every request is its peer's.
type Proxies struct {
	ranges []netip.Prefix
	// xff finds, in X-Forwarded-For, the rightmost address that is not a
	// trusted proxy: the one the first trusted proxy saw connecting.
	xff realclientip.Strategy
}

// ParseProxies reads the trusted proxies: addresses (10.0.0.7, ::1) and
// CIDR ranges (10.0.0.0/8, fd00::/8), each its own item. An item that is
// neither is an error naming it.
func ParseProxies(items []string) (Proxies, error) {
	var p Proxies
	var trimmed []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it == "" {
			continue
		}
		if strings.Contains(it, "/") {
			pfx, err := netip.ParsePrefix(it)
			if err != nil || pfx.Addr().Zone() != "" {
				return Proxies{}, fmt.Errorf("trusted proxy %q: want an address or a CIDR range such as 10.0.0.0/8 or fd00::/8", it)
			}
			if pfx.Addr().Is4In6() {
				// Addresses are compared unmapped: an IPv4-mapped range
				// is the IPv4 range it maps.
				if pfx.Bits() < 96 {
					return Proxies{}, fmt.Errorf("trusted proxy %q: an IPv4-mapped range shorter than /96 mixes IPv4 and IPv6: list them apart", it)
				}
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
			}
			p.ranges = append(p.ranges, pfx.Masked())
		} else {
			a, err := netip.ParseAddr(it)
			if err != nil || a.Zone() != "" {
				return Proxies{}, fmt.Errorf("trusted proxy %q: want an address or a CIDR range such as 10.0.0.0/8 or fd00::/8", it)
			}
			a = a.Unmap()
			p.ranges = append(p.ranges, netip.PrefixFrom(a, a.BitLen()))
		}
		trimmed = append(trimmed, it)
	}
	if len(p.ranges) == 0 {
		return Proxies{}, nil
	}
	nets, err := realclientip.AddressesAndRangesToIPNets(trimmed...)
	if err != nil {
		return Proxies{}, fmt.Errorf("trusted proxies: %w", err)
	}
	strat, err := realclientip.NewRightmostTrustedRangeStrategy("X-Forwarded-For", nets)
	if err != nil {
		return Proxies{}, fmt.Errorf("trusted proxies: %w", err)
	}
	p.xff = strat
	return p, nil
}

// Trusts reports whether a is one of the trusted proxies.
func (p Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, r := range p.ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

// Addr returns the address r comes from: its peer's, or, when the peer is
// a trusted proxy, the rightmost address of X-Forwarded-For that is not a
// trusted proxy. A header that names no such address (absent, garbled,
// only proxies) leaves the peer's: the request is counted as the proxy's
// own. The zero Addr means the peer's address could not be read.
func (p Proxies) Addr(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if p.xff == nil || !peer.IsValid() || !p.Trusts(peer) {
		return peer
	}
	if ip := p.xff.ClientIP(r.Header, r.RemoteAddr); ip != "" {
		if a, err := netip.ParseAddr(ip); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	return peer
}

func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(remote); err == nil {
		remote = host
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// ipv6Block is the part of an IPv6 address that names a client: a
// network hands a host a /64 and the host picks the rest at will, so one
// machine could otherwise be any number of clients.
const ipv6Block = 64

// ForAddr is the key of a client known by its address: the address, or
// for IPv6 its /64.
func ForAddr(a netip.Addr) string {
	if !a.IsValid() {
		return "addr unknown"
	}
	if a.Is6() {
		return "addr " + netip.PrefixFrom(a, ipv6Block).Masked().String()
	}
	return "addr " + a.String()
}

// ForCredential is the key of a client known by the credential it
// presented: part of its digest, never the credential.
func ForCredential(credential string) string {
	sum := sha256.Sum256([]byte("flowyprompt client " + credential))
	return "credential " + hex.EncodeToString(sum[:12])
}

type keyCtx struct{}

// With returns ctx carrying the client key.
func With(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// Of returns the key of r's client: the one With gave its context, else
// the key of its peer's address.
func Of(r *http.Request) string {
	if k, ok := r.Context().Value(keyCtx{}).(string); ok && k != "" {
		return k
	}
	return ForAddr(peerAddr(r.RemoteAddr))
}
