package httpserver

import (
	"strings"
	"testing"
)

// FuzzBearer: the Authorization header's reading takes a token only from
// the Bearer scheme (any case), never an empty or padded one, and reads
// back what a client wrote.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer abc", "BEARER  abc ", "Basic abc", "Bearer", "Bearer ", "Bearerabc", " Bearer abc", "Bearer a b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		token, ok := bearer(a)
		if !ok {
			if token != "" {
				t.Fatalf("refused %q but returned %q", a, token)
			}
			return
		}
		if token == "" || strings.TrimSpace(token) != token {
			t.Fatalf("%q gave the token %q", a, token)
		}
		if !strings.HasPrefix(strings.ToLower(a), "bearer ") {
			t.Fatalf("%q is not of the Bearer scheme, yet gave %q", a, token)
		}
		if again, ok := bearer("Bearer " + token); !ok || again != token {
			t.Fatalf("%q read back as %q, %v", token, again, ok)
		}
	})
}
