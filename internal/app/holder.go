package app

import (
	"context"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

// holderOf names who a request's sealed state (flow handles,
// requestState) is minted for and opens for (seal.SealFor): the member
// the request's access token named, by their issuer and subject, which
// stay the same across their tokens; "" for a request without a member
// (stdio, the static token, no credential), whose state is anyone's who
// holds it, as before members existed.
func holderOf(ctx context.Context) string {
	m := auth.MemberOf(ctx)
	if m == nil {
		return ""
	}
	return m.Issuer + "\x00" + m.Subject
}

// notYours is the why of a refused handle or requestState minted for
// another holder: it says that, and nothing of whose it was.
func notYours(what, holder string) string {
	if holder == "" {
		return what + " was handed out to a signed-in member, and this request carries no member's access token"
	}
	return what + " was handed out to another member: it is good only for the member it was handed out to"
}
