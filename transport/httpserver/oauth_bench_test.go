package httpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// BenchmarkGuardCredential: the CPU the security layer spends on one
// request's credential: none, the static --auth-token, a member's JWT
// (RS256, 2048-bit key, keys cached) seen before (remembered: what a
// client's every request after its first costs) and seen for the first
// time (a new token each request: its signature checked). The request is
// a GET /mcp without a session, which the transport answers at once, the
// same for each; the differences between the cases are the credential
// checks.
func BenchmarkGuardCredential(b *testing.B) {
	is := newIssuer(b)
	jwtOpts := httpserver.Options{PublicURL: publicURL, Auth: verifier(b, is, nil)}
	cases := []struct {
		name   string
		opts   httpserver.Options
		header string
	}{
		{"none", httpserver.Options{}, ""},
		{"static-token", httpserver.Options{AuthToken: "s3cret-token-of-32-bytes-or-so!!"}, "Bearer s3cret-token-of-32-bytes-or-so!!"},
		{"jwt-rs256", jwtOpts, "Bearer " + is.valid(b, tokenClaims{})},
		{"jwt-rs256-first-sight", jwtOpts, ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e, _, _ := newEngine(b, nil, mcp.EngineOptions{})
			tc.opts.Addr = "127.0.0.1:3000"
			tc.opts.Logger = quiet
			srv, err := httpserver.New(e, tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:3000/mcp", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			// First sight: a new token each request, minted with the timer
			// stopped (signing is the issuer's cost, not ours).
			firstSight := tc.name == "jwt-rs256-first-sight"
			minted := 0
			mint := func() {
				req.Header.Set("Authorization", "Bearer "+is.valid(b, tokenClaims{Sub: fmt.Sprintf("member-%d", minted)}))
				minted++
			}
			if firstSight {
				mint()
			}
			// The answer is the same whatever the credential: the guard
			// let the request through.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
				b.Fatalf("refused: %d %s", rec.Code, rec.Body)
			}
			want := rec.Code
			b.ReportAllocs()
			for b.Loop() {
				if firstSight {
					b.StopTimer()
					mint()
					b.StartTimer()
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("status %d, want %d", rec.Code, want)
				}
			}
		})
	}
}
