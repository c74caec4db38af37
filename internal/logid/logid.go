// Package logid names sessions in logs without their ids.
//
// A 2025-era session id is what a client sends to act in its session
// (Mcp-Session-Id, ?session_id=), so a log that holds it hands whoever
// reads the log a way into the session. Logs name a session by Digest
// instead: the first 12 hex digits of the id's SHA-256. Session ids are
// 128 random bits, so the digest cannot be turned back into the id, and
// it needs no key: the same session has the same digest on every replica
// and across restarts, and an operator told an id by a client finds its
// lines with `printf %s ID | sha256sum | cut -c1-12`.
package logid

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// digestLen is the digest's length in hex digits: 48 bits, so that ten
// thousand live sessions share one by chance about once in ten million.
const digestLen = 12

// Digest returns the short, non-reversible name logs give session id.
func Digest(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:digestLen/2])
}

// Session is the attribute naming session id in a log line:
// session=DIGEST.
func Session(id string) slog.Attr { return slog.String("session", Digest(id)) }
