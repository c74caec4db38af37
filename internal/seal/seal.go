// Package seal signs small pieces of state the server hands to clients and
// must trust when they come back: the requestState of an input-required
// result, and handles. A sealed token is readable, not secret; what the
// seal guarantees is that the server minted it, for this purpose, and that
// it has not expired. Replicas that share the keys accept each other's
// tokens. A token minted for a holder (SealFor: a signed-in member) opens
// for that holder alone, and does not say who it is.
package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MinKeyBytes is the shortest key accepted: the length of the HMAC-SHA256
// output, below which the key, not the hash, bounds the seal's strength.
const MinKeyBytes = 32

// Errors Open returns.
var (
	// ErrInvalid: the token was not minted by a key this server holds, for
	// this purpose, or was changed since.
	ErrInvalid = errors.New("the token is not one this server minted, or it was changed")
	// ErrExpired: the token was genuine but is too old.
	ErrExpired = errors.New("the token has expired")
	// ErrNotYours: the token is genuine, but was minted for another holder
	// (SealFor), or for one when it is opened for none. It says nothing of
	// whose it is: the token does not hold its holder, only a tag that the
	// server's key makes from it.
	ErrNotYours = errors.New("the token was minted for someone else")
)

// Sealer seals and opens tokens. It is safe for concurrent use.
type Sealer struct {
	keys [][]byte // keys[0] seals; every key opens
	now  func() time.Time
}

// New returns a sealer with keys: the first seals, all of them open, so a
// key can be rotated in without refusing the tokens of the one before.
func New(keys ...[]byte) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("seal: no key")
	}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("seal: key %d has %d bytes, fewer than %d", i+1, len(k), MinKeyBytes)
		}
	}
	return &Sealer{keys: keys, now: time.Now}, nil
}

// Random returns a sealer with a key of its own, for a server that shares
// its tokens with no other process.
func Random() *Sealer {
	k := make([]byte, MinKeyBytes)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // cannot happen on supported platforms
	}
	return &Sealer{keys: [][]byte{k}, now: time.Now}
}

// ParseKeys reads keys from a comma-separated list of Base64 strings
// (standard or URL alphabet, padded or not), each of at least MinKeyBytes
// bytes.
func ParseKeys(list string) ([][]byte, error) {
	var keys [][]byte
	for i, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		k, err := decodeKey(s)
		if err != nil {
			// The key itself is never quoted: it is a secret.
			return nil, fmt.Errorf("key %d is not Base64: %w", i+1, err)
		}
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("key %d has %d bytes, fewer than %d (make one with: openssl rand -base64 32)", i+1, len(k), MinKeyBytes)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key given")
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			return k, nil
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return nil, err
}

// envelope is what a token carries.
type envelope struct {
	Purpose string          `json:"p"`
	Expires int64           `json:"x"` // Unix seconds
	Data    json.RawMessage `json:"d"`
	// Holder is holderTag of the holder the token was minted for; absent
	// for a token minted for nobody in particular.
	Holder string `json:"h,omitempty"`
}

// Seal returns a token carrying payload (encoded as JSON) for purpose,
// valid for ttl, for nobody in particular.
func (s *Sealer) Seal(purpose string, payload any, ttl time.Duration) (string, error) {
	return s.SealFor(purpose, "", payload, ttl)
}

// SealFor is Seal for holder: the token opens only for the same holder
// (OpenFor), whoever else presents it. holder is any string that names
// who may use the token (a member's issuer and subject); "" is nobody in
// particular, as Seal. The token carries no more of the holder than a
// tag the sealing key makes from it, so that reading a token tells
// nothing of whose it is, nor lets one guess and check.
func (s *Sealer) SealFor(purpose, holder string, payload any, ttl time.Duration) (string, error) {
	data, err := marshal(payload)
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	body, err := marshal(envelope{Purpose: purpose, Expires: s.now().Add(ttl).Unix(), Data: data,
		Holder: holderTag(s.keys[0], purpose, holder)})
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	head := base64.RawURLEncoding.EncodeToString(body)
	return head + "." + base64.RawURLEncoding.EncodeToString(mac(s.keys[0], purpose, head)), nil
}

// marshal encodes v as JSON without json.Marshal's HTML escaping: a token
// is never put into HTML, and escaping would make each '<', '>' and '&' of
// the text it carries (code, in a flow's outputs) six bytes instead of one.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Open checks a token sealed for purpose, for nobody in particular, and
// decodes its payload into v. A token sealed for a holder is refused with
// ErrNotYours.
func (s *Sealer) Open(purpose, token string, v any) error {
	return s.OpenFor(purpose, "", token, v)
}

// OpenFor checks a token sealed for purpose and decodes its payload into
// v, as Open, and checks that it was minted for holder: one minted for
// another holder, or for one when holder is "", is refused with
// ErrNotYours (after ErrInvalid and ErrExpired, which say more to whom it
// was given). A token minted for nobody in particular opens for anyone.
func (s *Sealer) OpenFor(purpose, holder, token string, v any) error {
	head, sig, ok := strings.Cut(token, ".")
	if !ok {
		return ErrInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return ErrInvalid
	}
	var key []byte // the key that minted it
	for _, k := range s.keys {
		if hmac.Equal(got, mac(k, purpose, head)) {
			key = k
			break
		}
	}
	if key == nil {
		return ErrInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ErrInvalid
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&env); err != nil || env.Purpose != purpose {
		return ErrInvalid
	}
	if s.now().Unix() > env.Expires {
		return ErrExpired
	}
	if env.Holder != "" && !hmac.Equal([]byte(env.Holder), []byte(holderTag(key, purpose, holder))) {
		return ErrNotYours
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// mac binds the purpose into the signature as well as the body, so a token
// minted for one purpose never opens for another.
func mac(key []byte, purpose, head string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(head))
	return h.Sum(nil)
}

// holderTag is what a token minted for holder carries of it: an HMAC of
// the holder under the sealing key, apart from the token's own MAC by its
// label, so that it can be neither reversed nor computed without the key.
// "" for nobody in particular.
func holderTag(key []byte, purpose, holder string) string {
	if holder == "" {
		return ""
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("holder\x00"))
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(holder))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}
