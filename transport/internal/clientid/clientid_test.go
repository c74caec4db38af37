package clientid

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParseProxies(t *testing.T) {
	for _, tc := range []struct {
		items   []string
		trusted []string
		not     []string
		err     string
	}{
		{items: nil, not: []string{"127.0.0.1", "::1"}},
		{items: []string{" 10.0.0.0/8 ", "", "192.0.2.7"}, trusted: []string{"10.1.2.3", "192.0.2.7", "::ffff:10.0.0.1"}, not: []string{"192.0.2.8", "11.0.0.1"}},
		{items: []string{"fd00::/8", "::1"}, trusted: []string{"fd12::1", "::1"}, not: []string{"fe80::1", "127.0.0.1"}},
		{items: []string{"10.0.0.1/8"}, trusted: []string{"10.200.0.1"}}, // host bits are masked
		{items: []string{"10.0.0.0/33"}, err: `trusted proxy "10.0.0.0/33"`},
		{items: []string{"proxy.example.com"}, err: `trusted proxy "proxy.example.com": want an address or a CIDR range`},
		{items: []string{"fe80::1%eth0"}, err: `trusted proxy "fe80::1%eth0"`},
		{items: []string{"fe80::/10%eth0"}, err: `trusted proxy "fe80::/10%eth0"`},
	} {
		p, err := ParseProxies(tc.items)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseProxies(%q) = %v, want an error with %q", tc.items, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseProxies(%q): %v", tc.items, err)
			continue
		}
		for _, a := range tc.trusted {
			if !p.Trusts(netip.MustParseAddr(a)) {
				t.Errorf("ParseProxies(%q) does not trust %s", tc.items, a)
			}
		}
		for _, a := range tc.not {
			if p.Trusts(netip.MustParseAddr(a)) {
				t.Errorf("ParseProxies(%q) trusts %s", tc.items, a)
			}
		}
	}
}

// TestAddr: X-Forwarded-For is believed from a trusted proxy only, and of
// it only the rightmost address that is not a trusted proxy: what the
// first trusted proxy saw connecting. Whatever a client writes left of it
// is not read.
func TestAddr(t *testing.T) {
	proxies, err := ParseProxies([]string{"10.0.0.0/8", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		proxies Proxies
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies: the peer", Proxies{}, "192.0.2.1:5000", []string{"198.51.100.1"}, "192.0.2.1"},
		{"untrusted peer: header ignored", proxies, "192.0.2.1:5000", []string{"198.51.100.1"}, "192.0.2.1"},
		{"trusted peer: the client it saw", proxies, "10.0.0.2:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"forged hops left of it", proxies, "10.0.0.2:5000", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", proxies, "10.0.0.2:5000", []string{"198.51.100.1, 10.0.0.9", "10.0.0.3"}, "198.51.100.1"},
		{"only proxies: the peer", proxies, "10.0.0.2:5000", []string{"10.0.0.9"}, "10.0.0.2"},
		{"garbled: the peer", proxies, "10.0.0.2:5000", []string{"198.51.100.1, not-an-address"}, "10.0.0.2"},
		{"no header: the peer", proxies, "10.0.0.2:5000", nil, "10.0.0.2"},
		{"IPv6 proxy, IPv4-mapped client", proxies, "[fd00::2]:5000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"IPv4-mapped peer", proxies, "[::ffff:10.0.0.2]:5000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"unreadable peer", proxies, "pipe", []string{"198.51.100.1"}, "invalid IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/sse", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := tc.proxies.Addr(r).String(); got != tc.want {
				t.Errorf("Addr = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"192.0.2.1", "192.0.2.1", true},
		{"192.0.2.1", "192.0.2.2", false},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true}, // one /64
		{"2001:db8:1:2::1", "2001:db8:1:3::1", false},
	} {
		ka, kb := ForAddr(netip.MustParseAddr(tc.a)), ForAddr(netip.MustParseAddr(tc.b))
		if (ka == kb) != tc.same {
			t.Errorf("ForAddr(%s) = %q, ForAddr(%s) = %q; same client %v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.same)
		}
	}
	if k := ForCredential("s3cret-token"); strings.Contains(k, "s3cret") || k == ForCredential("other") || k != ForCredential("s3cret-token") {
		t.Errorf("ForCredential = %q: must not show the token, and must tell tokens apart", k)
	}
	r := httptest.NewRequest(http.MethodGet, "/sse", nil)
	r.RemoteAddr = "192.0.2.1:4000"
	if got := Of(r); got != ForAddr(netip.MustParseAddr("192.0.2.1")) {
		t.Errorf("Of without a key = %q, want the peer's", got)
	}
	if got := Of(r.WithContext(With(context.Background(), "k"))); got != "k" {
		t.Errorf("Of = %q, want the key given", got)
	}
}

// FuzzParseProxies: any list is parsed or refused with an error, never a
// panic, and what is trusted contains the addresses the items name.
func FuzzParseProxies(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::1", "fd00::/8,192.0.2.7", "1.2.3.4/33", "x", "fe80::1%eth0", "::ffff:10.0.0.0/104", "0.0.0.0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		items := strings.Split(list, ",")
		p, err := ParseProxies(items)
		if err != nil {
			return
		}
		for _, it := range items {
			it = strings.TrimSpace(it)
			addr, _, _ := strings.Cut(it, "/")
			if a, err := netip.ParseAddr(addr); err == nil && it != "" && !p.Trusts(a) {
				t.Errorf("ParseProxies(%q) does not trust %s, which %q names", items, a, it)
			}
		}
	})
}

// FuzzAddr: whatever X-Forwarded-For says, Addr never panics, never
// believes it from an untrusted peer, and from a trusted one returns an
// address the header or the peer named.
func FuzzAddr(f *testing.F) {
	for _, s := range []string{"198.51.100.1", "203.0.113.9, 198.51.100.1", "10.0.0.9", "garbage", "[2001:db8::1]:80", "fe80::1%eth0", ", ,", "::ffff:1.2.3.4"} {
		f.Add("10.0.0.2:5000", s)
		f.Add("192.0.2.1:5000", s)
	}
	proxies, err := ParseProxies([]string{"10.0.0.0/8", "fd00::/8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, peer, xff string) {
		r := httptest.NewRequest(http.MethodGet, "/sse", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		got := proxies.Addr(r)
		direct := peerAddr(peer)
		if !direct.IsValid() || !proxies.Trusts(direct) {
			if got != direct {
				t.Fatalf("peer %q untrusted: Addr = %v, want the peer's %v", peer, got, direct)
			}
			return
		}
		if got == direct {
			return
		}
		if !got.IsValid() || proxies.Trusts(got) || !strings.Contains(xff, strings.SplitN(got.String(), ":", 2)[0]) && got.Is4() {
			t.Fatalf("peer %q, X-Forwarded-For %q: Addr = %v, not a client the header named", peer, xff, got)
		}
		_ = ForAddr(got)
	})
}
