package auth

import (
	"crypto/sha256"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// result is what is remembered of a checked token: the member, or why the
// token was refused, until when.
type result struct {
	m     *Member
	err   error
	until time.Time
}

// tokenKey is what a checked token is remembered under: the SHA-256 of the
// policy's claim and the token, never the token itself. A member's Groups
// are read by the claim, so a token checked under another claim is read
// again.
func tokenKey(claim, token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(claim + "\x00" + token))
}

// memory remembers checked tokens, each until its result's until, at most
// size of them: past it, the least recently used is forgotten.
type memory struct {
	c *lru.Cache[[sha256.Size]byte, result]
}

func newMemory(size int) (memory, error) {
	c, err := lru.New[[sha256.Size]byte, result](size)
	if err != nil {
		return memory{}, fmt.Errorf("remembered tokens: %w", err)
	}
	return memory{c: c}, nil
}

// get returns what is remembered under key, unless it is past at now.
func (m memory) get(key [sha256.Size]byte, now time.Time) (result, bool) {
	r, ok := m.c.Get(key)
	if !ok {
		return result{}, false
	}
	if !now.Before(r.until) {
		m.c.Remove(key)
		return result{}, false
	}
	return r, true
}

func (m memory) add(key [sha256.Size]byte, r result) { m.c.Add(key, r) }
