package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

type payload struct {
	Name    string   `json:"name"`
	Missing []string `json:"missing"`
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, MinKeyBytes) }

func TestSealOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, err := New(key(1))
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return now }
	tok, err := a.Seal("input:prompts/get", payload{Name: "Code_Review", Missing: []string{"code"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rotated, _ := New(key(2), key(1)) // a replica that rotated in a new key
	rotated.now = a.now
	other, _ := New(key(3))
	other.now = a.now
	flip := []byte(tok)
	flip[3] ^= 1

	tests := []struct {
		name    string
		s       *Sealer
		purpose string
		token   string
		at      time.Time
		want    error
	}{
		{"genuine", a, "input:prompts/get", tok, now, nil},
		{"a replica sharing the key", rotated, "input:prompts/get", tok, now, nil},
		{"a server without the key", other, "input:prompts/get", tok, now, ErrInvalid},
		{"another purpose", a, "input:tools/call", tok, now, ErrInvalid},
		{"appended to", a, "input:prompts/get", tok + "-TAMPERED", now, ErrInvalid},
		{"a bit flipped in the body", a, "input:prompts/get", string(flip), now, ErrInvalid},
		{"no signature", a, "input:prompts/get", strings.Split(tok, ".")[0], now, ErrInvalid},
		{"empty", a, "input:prompts/get", "", now, ErrInvalid},
		{"expired", a, "input:prompts/get", tok, now.Add(2 * time.Minute), ErrExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.now = func() time.Time { return tc.at }
			var got payload
			err := tc.s.Open(tc.purpose, tc.token, &got)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if tc.want == nil && (got.Name != "Code_Review" || len(got.Missing) != 1 || got.Missing[0] != "code") {
				t.Fatalf("payload = %+v", got)
			}
		})
	}
}

func TestNewAndParseKeys(t *testing.T) {
	if _, err := New(); err == nil {
		t.Error("New without a key succeeded")
	}
	if _, err := New([]byte("short")); err == nil {
		t.Error("New with a 5-byte key succeeded")
	}
	tests := []struct {
		list string
		n    int
		bad  string // what the error mentions
	}{
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", 1, ""},
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE, AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=", 2, ""},
		{"AQID", 0, "fewer than 32"},
		{"not base64!!", 0, "not Base64"},
		{" , ", 0, "no key"},
	}
	for _, tc := range tests {
		keys, err := ParseKeys(tc.list)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("ParseKeys(%q) error = %v, want one saying %q", tc.list, err, tc.bad)
			}
			if err != nil && strings.Contains(err.Error(), tc.list) && strings.TrimSpace(tc.list) != "," {
				t.Errorf("ParseKeys(%q) error quotes the key: %v", tc.list, err)
			}
			continue
		}
		if err != nil || len(keys) != tc.n {
			t.Errorf("ParseKeys(%q) = %d keys, %v; want %d", tc.list, len(keys), err, tc.n)
		}
	}
}

func FuzzOpen(f *testing.F) {
	s, _ := New(key(7))
	tok, _ := s.Seal("p", payload{Name: "x"}, time.Hour)
	f.Add(tok)
	f.Add(tok + "x")
	f.Add("a.b")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		var p payload
		err := s.Open("p", token, &p)
		if err == nil && token != tok {
			// Another token can only open if it is the same signed body.
			head := strings.Split(token, ".")[0]
			if head != strings.Split(tok, ".")[0] {
				t.Fatalf("a token the server did not mint opened: %q", token)
			}
		}
	})
}

// TestSealCarriesTextAsIs: '<', '>' and '&' travel as one byte each, not
// as the six of json.Marshal's HTML escape, and come back unchanged.
func TestSealCarriesTextAsIs(t *testing.T) {
	s, err := New(key(1))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("if a < b && c > d {}\n", 100)
	tok, err := s.Seal("p", payload{Name: text}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(tok, ".")
	if max := base64.RawURLEncoding.EncodedLen(len(text) + 200); len(head) > max {
		t.Errorf("token body is %d bytes for %d bytes of text, want at most %d", len(head), len(text), max)
	}
	var got payload
	if err := s.Open("p", tok, &got); err != nil || got.Name != text {
		t.Fatalf("Open = %v, text came back changed: %t", err, got.Name != text)
	}
}

// TestSealFor: a token minted for a holder opens for that holder alone,
// on every replica sharing the key, and says nothing of who it is; one
// minted for nobody in particular opens for anyone.
func TestSealFor(t *testing.T) {
	const alice, bob = "https://id.example.com\x00alice", "https://id.example.com\x00bob"
	a, _ := New(key(1))
	rotated, _ := New(key(2), key(1))
	forAlice, err := a.SealFor("flow-handle", alice, payload{Name: "f"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	forNobody, err := a.Seal("flow-handle", payload{Name: "f"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		s             *Sealer
		token, holder string
		want          error
	}{
		{"alice's, by alice", a, forAlice, alice, nil},
		{"alice's, by alice on a replica that rotated keys", rotated, forAlice, alice, nil},
		{"alice's, by bob", a, forAlice, bob, ErrNotYours},
		{"alice's, by nobody", a, forAlice, "", ErrNotYours},
		{"alice's, by a subject that is a prefix", a, forAlice, alice[:len(alice)-1], ErrNotYours},
		{"nobody's, by alice", a, forNobody, alice, nil},
		{"nobody's, by nobody", a, forNobody, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got payload
			err := tc.s.OpenFor("flow-handle", tc.holder, tc.token, &got)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if err == nil && got.Name != "f" {
				t.Errorf("payload %+v", got)
			}
		})
	}
	if err := a.Open("flow-handle", forAlice, &payload{}); !errors.Is(err, ErrNotYours) {
		t.Errorf("Open of a holder's token: %v, want ErrNotYours", err)
	}
	body, _ := base64.RawURLEncoding.DecodeString(strings.Split(forAlice, ".")[0])
	if bytes.Contains(body, []byte("alice")) || bytes.Contains(body, []byte("id.example.com")) {
		t.Errorf("the token names its holder: %s", body)
	}
	// A tag moved onto a token of another holder is caught by the MAC.
	forBob, _ := a.SealFor("flow-handle", bob, payload{Name: "f"}, time.Minute)
	if err := a.OpenFor("flow-handle", alice, swapTag(t, forBob, forAlice), &payload{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bob's token with alice's tag: %v, want ErrInvalid", err)
	}
}

// swapTag returns token with the holder tag of from, its MAC unchanged.
func swapTag(t *testing.T, token, from string) string {
	t.Helper()
	tag := func(tok string) string {
		body, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
		_, after, _ := strings.Cut(string(body), `"h":"`)
		return strings.Split(after, `"`)[0]
	}
	head, sig, _ := strings.Cut(token, ".")
	body, _ := base64.RawURLEncoding.DecodeString(head)
	swapped := strings.Replace(string(body), tag(token), tag(from), 1)
	if swapped == string(body) {
		t.Fatal("no tag swapped")
	}
	return base64.RawURLEncoding.EncodeToString([]byte(swapped)) + "." + sig
}

// BenchmarkSealOpen: sealing a handle and opening it again, for nobody in
// particular and for a holder (one HMAC more each way).
func BenchmarkSealOpen(b *testing.B) {
	s, _ := New(key(1))
	p := payload{Name: "post", Missing: []string{strings.Repeat("an output of a step ", 50)}}
	for _, holder := range []string{"", "https://id.example.com\x00alice"} {
		name := "nobody"
		if holder != "" {
			name = "holder"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tok, err := s.SealFor("flow-handle", holder, p, time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				var got payload
				if err := s.OpenFor("flow-handle", holder, tok, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
