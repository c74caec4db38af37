package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/flowyprompt/flowyprompt/internal/auth"
)

// The forwarding protocol's frames: what each message of an exchange
// carries, encoded and decoded here and nowhere else. docs/scale-out.md
// ("The forwarding protocol") says the same in prose; the two change
// together.
//
// Every decoder checks what a frame declares against the caps below before
// anything is sized by it, and ignores NATS headers and JSON fields it does
// not know, so that a later version can add one that an older replica
// passes over. No frame reaches a decoder before its signature (Fp-Auth,
// bus.go) has been verified.

// NATS header names and values. Requests and response heads are JSON in
// one header, since HTTP header names are case-insensitive and NATS's are
// not.
const (
	hdrSeq     = "Fp-Seq"     // the message's number within its exchange
	hdrRequest = "Fp-Request" // the request: wireRequest
	hdrControl = "Fp-Control" // on the accept message: where to send the body, ping and cancel
	hdrHead    = "Fp-Head"    // status and response headers: wireHead
	hdrEnd     = "Fp-End"     // endDone: the response is complete; endAbort: it never will be
	hdrOp      = "Fp-Op"      // on the control subject: opPing, opCancel or opBody

	endDone  = "1"
	endAbort = "abort"

	opPing   = "ping"
	opCancel = "cancel"
	opBody   = "body"

	pongAlive = "ok"
	pongGone  = "gone"
)

// Caps on what a frame declares. The body's cap is a Router's
// MaxBodyBytes; these are the protocol's own.
const (
	// maxHeadBytes caps the JSON of a request's or a response's head. A
	// request head holds a path with its query, a host and five headers;
	// a response head the handler's headers: a few hundred bytes each.
	maxHeadBytes = 64 << 10
	// maxSubjectBytes caps the control subject an accept names: the
	// prefix, "fwd", a router's id and an exchange's.
	maxSubjectBytes = 256
	// maxClientBytes caps the client key a request names: an address, or
	// a hash (Router.clientKey).
	maxClientBytes = 72
)

var (
	// errMalformed is a frame no replica of this version sends.
	errMalformed = errors.New("malformed forwarding frame")
	// errBodyTooLarge is a request that declares a body over the cap.
	errBodyTooLarge = errors.New("forwarded body too large")
)

// wireRequest is the head of a forwarded request, in hdrRequest.
type wireRequest struct {
	Method   string      `json:"method"`
	URI      string      `json:"uri"` // path and query
	Host     string      `json:"host"`
	Remote   string      `json:"remote,omitempty"`
	Header   http.Header `json:"header,omitempty"`
	Len      int         `json:"len"`      // of the whole body; the request message carries the first part
	Exchange string      `json:"exchange"` // the forwarder's id of the exchange
	Client   string      `json:"client"`   // who sent it, for the holder's per-client bound
	// Member is who asked, when the forwarder's guard admitted the
	// request on a member's access token (auth.MemberOf): the holder binds
	// it to the session's owner and gives it to the handler. Never the
	// token: the holder trusts the forwarder's check, as it trusts the
	// rest of a signed frame.
	Member *wireMember `json:"member,omitempty"`
}

// wireMember is an auth.Member on the wire.
type wireMember struct {
	Issuer  string   `json:"iss"`
	Subject string   `json:"sub"`
	Email   string   `json:"email,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// memberOnWire is m as a forwarded request carries it; nil for nil.
func memberOnWire(m *auth.Member) *wireMember {
	if m == nil {
		return nil
	}
	return &wireMember{Issuer: m.Issuer, Subject: m.Subject, Email: m.Email, Scopes: m.Scopes, Groups: m.Groups}
}

// member is the auth.Member w names; nil for nil.
func (w *wireMember) member() *auth.Member {
	if w == nil {
		return nil
	}
	return &auth.Member{Issuer: w.Issuer, Subject: w.Subject, Email: w.Email, Scopes: w.Scopes, Groups: w.Groups}
}

// wireHead is the head of a forwarded response, in hdrHead.
type wireHead struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
}

// requestMsg encodes the message that opens an exchange: the head and the
// body's first part.
func requestMsg(subject, reply string, req wireRequest, first []byte) (*nats.Msg, error) {
	head, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode a forwarded request: %w", err)
	}
	if len(head) > maxHeadBytes {
		return nil, fmt.Errorf("cluster: a forwarded request's head of %d bytes is over the cap of %d", len(head), maxHeadBytes)
	}
	return &nats.Msg{Subject: subject, Reply: reply, Header: nats.Header{hdrRequest: {string(head)}}, Data: first}, nil
}

// decodeRequest reads the message that opens an exchange. A body declared
// over maxBody is refused with errBodyTooLarge, anything else amiss with
// errMalformed, before anything is sized by what the message declares;
// with errBodyTooLarge it returns the request as well, to say how large.
func decodeRequest(h nats.Header, first []byte, maxBody int) (wireRequest, error) {
	head := h.Get(hdrRequest)
	if head == "" {
		return wireRequest{}, fmt.Errorf("%w: no %s header", errMalformed, hdrRequest)
	}
	if len(head) > maxHeadBytes {
		return wireRequest{}, fmt.Errorf("%w: a request head of %d bytes, over the cap of %d", errMalformed, len(head), maxHeadBytes)
	}
	var req wireRequest
	if err := json.Unmarshal([]byte(head), &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: the request head is not the JSON of a request", errMalformed)
	}
	switch {
	case req.Method == "":
		return wireRequest{}, fmt.Errorf("%w: the request has no method", errMalformed)
	case !strings.HasPrefix(req.URI, "/"):
		return wireRequest{}, fmt.Errorf("%w: the request's URI is not a path", errMalformed)
	case !validToken(req.Exchange):
		return wireRequest{}, fmt.Errorf("%w: the exchange id is not a subject token", errMalformed)
	case req.Client == "" || len(req.Client) > maxClientBytes:
		return wireRequest{}, fmt.Errorf("%w: the client key is empty or longer than %d bytes", errMalformed, maxClientBytes)
	case req.Member != nil && (req.Member.Issuer == "" || req.Member.Subject == ""):
		// A member without both names no one: taken for nobody, it would
		// match a session opened without a member.
		return wireRequest{}, fmt.Errorf("%w: the member names no issuer or no subject", errMalformed)
	case req.Len < len(first):
		return wireRequest{}, fmt.Errorf("%w: a body of %d bytes declared, %d sent in the first part", errMalformed, req.Len, len(first))
	case req.Len > maxBody:
		return req, fmt.Errorf("%w: %d bytes declared, at most %d accepted", errBodyTooLarge, req.Len, maxBody)
	}
	return req, nil
}

// answerFrame is one message from the holder to the forwarder. The first
// (number 0) is the accept, which names Control and carries nothing else,
// or, for a request refused at once, the whole answer: head, data, end.
type answerFrame struct {
	Seq     int
	Control string    // the accept's: the exchange's control subject
	Head    *wireHead // on the first message of the response
	End     string    // "", endDone or endAbort
	Data    []byte    // a part of the response body
}

// msg encodes a to subject.
func (a answerFrame) msg(subject string) (*nats.Msg, error) {
	m := &nats.Msg{Subject: subject, Header: nats.Header{hdrSeq: {strconv.Itoa(a.Seq)}}, Data: a.Data}
	if a.Control != "" {
		m.Header.Set(hdrControl, a.Control)
	}
	if a.Head != nil {
		head, err := json.Marshal(a.Head)
		if err != nil {
			return nil, fmt.Errorf("cluster: encode a forwarded response's head: %w", err)
		}
		if len(head) > maxHeadBytes {
			return nil, fmt.Errorf("cluster: a forwarded response's head of %d bytes is over the cap of %d", len(head), maxHeadBytes)
		}
		m.Header.Set(hdrHead, string(head))
	}
	if a.End != "" {
		m.Header.Set(hdrEnd, a.End)
	}
	return m, nil
}

// decodeAnswer reads a message from the holder.
func decodeAnswer(h nats.Header, data []byte) (answerFrame, error) {
	seq, err := decodeSeq(h)
	if err != nil {
		return answerFrame{}, err
	}
	a := answerFrame{Seq: seq, Control: h.Get(hdrControl), End: h.Get(hdrEnd), Data: data}
	if a.Control != "" {
		switch {
		case len(a.Control) > maxSubjectBytes || !validSubject(a.Control):
			return answerFrame{}, fmt.Errorf("%w: the control subject is not a subject of at most %d bytes", errMalformed, maxSubjectBytes)
		case seq != 0:
			return answerFrame{}, fmt.Errorf("%w: an accept numbered %d, not 0", errMalformed, seq)
		case h.Get(hdrHead) != "" || a.End != "" || len(data) > 0:
			return answerFrame{}, fmt.Errorf("%w: an accept that carries more than its control subject", errMalformed)
		}
		return a, nil
	}
	if head := h.Get(hdrHead); head != "" {
		if len(head) > maxHeadBytes {
			return answerFrame{}, fmt.Errorf("%w: a response head of %d bytes, over the cap of %d", errMalformed, len(head), maxHeadBytes)
		}
		a.Head = &wireHead{}
		if json.Unmarshal([]byte(head), a.Head) != nil || a.Head.Status < 100 || a.Head.Status > 999 {
			return answerFrame{}, fmt.Errorf("%w: the response head is not the JSON of a status and headers", errMalformed)
		}
	}
	if a.End != "" && a.End != endDone && a.End != endAbort {
		return answerFrame{}, fmt.Errorf("%w: %s is neither %q nor %q", errMalformed, hdrEnd, endDone, endAbort)
	}
	return a, nil
}

// controlFrame is one message from the forwarder to the holder's control
// subject: a body part (numbered from 1, the request being 0), a ping, or
// a cancel.
type controlFrame struct {
	Op   string
	Seq  int    // opBody's
	Data []byte // opBody's
}

// msg encodes c to subject.
func (c controlFrame) msg(subject string) *nats.Msg {
	m := &nats.Msg{Subject: subject, Header: nats.Header{hdrOp: {c.Op}}}
	if c.Op == opBody {
		m.Header.Set(hdrSeq, strconv.Itoa(c.Seq))
		m.Data = c.Data
	}
	return m
}

// decodeControl reads a message on a control subject.
func decodeControl(h nats.Header, data []byte) (controlFrame, error) {
	switch op := h.Get(hdrOp); op {
	case opPing, opCancel:
		return controlFrame{Op: op}, nil
	case opBody:
		seq, err := decodeSeq(h)
		switch {
		case err != nil:
			return controlFrame{}, err
		case seq < 1:
			return controlFrame{}, fmt.Errorf("%w: a body part numbered %d; they start at 1", errMalformed, seq)
		case len(data) == 0:
			return controlFrame{}, fmt.Errorf("%w: an empty body part", errMalformed)
		}
		return controlFrame{Op: op, Seq: seq, Data: data}, nil
	default:
		return controlFrame{}, fmt.Errorf("%w: unknown operation %.16q", errMalformed, op)
	}
}

// decodeSeq reads hdrSeq: a number in canonical decimal, so that one
// message has one spelling.
func decodeSeq(h nats.Header) (int, error) {
	s := h.Get(hdrSeq)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("%w: %s is not a number", errMalformed, hdrSeq)
	}
	return n, nil
}

// validSubject reports whether s is a NATS subject one may publish to:
// tokens separated by dots, none empty, no wildcard, no white space.
func validSubject(s string) bool {
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n\x00") {
			return false
		}
	}
	return true
}

// bodyParts reassembles a forwarded body from the request's first part and
// the body parts that follow it, in order. It holds what has arrived and
// no more, and never more than the declared length: a request that
// declares a large body and sends none costs nothing.
type bodyParts struct {
	want int // declared length, already checked against the cap
	buf  []byte
	next int // the number the next part must carry
}

func newBodyParts(first []byte, want int) *bodyParts {
	// Clipped, so that appending never writes past what NATS gave.
	return &bodyParts{want: want, buf: first[:len(first):len(first)], next: 1}
}

// add appends the part numbered seq; a gap, a repeat or a part beyond the
// declared length is an error.
func (b *bodyParts) add(seq int, data []byte) error {
	switch {
	case seq != b.next:
		return fmt.Errorf("%w: body part %d where part %d was due", errMalformed, seq, b.next)
	case len(data) > b.want-len(b.buf):
		return fmt.Errorf("%w: body parts beyond the declared %d bytes", errMalformed, b.want)
	}
	if free := cap(b.buf) - len(b.buf); free < len(data) {
		// Doubling keeps the copies few; the declared length bounds it.
		grown := make([]byte, len(b.buf), min(max(2*cap(b.buf), len(b.buf)+len(data)), b.want))
		copy(grown, b.buf)
		b.buf = grown
	}
	b.buf = append(b.buf, data...)
	b.next++
	return nil
}

// complete reports whether the whole declared body has arrived.
func (b *bodyParts) complete() bool { return len(b.buf) == b.want }
