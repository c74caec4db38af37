// Package cluster joins flowyprompt replicas through NATS: one connection
// per process (Node), the replicas it sees, and the subjects the shared
// parts use. What is shared is built on it elsewhere: the GitHub catalog
// and its revalidation (JetStream key-value, compare-and-set), and the
// forwarding of 2025-era session requests to the replica that holds the
// session (Router: request/reply, with the answer streamed back).
//
// A replica never depends on NATS to serve: when the server is down at
// start or later, the client keeps reconnecting in the background
// (nats.go's own loop), Connected reports false, every shared part falls
// back to what one process does alone, and Node.OnReconnect lets them
// rejoin when the link is back.
//
// # Configuration
//
//	NATS_URL    nats://HOST:4222 (several, comma-separated); tls:// for TLS;
//	            user:password@ or token@ in the URL authenticate
//	NATS_CREDS  a .creds file (JWT and NKey seed)
//	NATS_CA     CA certificate file to verify the server
//	NATS_CERT   client certificate file (with NATS_KEY) for mutual TLS
//	NATS_KEY    the client certificate's key
//
// The URL may hold a password: it is never logged; logs and /healthz name
// the server with its credentials removed.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultPrefix starts every subject and names every bucket the replicas
// share.
const DefaultPrefix = "flowyprompt"

const (
	// presenceInterval spaces the heartbeats replicas see each other by;
	// a replica silent for presenceExpiry is no longer listed.
	presenceInterval = time.Second
	presenceExpiry   = 3 * presenceInterval
)

// Options configure a Node.
type Options struct {
	// URL is the NATS server's URL, or several, comma-separated.
	URL string
	// Creds, CA, Cert and Key are files: a user credentials file, a CA to
	// verify the server, and a client certificate with its key.
	Creds, CA, Cert, Key string
	// Replica names this replica; default: the host name and a random
	// suffix, so two processes on one host differ.
	Replica string
	// Prefix starts subjects and bucket names (default DefaultPrefix);
	// replicas share only what they share a prefix for.
	Prefix string
	// Logger gets connection state changes (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Keys are the state keys (FLOWYPROMPT_STATE_KEYS, decoded), the same
	// on every replica: the keys that sign the messages between replicas
	// and the catalog's values are derived from them (bus.go). Required.
	Keys [][]byte
}

// Node is this replica's membership in the cluster. It is safe for
// concurrent use.
type Node struct {
	id     string
	prefix string
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	now    func() time.Time
	stop   chan struct{}
	done   sync.WaitGroup

	mu        sync.Mutex
	connected bool
	since     time.Time // of the current state, connected or not
	lastErr   string
	seen      map[string]time.Time // replica → last heartbeat
	onUp      map[int]func()
	nextUp    int
	changed   chan struct{} // closed and replaced at each change Health may show
	warned    bool          // of a link without credentials or TLS, once

	bus    *busAuth
	values valueSigner
}

// Join connects to NATS and starts announcing this replica. A server that
// cannot be reached yet is not an error: the node keeps trying in the
// background and reports Connected false meanwhile. A malformed setting
// (an unreadable credentials file, a bad URL) is.
func Join(opts Options) (*Node, error) {
	if strings.TrimSpace(opts.URL) == "" {
		return nil, errors.New("cluster: no NATS URL: set --nats or NATS_URL")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Replica == "" {
		opts.Replica = defaultReplicaID()
	}
	if !validToken(opts.Replica) {
		return nil, fmt.Errorf("cluster: replica id %q: use letters, digits, '-' and '_' only", opts.Replica)
	}
	if !validToken(opts.Prefix) {
		return nil, fmt.Errorf("cluster: subject prefix %q: use letters, digits, '-' and '_' only", opts.Prefix)
	}
	busKeys, err := deriveKeys(opts.Keys, busKeyInfo)
	if err != nil {
		return nil, err
	}
	valueKeys, err := deriveKeys(opts.Keys, catalogKeyInfo)
	if err != nil {
		return nil, err
	}
	n := &Node{id: opts.Replica, prefix: opts.Prefix, log: opts.Logger, now: opts.Now,
		stop: make(chan struct{}), seen: map[string]time.Time{}, onUp: map[int]func(){}, since: opts.Now(),
		changed: make(chan struct{}), bus: newBusAuth(busKeys, opts.Now, opts.Logger), values: valueSigner{valueKeys}}
	nopts := []nats.Option{
		nats.Name("flowyprompt " + opts.Replica),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ConnectHandler(func(nc *nats.Conn) { n.up(nc) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { n.up(nc) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { n.down(err) }),
		// Errors of subscriptions (a slow consumer) would otherwise go
		// nowhere.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			n.log.Warn("NATS error", "subject", subj, "error", err)
		}),
	}
	if opts.Creds != "" {
		nopts = append(nopts, nats.UserCredentials(opts.Creds))
	}
	if opts.CA != "" {
		nopts = append(nopts, nats.RootCAs(opts.CA))
	}
	if opts.Cert != "" || opts.Key != "" {
		if opts.Cert == "" || opts.Key == "" {
			return nil, errors.New("cluster: NATS_CERT and NATS_KEY go together: set both for a client certificate, or neither")
		}
		nopts = append(nopts, nats.ClientCert(opts.Cert, opts.Key))
	}
	nc, err := nats.Connect(opts.URL, nopts...)
	if err != nil {
		// With RetryOnFailedConnect an unreachable server is no error;
		// what is left is a setting that can never work. The error may
		// quote the URL, password included: it is not repeated.
		return nil, fmt.Errorf("cluster: cannot use the NATS settings: %s", redactURLs(err.Error(), opts.URL))
	}
	n.nc = nc
	if n.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	if _, err := nc.Subscribe(n.Subject("presence"), n.heard); err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: subscribe to presence: %w", err)
	}
	n.done.Add(1)
	go n.announce()
	if nc.IsConnected() {
		n.up(nc)
	} else {
		n.log.Warn("NATS is not reachable yet; serving alone and retrying in the background", "replica", n.id)
	}
	return n, nil
}

// ID is this replica's id.
func (n *Node) ID() string { return n.id }

// Conn is the NATS connection. Callers must not close it.
func (n *Node) Conn() *nats.Conn { return n.nc }

// JetStream is the connection's JetStream context.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// Subject joins the prefix and parts with dots: Subject("session", id).
// Parts must be valid subject tokens.
func (n *Node) Subject(parts ...string) string {
	return n.prefix + "." + strings.Join(parts, ".")
}

// Bucket names a JetStream bucket for this cluster: bucket names allow no
// dots, so the prefix is joined with '-'.
func (n *Node) Bucket(name string) string { return n.prefix + "-" + name }

// Connected reports whether the NATS link is up now.
func (n *Node) Connected() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.connected
}

// OnReconnect calls fn (on its own goroutine) each time the link comes
// back after being down, so a shared part can catch up with what it missed
// and rejoin. The returned func unregisters it.
func (n *Node) OnReconnect(fn func()) (cancel func()) {
	n.mu.Lock()
	id := n.nextUp
	n.nextUp++
	n.onUp[id] = fn
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.onUp, id)
		n.mu.Unlock()
	}
}

// changes returns a channel closed at the next event that may change what
// Health and Connected report: the link going up or down, or a heartbeat
// heard. This replica hears its own every second, which is also when one
// gone silent drops out of the list. The tests wait on it.
func (n *Node) changes() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

// changedLocked wakes those waiting on changes; n.mu is held.
func (n *Node) changedLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// Health is what /healthz shows of the cluster link.
type Health struct {
	Replica   string    `json:"replica"`
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since"`
	Server    string    `json:"server,omitempty"` // credentials removed
	Replicas  []string  `json:"replicas"`         // seen within the last few seconds, this one included
	LastError string    `json:"last_error,omitempty"`
	// Refused counts the messages on the bus (and catalog values) this
	// replica refused since it started, by reason: "unsigned", "forged",
	// "stale", "replayed". Anything but zero means someone without the
	// state keys speaks on the bus, or a replica with other keys or a
	// clock far off.
	Refused map[string]uint64 `json:"refused_messages"`
}

// Health reports the link and the replicas seen.
func (n *Node) Health() Health {
	now := n.now()
	n.mu.Lock()
	h := Health{Replica: n.id, Connected: n.connected, Since: n.since, LastError: n.lastErr, Refused: n.bus.counts()}
	for id, at := range n.seen {
		if now.Sub(at) <= presenceExpiry {
			h.Replicas = append(h.Replicas, id)
		}
	}
	n.mu.Unlock()
	if h.Connected {
		h.Server = redactURL(n.nc.ConnectedUrl())
	}
	if !slices.Contains(h.Replicas, n.id) {
		h.Replicas = append(h.Replicas, n.id)
	}
	slices.Sort(h.Replicas)
	return h
}

// Close stops announcing and closes the connection; the replica drops out
// of the others' lists within presenceExpiry. Close on a nil Node does
// nothing.
func (n *Node) Close() {
	if n == nil {
		return // one process, no cluster
	}
	select {
	case <-n.stop:
		return
	default:
	}
	close(n.stop)
	n.done.Wait()
	n.nc.Close()
}

type heartbeat struct {
	Replica string `json:"replica"`
}

func (n *Node) announce() {
	defer n.done.Done()
	msg, _ := json.Marshal(heartbeat{Replica: n.id})
	t := time.NewTicker(presenceInterval)
	defer t.Stop()
	for {
		// Publishing while disconnected buffers in the client; a heartbeat
		// that old is worthless, so skip it.
		if n.nc.IsConnected() {
			_ = n.publish(&nats.Msg{Subject: n.Subject("presence"), Data: msg})
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// publish signs m and publishes it.
func (n *Node) publish(m *nats.Msg) error {
	n.bus.sign(m)
	return n.nc.PublishMsg(m)
}

// verify checks that m comes from a replica (bus.go): one refused is
// counted, and is to be dropped unread.
func (n *Node) verify(m *nats.Msg) error { return n.bus.verify(m) }

func (n *Node) heard(m *nats.Msg) {
	var hb heartbeat
	if n.verify(m) != nil || json.Unmarshal(m.Data, &hb) != nil || !validToken(hb.Replica) {
		return
	}
	n.mu.Lock()
	n.seen[hb.Replica] = n.now()
	// Forget replicas long gone, so the map does not grow with restarts.
	for id, at := range n.seen {
		if n.now().Sub(at) > 100*presenceExpiry {
			delete(n.seen, id)
		}
	}
	n.changedLocked()
	n.mu.Unlock()
}

// up takes the connection from its caller: the connect callback may run
// before Join has stored it in n.nc.
func (n *Node) up(nc *nats.Conn) {
	n.mu.Lock()
	was := n.connected
	if !was {
		// Logged before the link is shown up (Health, the changes
		// channel): whoever sees it up finds the lines written. Once per
		// connection, so holding mu for them costs nothing that matters.
		n.log.Info("joined the cluster", "replica", n.id, "nats", redactURL(nc.ConnectedUrl()))
		if !n.warned {
			n.warnInsecure(nc)
		}
	}
	n.connected, n.since, n.lastErr = true, n.now(), ""
	n.warned = true
	n.changedLocked()
	fns := make([]func(), 0, len(n.onUp))
	for _, fn := range n.onUp {
		fns = append(fns, fn)
	}
	n.mu.Unlock()
	if was {
		return
	}
	for _, fn := range fns {
		go fn()
	}
}

// warnInsecure warns, once, of a NATS server that takes clients without
// credentials or without TLS: the signatures keep an outsider from
// running requests or forging answers, not from reading the traffic or
// flooding it.
func (n *Node) warnInsecure(nc *nats.Conn) {
	creds := nc.AuthRequired()
	_, tlsErr := nc.TLSConnectionState()
	tls := tlsErr == nil
	if creds && tls {
		return
	}
	var missing string
	switch {
	case !creds && !tls:
		missing = "without credentials and without TLS"
	case !creds:
		missing = "without credentials"
	default:
		missing = "without TLS"
	}
	n.log.Warn("the cluster's NATS server is reached "+missing+": whoever can reach it (or, without TLS, the network between) "+
		"can read every forwarded request and answer, session ids and arguments included, and flood or cut the replicas' traffic; "+
		"messages not signed with the state keys are refused, so they cannot run requests or forge answers. "+
		"Fix: give the replicas a NATS user of their own that alone may use the "+n.prefix+".> subjects (NATS_CREDS, or user:password@ in NATS_URL), "+
		"and TLS (tls:// with NATS_CA, NATS_CERT and NATS_KEY); docs/scale-out.md has the server configuration",
		"replica", n.id, "credentials", creds, "tls", tls)
}

func (n *Node) down(err error) {
	select {
	case <-n.stop:
		return // our own Close: nothing was lost
	default:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.connected {
		// Logged before the link is shown down, as up does: whoever
		// sees it down finds the line written.
		n.log.Warn("lost the NATS link; serving alone until it is back", "replica", n.id, "error", err)
	}
	n.connected, n.since = false, n.now()
	if err != nil {
		n.lastErr = err.Error()
	}
	n.changedLocked()
}

func defaultReplicaID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if validRune(r) {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "replica"
	}
	return host + "-" + randomHex(4)
}

func validRune(r rune) bool {
	return r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// validToken reports whether s can be one subject token and part of a
// bucket name.
func validToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !validRune(r) {
			return false
		}
	}
	return true
}

// redactURLs removes the configured URLs (which may hold credentials) from
// a message, leaving their hosts.
func redactURLs(msg, urls string) string {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, u, redactURL(u))
	}
	return msg
}

// redactURL shows a NATS URL as its scheme and host alone: user
// information (user:password@, token@, an nkey seed pasted as a user),
// the path and the query are dropped, so that neither a secret nor a
// user name reaches a log line, an error or /healthz. A value net/url
// cannot parse is hidden whole, since where its credentials end is
// unknown. (nats.go's ConnectedUrlRedacted masks only a password: a
// token or a user name would still show.)
func redactURL(raw string) string {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			return u.Host
		}
		return "REDACTED"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "REDACTED"
	}
	return u.Scheme + "://" + u.Host
}
