package httpx

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// Owner names who may use a 2025-era session: a digest of the identity
// the credential that opened the session proves. The zero Owner is
// nobody's in particular: no credential is checked, or the one checked
// names no one (the static --auth-token, which everyone who holds it
// shares).
//
// The transports keep this contract, so that a session id is never
// enough to act in someone else's session:
//
//   - The security layer in front of them (transport/httpserver) verifies
//     a request's credential and attaches its Owner with WithCaller; the
//     transports never read credentials themselves.
//   - A session remembers the Owner of the request that opened it (GET
//     /sse; initialize on POST /mcp).
//   - Every later request naming the session (Mcp-Session-Id on /mcp,
//     session_id on /sse and /sse/message) is served only when its Owner
//     is the session's (Owner.Is, in constant time); otherwise it is
//     answered exactly as a session that does not exist is (404
//     SESSION_NOT_FOUND), so the id tells another caller nothing, not even
//     that the session is live. The check comes before a byte of the body
//     is read.
//
// An Owner is derived from who a credential names, not from its bytes:
// an identity-bearing credential (a member's OAuth access token) gives
// the digest of its issuer and subject, so a refreshed token keeps its
// sessions and another member's token finds none of them. A request forwarded from
// another replica must carry its Owner for the holder to check (see
// httpserver.SessionRouter).
type Owner [sha256.Size]byte

// Is reports whether o and other are the same Owner, in time that does
// not depend on where they differ.
func (o Owner) Is(other Owner) bool { return subtle.ConstantTimeCompare(o[:], other[:]) == 1 }

// Caller is what the security layer learned of a request's credential.
type Caller struct {
	// Owner is who the credential names (zero: nobody in particular).
	Owner Owner
	// URLToken is the credential when the client sent it in the URL
	// (?token=) because it cannot set headers, as Void cannot. The SSE
	// endpoint URL handed to such a client carries it as well, so that
	// its posts pass the same check; a client that sent a header gets a
	// URL without it. Never logged.
	URLToken string
}

type callerKey struct{}

// WithCaller returns r carrying c, for the transports behind the
// security layer.
func WithCaller(r *http.Request, c Caller) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// CallerOf returns what the security layer attached to r; the zero Caller
// when it attached nothing (no credential is checked).
func CallerOf(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}
