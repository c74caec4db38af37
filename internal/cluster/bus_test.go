package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// busAt is a busAuth of keys derived from state, on a clock that says at.
func busAt(t testing.TB, at time.Time, state ...[]byte) *busAuth {
	t.Helper()
	keys, err := deriveKeys(state, busKeyInfo)
	if err != nil {
		t.Fatal(err)
	}
	return newBusAuth(keys, func() time.Time { return at }, slog.New(slog.DiscardHandler))
}

var (
	busEpoch = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	otherKey = bytes.Repeat([]byte{0x33}, 32)
)

// signedRequest is a forwarded request's message, signed by b.
func signedRequest(t testing.TB, b *busAuth) *nats.Msg {
	t.Helper()
	m := realRequest(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 46)
	b.sign(m)
	return m
}

// clone copies m deeply enough to change it.
func clone(m *nats.Msg) *nats.Msg {
	c := &nats.Msg{Subject: m.Subject, Reply: m.Reply, Header: nats.Header{}, Data: bytes.Clone(m.Data)}
	for k, v := range m.Header {
		c.Header[k] = append([]string(nil), v...)
	}
	return c
}

func TestBusRefusesWhatNoReplicaSent(t *testing.T) {
	signer := busAt(t, busEpoch, testKeys[0])
	genuine := signedRequest(t, signer)
	auth := genuine.Header.Get(hdrAuth)
	parts := strings.Split(auth, ".")
	tests := []struct {
		name   string
		change func(m *nats.Msg)
		// verifier's clock and keys; zero: busEpoch and testKeys.
		at   time.Time
		keys [][]byte
		want error // nil: accepted
	}{
		{name: "genuine", change: func(*nats.Msg) {}},
		{name: "unsigned", change: func(m *nats.Msg) { m.Header.Del(hdrAuth) }, want: refusedError{refusedUnsigned}},
		{name: "another subject", change: func(m *nats.Msg) { m.Subject = "flowyprompt.session.other" }, want: refusedError{refusedForged}},
		{name: "another reply", change: func(m *nats.Msg) { m.Reply = "_INBOX.evil.x" }, want: refusedError{refusedForged}},
		{name: "another request head", change: func(m *nats.Msg) {
			m.Header.Set(hdrRequest, strings.Replace(m.Header.Get(hdrRequest), "POST", "GET", 1))
		}, want: refusedError{refusedForged}},
		{name: "a header added", change: func(m *nats.Msg) { m.Header.Set(hdrEnd, endDone) }, want: refusedError{refusedForged}},
		{name: "a value added", change: func(m *nats.Msg) { m.Header.Add(hdrRequest, "{}") }, want: refusedError{refusedForged}},
		{name: "other data", change: func(m *nats.Msg) { m.Data = append(m.Data, ' ') }, want: refusedError{refusedForged}},
		{name: "no data", change: func(m *nats.Msg) { m.Data = nil }, want: refusedError{refusedForged}},
		{name: "another time", change: func(m *nats.Msg) {
			m.Header.Set(hdrAuth, strings.Join([]string{parts[0], fmt.Sprint(busEpoch.UnixNano() + 1), parts[2], parts[3]}, "."))
		}, want: refusedError{refusedForged}},
		{name: "another nonce", change: func(m *nats.Msg) {
			m.Header.Set(hdrAuth, strings.Join([]string{parts[0], parts[1], "A" + parts[2][1:], parts[3]}, "."))
		}, want: refusedError{refusedForged}},
		{name: "another version", change: func(m *nats.Msg) { m.Header.Set(hdrAuth, "2"+auth[1:]) }, want: refusedError{refusedForged}},
		{name: "a signature over the cap", change: func(m *nats.Msg) { m.Header.Set(hdrAuth, auth+strings.Repeat("A", 1<<20)) },
			want: refusedError{refusedForged}},
		{name: "garbage", change: func(m *nats.Msg) { m.Header.Set(hdrAuth, "...") }, want: refusedError{refusedForged}},
		{name: "a second signature", change: func(m *nats.Msg) { m.Header.Add(hdrAuth, auth) }, want: refusedError{refusedForged}},
		{name: "verified with other keys", change: func(*nats.Msg) {}, keys: [][]byte{otherKey}, want: refusedError{refusedForged}},
		{name: "verified with a new key and the old", change: func(*nats.Msg) {}, keys: [][]byte{otherKey, testKeys[0]}},
		{name: "31 s old", change: func(*nats.Msg) {}, at: busEpoch.Add(busWindow + time.Second), want: refusedError{refusedStale}},
		{name: "30 s old", change: func(*nats.Msg) {}, at: busEpoch.Add(busWindow)},
		{name: "31 s ahead", change: func(*nats.Msg) {}, at: busEpoch.Add(-busWindow - time.Second), want: refusedError{refusedStale}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at, keys := tc.at, tc.keys
			if at.IsZero() {
				at = busEpoch
			}
			if keys == nil {
				keys = testKeys
			}
			v := busAt(t, at, keys...)
			m := clone(genuine)
			tc.change(m)
			err := v.verify(m)
			if err != tc.want {
				t.Fatalf("verify: %v, want %v", err, tc.want)
			}
			counts := v.counts()
			for i, name := range refusalNames {
				want := uint64(0)
				if tc.want != nil && tc.want.(refusedError).why == refusal(i) {
					want = 1
				}
				if counts[name] != want {
					t.Errorf("counted %d %s, want %d: %v", counts[name], name, want, counts)
				}
			}
		})
	}
}

func TestBusRefusesAReplay(t *testing.T) {
	b := busAt(t, busEpoch, testKeys...)
	m := signedRequest(t, b)
	if err := b.verify(clone(m)); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	if err := b.verify(clone(m)); err != (refusedError{refusedReplayed}) {
		t.Fatalf("second delivery: %v, want refused as replayed", err)
	}
	// Signed again, the same frame is a new message.
	b.sign(m)
	if err := b.verify(m); err != nil {
		t.Fatalf("signed again: %v", err)
	}
}

// TestBusReplayMemoryIsBounded: past its capacity the ring forgets the
// oldest nonces, and every message no newer than them is refused as
// stale, so that what was forgotten cannot be replayed.
func TestBusReplayMemoryIsBounded(t *testing.T) {
	now := busEpoch
	b := busAt(t, now, testKeys...)
	b.now = func() time.Time { return now }
	b.capacity = 64
	var sent []*nats.Msg
	for i := range 200 {
		now = busEpoch.Add(time.Duration(i) * time.Millisecond)
		m := signedRequest(t, b)
		sent = append(sent, clone(m))
		if err := b.verify(m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(b.seen) > b.capacity || len(b.order) > b.capacity {
			t.Fatalf("message %d: %d nonces held in a ring of %d, capacity %d", i, len(b.seen), len(b.order), b.capacity)
		}
	}
	for i, want := range map[int]error{
		0:   refusedError{refusedStale},    // forgotten
		135: refusedError{refusedStale},    // the newest forgotten
		136: refusedError{refusedReplayed}, // the oldest remembered
		199: refusedError{refusedReplayed},
	} {
		if err := b.verify(clone(sent[i])); err != want {
			t.Errorf("message %d again: %v, want %v", i, err, want)
		}
	}
	// Past the window, everything is forgotten and refused as stale.
	now = now.Add(busWindow + time.Second)
	m := signedRequest(t, b)
	if err := b.verify(m); err != nil {
		t.Fatalf("a new message: %v", err)
	}
	if len(b.seen) != 1 {
		t.Errorf("%d nonces held after the window, want 1", len(b.seen))
	}
	if err := b.verify(clone(sent[199])); err != (refusedError{refusedStale}) {
		t.Errorf("the last message, a window later: %v, want stale", err)
	}
}

// TestDerivedKeys: the bus's key and the catalog's are neither the state
// key nor each other; every replica derives the same.
func TestDerivedKeys(t *testing.T) {
	bus, err := deriveKeys(testKeys, busKeyInfo)
	if err != nil {
		t.Fatal(err)
	}
	values, err := deriveKeys(testKeys, catalogKeyInfo)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := deriveKeys(testKeys, busKeyInfo)
	switch {
	case bytes.Equal(bus[0], testKeys[0]) || bytes.Equal(values[0], testKeys[0]):
		t.Error("a derived key is the state key")
	case bytes.Equal(bus[0], values[0]):
		t.Error("the bus and the catalog have one key")
	case !bytes.Equal(bus[0], again[0]):
		t.Error("two derivations differ")
	}
}

func TestCatalogValueSignature(t *testing.T) {
	keys, _ := deriveKeys(testKeys, catalogKeyInfo)
	s := valueSigner{keys}
	signed := s.sign("b", "k", []byte("value"))
	tests := []struct {
		name         string
		bucket, key  string
		stored       []byte
		want         string
		wantRefusal  refusal
		wantAccepted bool
	}{
		{name: "genuine", bucket: "b", key: "k", stored: signed, want: "value", wantAccepted: true},
		{name: "moved to another key", bucket: "b", key: "k2", stored: signed, wantRefusal: refusedForged},
		{name: "moved to another bucket", bucket: "b2", key: "k", stored: signed, wantRefusal: refusedForged},
		{name: "changed", bucket: "b", key: "k", stored: append(bytes.Clone(signed[:len(signed)-1]), 'X'), wantRefusal: refusedForged},
		{name: "unsigned", bucket: "b", key: "k", stored: []byte(`{"commit":"evil"}`), wantRefusal: refusedUnsigned},
		{name: "empty", bucket: "b", key: "k", stored: nil, wantRefusal: refusedUnsigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, why, ok := s.open(tc.bucket, tc.key, tc.stored)
			if ok != tc.wantAccepted || string(v) != tc.want || (!ok && why != tc.wantRefusal) {
				t.Errorf("open: %q %s %v, want %q %s %v", v, refusalNames[why], ok, tc.want, refusalNames[tc.wantRefusal], tc.wantAccepted)
			}
		})
	}
}

// FuzzBusVerify: no frame a stranger makes of a genuine one (any
// signature header, subject, reply or data) is accepted, unless it is the
// genuine frame itself; nothing panics.
func FuzzBusVerify(f *testing.F) {
	// Made alike in every fuzzing process: a fixed nonce.
	genuine := realRequest(f, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 46)
	busAt(f, busEpoch, testKeys...).signWith(genuine, busEpoch.UnixNano(), [nonceBytes]byte{1, 2, 3})
	f.Add(genuine.Header.Get(hdrAuth), genuine.Subject, genuine.Reply, genuine.Data)
	f.Add("", genuine.Subject, genuine.Reply, genuine.Data)
	f.Add("1.1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "s", "", []byte("x"))
	f.Add("1."+fmt.Sprint(int64(1<<63-1))+".x.y", "s", "r", []byte(nil))
	f.Fuzz(func(t *testing.T, auth, subject, reply string, data []byte) {
		m := clone(genuine)
		m.Subject, m.Reply, m.Data = subject, reply, data
		m.Header.Set(hdrAuth, auth)
		err := busAt(t, busEpoch, testKeys...).verify(m)
		same := auth == genuine.Header.Get(hdrAuth) && subject == genuine.Subject && reply == genuine.Reply &&
			bytes.Equal(data, genuine.Data)
		if err == nil && !same {
			t.Fatalf("a stranger's frame was accepted: auth %q subject %q reply %q data %q", auth, subject, reply, data)
		}
		if same && err != nil {
			t.Fatalf("the genuine frame was refused: %v", err)
		}
		if err != nil && !errors.Is(err, errRefused) {
			t.Fatalf("refused with %v, not a refusal", err)
		}
	})
}

// BenchmarkBus is what authentication adds to one forwarded message:
// signing it on one side and verifying it (replay memory included) on
// the other, for an empty control message, a small answer and a full
// chunk.
func BenchmarkBus(b *testing.B) {
	for _, size := range []int{0, 1 << 10, DefaultChunkSize} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			signer := busAt(b, time.Now(), testKeys...)
			signer.now = time.Now
			verifier := busAt(b, time.Now(), testKeys...)
			verifier.now = time.Now
			data := bytes.Repeat([]byte("x"), size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				m := &nats.Msg{Subject: "_INBOX.abc.def", Header: nats.Header{hdrSeq: {"7"}}, Data: data}
				signer.sign(m)
				if err := verifier.verify(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCatalogValue: no stored value but the one a replica signed for its
// bucket and key opens; nothing panics.
func FuzzCatalogValue(f *testing.F) {
	keys, err := deriveKeys(testKeys, catalogKeyInfo)
	if err != nil {
		f.Fatal(err)
	}
	s := valueSigner{keys}
	genuine := s.sign("flowyprompt-catalog", "state", []byte(`{"commit":"9d14a3d"}`))
	f.Add("state", genuine)
	f.Add("state", []byte(`{"commit":"evil"}`))
	f.Add("other", genuine)
	f.Add("state", []byte{valueVersion})
	f.Fuzz(func(t *testing.T, key string, stored []byte) {
		v, why, ok := s.open("flowyprompt-catalog", key, stored)
		same := key == "state" && bytes.Equal(stored, genuine)
		switch {
		case ok && !same:
			t.Fatalf("a stranger's value opened: key %q stored %q", key, stored)
		case same && (!ok || string(v) != `{"commit":"9d14a3d"}`):
			t.Fatalf("the genuine value: %q %v", v, ok)
		case !ok && v != nil:
			t.Fatalf("a refused value (%s) returned %q", refusalNames[why], v)
		}
	})
}
