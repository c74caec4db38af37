package cluster

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/nats-io/nats.go"
)

// The bus's authentication: every message one replica sends another is
// signed with a key only the replicas hold, and checked before anything
// reads it. The keys are derived from the state keys (FLOWYPROMPT_STATE_KEYS,
// which the replicas share already) with HKDF, one for the messages and
// one for the catalog's values, so that no key serves two purposes: a
// bus signature never opens as a sealed token, nor the reverse.
//
// A signature covers the whole frame (subject, reply subject, every header
// and the data) with the time it was made and a random nonce. A receiver
// refuses a message whose signature no key of its own makes (forged, or
// unsigned), one made more than busWindow away from its own clock (stale),
// and one whose nonce it has accepted before (replayed): whoever can
// publish on the NATS server, without the keys, can neither run a request
// on a replica nor forge or replay an answer.

const (
	// hdrAuth carries the signature: "1.<unix nanoseconds>.<nonce>.<mac>",
	// nonce and mac in unpadded base64url.
	hdrAuth = "Fp-Auth"
	// authVersion starts hdrAuth and the MAC's input.
	authVersion = "1"

	nonceBytes = 16
	macBytes   = sha256.Size

	// busWindow is how far from the receiver's clock a message's time may
	// be, either way: the replicas' clocks must agree within it.
	busWindow = 30 * time.Second
	// replayCapacity bounds the nonces remembered: at most about 10 MB of
	// map and ring. When more messages arrive within busWindow than it
	// holds, the oldest are forgotten and every message no newer than them
	// is refused as stale (the window shrinks), so a replay is never let
	// through.
	replayCapacity = 1 << 17

	// Inputs of HKDF for the two derived keys.
	busKeyInfo     = "flowyprompt cluster: bus messages v1"
	catalogKeyInfo = "flowyprompt cluster: catalog values v1"
)

// maxAuthLen bounds hdrAuth before it is split: the version, 19 digits,
// the nonce, the MAC and three dots.
var maxAuthLen = len(authVersion) + 19 + base64.RawURLEncoding.EncodedLen(nonceBytes) +
	base64.RawURLEncoding.EncodedLen(macBytes) + 3

// refusal is why a message was refused; /healthz counts each.
type refusal int

const (
	refusedUnsigned refusal = iota // no signature
	refusedForged                  // a signature no key of ours made, or a malformed one
	refusedStale                   // signed too long ago, or too far ahead
	refusedReplayed                // a nonce accepted before
	refusals
)

var refusalNames = [refusals]string{"unsigned", "forged", "stale", "replayed"}

// errRefused is what verify returns, wrapped with the reason.
var errRefused = errors.New("refused a message on the bus")

// refusedError says why a message was refused.
type refusedError struct{ why refusal }

func (e refusedError) Error() string {
	return fmt.Sprintf("%s: %s", errRefused, refusalNames[e.why])
}

func (e refusedError) Unwrap() error { return errRefused }

// deriveKeys derives a key for info from each state key, in order: the
// first signs, all of them verify, so the state keys rotate as they do
// for sealed tokens.
func deriveKeys(stateKeys [][]byte, info string) ([][]byte, error) {
	if len(stateKeys) == 0 {
		return nil, errors.New("cluster: no state keys: replicas sign every message on the bus with keys derived from them; " +
			"give every replica the same FLOWYPROMPT_STATE_KEYS (or --state-keys; make one with: openssl rand -base64 32)")
	}
	keys := make([][]byte, len(stateKeys))
	for i, k := range stateKeys {
		if len(k) < seal.MinKeyBytes {
			return nil, fmt.Errorf("cluster: state key %d has %d bytes, fewer than %d (make one with: openssl rand -base64 32)", i+1, len(k), seal.MinKeyBytes)
		}
		d, err := hkdf.Key(sha256.New, k, nil, info, macBytes)
		if err != nil {
			return nil, fmt.Errorf("cluster: derive a bus key: %w", err)
		}
		keys[i] = d
	}
	return keys, nil
}

// busAuth signs and checks the messages of one Node. It is safe for
// concurrent use.
type busAuth struct {
	keys     [][]byte // keys[0] signs; every key verifies
	now      func() time.Time
	log      *slog.Logger
	capacity int // of the replay ring: replayCapacity, less in tests

	refused  [refusals]atomic.Uint64
	lastWarn [refusals]atomic.Int64 // unix nanoseconds of the last warning per reason

	mu sync.Mutex
	// seen holds the nonces accepted within the window; order the same in
	// arrival order, a ring of len(seen) entries from head.
	seen  map[[nonceBytes]byte]int64
	order []seenNonce
	head  int
	// floor: a message signed at or before it is refused as stale, since
	// its nonce may have been forgotten to keep the ring bounded.
	floor int64
}

type seenNonce struct {
	nonce [nonceBytes]byte
	at    int64
}

func newBusAuth(keys [][]byte, now func() time.Time, log *slog.Logger) *busAuth {
	return &busAuth{keys: keys, now: now, log: log, capacity: replayCapacity, seen: map[[nonceBytes]byte]int64{}}
}

// sign adds hdrAuth to m, replacing any there.
func (b *busAuth) sign(m *nats.Msg) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	var nonce [nonceBytes]byte
	rand.Read(nonce[:])
	b.signWith(m, b.now().UnixNano(), nonce)
}

// signWith is sign with the time and nonce given.
func (b *busAuth) signWith(m *nats.Msg, at int64, nonce [nonceBytes]byte) {
	m.Header.Del(hdrAuth)
	mac := busMAC(b.keys[0], at, nonce, m)
	m.Header.Set(hdrAuth, authVersion+"."+strconv.FormatInt(at, 10)+"."+
		base64.RawURLEncoding.EncodeToString(nonce[:])+"."+base64.RawURLEncoding.EncodeToString(mac))
}

// verify checks m's signature, then its time, then its nonce, and
// remembers the nonce: a message verify accepted once it refuses after.
// A refusal is counted, and logged now and then (never with the data).
func (b *busAuth) verify(m *nats.Msg) error {
	why, ok := b.check(m)
	if ok {
		return nil
	}
	b.refuse(why, m.Subject)
	return refusedError{why}
}

func (b *busAuth) check(m *nats.Msg) (refusal, bool) {
	auths := m.Header[hdrAuth]
	switch {
	case len(auths) == 0:
		return refusedUnsigned, false
	case len(auths) > 1:
		// The MAC leaves hdrAuth out: a second one would be unsigned.
		return refusedForged, false
	}
	at, nonce, mac, ok := parseAuth(auths[0])
	if !ok {
		return refusedForged, false
	}
	genuine := false
	for _, k := range b.keys {
		if hmac.Equal(mac, busMAC(k, at, nonce, m)) {
			genuine = true
			break
		}
	}
	if !genuine {
		return refusedForged, false
	}
	now := b.now().UnixNano()
	if at < now-int64(busWindow) || at > now+int64(busWindow) {
		return refusedStale, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if at <= b.floor {
		return refusedStale, false
	}
	if _, dup := b.seen[nonce]; dup {
		return refusedReplayed, false
	}
	b.remember(nonce, at, now)
	return 0, true
}

// remember adds an accepted nonce, forgetting first those past the window
// and, at capacity, the oldest; b.mu is held.
func (b *busAuth) remember(nonce [nonceBytes]byte, at, now int64) {
	// The ring is in arrival order, nearly time order: forget from its
	// head while what is there is past the window. An entry out of order
	// stays a little longer, which costs nothing but its bytes.
	for len(b.seen) > 0 {
		old := b.order[b.head]
		if old.at >= now-int64(busWindow) {
			break
		}
		b.forgetHead()
	}
	// The ring holds len(b.seen) entries from head; full, it doubles up
	// to its capacity, and then the oldest goes.
	if len(b.seen) == len(b.order) {
		if len(b.order) < b.capacity {
			grown := make([]seenNonce, min(max(2*len(b.order), 64), b.capacity))
			for i := range len(b.seen) {
				grown[i] = b.order[(b.head+i)%len(b.order)]
			}
			b.order, b.head = grown, 0
		} else {
			b.floor = max(b.floor, b.order[b.head].at)
			b.forgetHead()
		}
	}
	b.order[(b.head+len(b.seen))%len(b.order)] = seenNonce{nonce, at}
	b.seen[nonce] = at
}

func (b *busAuth) forgetHead() {
	delete(b.seen, b.order[b.head].nonce)
	b.head = (b.head + 1) % len(b.order)
}

// refuse counts a refusal and warns of it, at most once a minute per
// reason: a flood of forgeries must not become a flood of logs.
func (b *busAuth) refuse(why refusal, subject string) {
	n := b.refused[why].Add(1)
	now := b.now().UnixNano()
	last := b.lastWarn[why].Load()
	if now-last < int64(time.Minute) || !b.lastWarn[why].CompareAndSwap(last, now) {
		return
	}
	b.log.Warn("refused a message on the NATS bus: "+refusalNames[why]+" ("+refusalHints[why]+"; see docs/scale-out.md)",
		"reason", refusalNames[why], "subject", subject, "refused_so_far", n)
}

// refusalHints say who sends what was refused, in the warning.
var refusalHints = [refusals]string{
	refusedUnsigned: "a client without the state keys speaks on the bus, or a replica of an earlier version: only replicas holding the same FLOWYPROMPT_STATE_KEYS may",
	refusedForged:   "a client without the state keys speaks on the bus, or a replica runs with other FLOWYPROMPT_STATE_KEYS",
	refusedStale:    "a replica's clock is more than 30 s off (keep them in sync with NTP), or someone replays old messages",
	refusedReplayed: "someone on the bus replays the replicas' messages",
}

// counts is /healthz's tally of refused messages, by reason.
func (b *busAuth) counts() map[string]uint64 {
	c := make(map[string]uint64, refusals)
	for i, name := range refusalNames {
		c[name] = b.refused[i].Load()
	}
	return c
}

// parseAuth splits hdrAuth, checking every part's length before decoding.
func parseAuth(s string) (at int64, nonce [nonceBytes]byte, mac []byte, ok bool) {
	if len(s) > maxAuthLen {
		return 0, nonce, nil, false
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 || parts[0] != authVersion ||
		len(parts[2]) != base64.RawURLEncoding.EncodedLen(nonceBytes) ||
		len(parts[3]) != base64.RawURLEncoding.EncodedLen(macBytes) {
		return 0, nonce, nil, false
	}
	at, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || at <= 0 || strconv.FormatInt(at, 10) != parts[1] {
		return 0, nonce, nil, false
	}
	n, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(n) != nonceBytes {
		return 0, nonce, nil, false
	}
	copy(nonce[:], n)
	if mac, err = base64.RawURLEncoding.DecodeString(parts[3]); err != nil || len(mac) != macBytes {
		return 0, nonce, nil, false
	}
	return at, nonce, mac, true
}

// busMAC is the HMAC-SHA256 of the frame: the version, the time and the
// nonce, then the subject, the reply subject, every header but hdrAuth
// (names sorted, each value in order) and the data, each one preceded by
// its length, so that no two frames give the same input.
func busMAC(key []byte, at int64, nonce [nonceBytes]byte, m *nats.Msg) []byte {
	// Everything but the data is gathered in one buffer and hashed in one
	// write: a frame's metadata is a few hundred bytes.
	field := func(b []byte, s string) []byte {
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	b := make([]byte, 0, 512)
	b = field(b, authVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = append(b, nonce[:]...)
	b = field(b, m.Subject)
	b = field(b, m.Reply)
	var names [8]string
	sorted := names[:0]
	for k := range m.Header {
		if k != hdrAuth {
			sorted = append(sorted, k)
		}
	}
	slices.Sort(sorted)
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	for _, k := range sorted {
		b = field(b, k)
		vs := m.Header[k]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = field(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.Data)))
	h := hmac.New(sha256.New, key)
	h.Write(b)
	h.Write(m.Data)
	return h.Sum(b[:0])
}

// valueSigner signs and checks the values the replicas store in the
// catalog's bucket, which travel on the bus as well. A stored value is
// read many times, so it has neither time nor nonce: its signature binds
// it to its bucket and key, so a value cannot be moved to another key,
// and an old genuine value written back under its own key is the one
// thing a holder of bus access could still do (docs/scale-out.md).
type valueSigner struct {
	keys [][]byte
}

// valueVersion starts a signed value; the MAC follows, then the value.
const valueVersion byte = 1

// valueOverhead is what signing adds to a value.
const valueOverhead = 1 + macBytes

func (s valueSigner) sign(bucket, key string, value []byte) []byte {
	out := make([]byte, 0, valueOverhead+len(value))
	out = append(out, valueVersion)
	out = append(out, valueMAC(s.keys[0], bucket, key, value)...)
	return append(out, value...)
}

// open returns the value a signed one carries.
func (s valueSigner) open(bucket, key string, signed []byte) ([]byte, refusal, bool) {
	if len(signed) < valueOverhead || signed[0] != valueVersion {
		return nil, refusedUnsigned, false
	}
	mac, value := signed[1:valueOverhead], signed[valueOverhead:]
	for _, k := range s.keys {
		if hmac.Equal(mac, valueMAC(k, bucket, key, value)) {
			return value, 0, true
		}
	}
	return nil, refusedForged, false
}

func valueMAC(key []byte, bucket, name string, value []byte) []byte {
	h := hmac.New(sha256.New, key)
	var buf [binary.MaxVarintLen64]byte
	field := func(w hash.Hash, s []byte) {
		w.Write(binary.AppendUvarint(buf[:0], uint64(len(s))))
		w.Write(s)
	}
	field(h, []byte(bucket))
	field(h, []byte(name))
	field(h, value)
	return h.Sum(nil)
}
