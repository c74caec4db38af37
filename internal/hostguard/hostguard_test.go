package hostguard

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseOrigin(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for refused
	}{
		{"http://localhost:6274", "http://localhost:6274"},
		{"https://Inspector.Example.com", "https://inspector.example.com"},
		{"HTTP://127.0.0.1", "http://127.0.0.1"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"https://inspector.example.com/", "https://inspector.example.com"},
		{"http://evil.com@localhost", ""},
		{"http://evil.com:pw@localhost:6274", ""},
		{"http://@localhost", ""},
		{"http://localhost#frag", ""},
		{"http://localhost#", ""},
		{"http://localhost/#@evil.com", ""},
		{"http://localhost/path", ""},
		{"http://localhost//", ""},
		{"http://localhost?q", ""},
		{"http://localhost?", ""},
		{"http://localhost:", ""},
		{"http://local host", ""},
		{"http://localhost\\@evil.com", ""},
		{"null", ""},
		{"file://", ""},
		{"ftp://localhost", ""},
		{"localhost:6274", ""},
		{"//localhost", ""},
		{"http:localhost", ""},
		{"http://", ""},
		{"", ""},
		{"http://localhost\x00", ""},
		{"http://%6cocalhost", ""},
		{"http://[fe80::1%25eth0]:80", ""},
	}
	for _, tc := range tests {
		got, err := ParseOrigin(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestHostsAllowed(t *testing.T) {
	public, _ := url.Parse("https://public.example.com")
	tests := []struct {
		name string
		cfg  Config
		host string
		want bool
	}{
		{"loopback with the port", Config{Port: "3000"}, "127.0.0.1:3000", true},
		{"localhost in capitals", Config{Port: "3000"}, "LOCALHOST:3000", true},
		{"[::1] with the port", Config{Port: "3000"}, "[::1]:3000", true},
		{"loopback on another port", Config{Port: "3000"}, "localhost:1", false},
		{"loopback without a port", Config{Port: "3000"}, "localhost", false},
		{"loopback without a port on 80", Config{Port: "80"}, "localhost", true},
		{"a rebound name", Config{Port: "3000"}, "evil.example.com:3000", false},
		{"a rebound name with user information", Config{Port: "3000"}, "evil@localhost:3000", false},
		{"the listen address", Config{ListenHost: "10.0.0.5", Port: "3000"}, "10.0.0.5:3000", true},
		{"every interface is no name", Config{ListenHost: "0.0.0.0", Port: "3000"}, "0.0.0.0:3000", false},
		{"the public URL's host", Config{Port: "3000", Public: public}, "public.example.com", true},
		{"an allowed name, any port", Config{Port: "3000", Allowed: []string{"prompts.internal"}}, "prompts.internal:9", true},
		{"an allowed name:port", Config{Port: "3000", Allowed: []string{"proxy.example.com:8443"}}, "proxy.example.com:8443", true},
		{"an allowed name:port, another port", Config{Port: "3000", Allowed: []string{"proxy.example.com:8443"}}, "proxy.example.com:8444", false},
		{"any host", Config{Port: "3000", Allowed: []string{" * "}}, "anything.example", true},
		{"port 0 allows no loopback name yet", Config{Port: "0"}, "127.0.0.1:0", false},
	}
	for _, tc := range tests {
		if got := New(tc.cfg).Allowed(tc.host); got != tc.want {
			t.Errorf("%s: Allowed(%q) = %v, want %v", tc.name, tc.host, got, tc.want)
		}
	}
}

// FuzzParseOrigin: whatever ParseOrigin accepts is an origin as a
// browser serializes it, in lower case: scheme://host[:port] with nothing
// before the host or after the port, which parses to itself again, and
// which names the same host as net/url reads in the input.
func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"http://localhost:6274", "http://evil.com@localhost", "http://localhost#x",
		"https://[::1]:1/", "null", "http://a/b?c#d", "http://%41", "http://localhost:99999", "http://[fe80::1%25eth0]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseOrigin(in)
		if err != nil {
			if got != "" {
				t.Fatalf("ParseOrigin(%q) = %q with error %v", in, got, err)
			}
			return
		}
		scheme, rest, ok := strings.Cut(got, "://")
		if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "@#?/\\ \t\r\n") {
			t.Fatalf("ParseOrigin(%q) = %q: not scheme://host[:port]", in, got)
		}
		if got != strings.ToLower(got) {
			t.Fatalf("ParseOrigin(%q) = %q: not lower case", in, got)
		}
		if again, err := ParseOrigin(got); err != nil || again != got {
			t.Fatalf("ParseOrigin(%q) = %q, but that parses to %q, %v", in, got, again, err)
		}
		u, err := url.Parse(in)
		if err != nil || u.User != nil || !strings.EqualFold(u.Host, rest) {
			t.Fatalf("ParseOrigin(%q) = %q, but net/url reads host %q, user %v (%v)", in, got, u.Host, u.User, err)
		}
	})
}

// TestLoopback: this machine is localhost (any case) and the loopback
// addresses; any other name or address is not.
func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true,
		"": false, "0.0.0.0": false, "::": false, "192.168.1.4": false, "example.com": false, "localhost.example.com": false,
	} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
