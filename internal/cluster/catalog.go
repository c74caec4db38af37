package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnavailable is returned by Catalog while the NATS link is down: the
// caller works alone instead of waiting for the link.
var ErrUnavailable = errors.New("cluster: NATS is not connected")

// catalogBucket is the bucket the GitHub sources share (github.Shared).
const catalogBucket = "catalog"

// payloadHeadroom is left of the server's max payload for the subject and
// headers JetStream adds to a value.
const payloadHeadroom = 4 << 10

// watchRetry spaces attempts to arm a watch that failed with the link up
// (JetStream not ready yet, the bucket being created).
const watchRetry = 2 * time.Second

// Catalog is the store through which the replicas' GitHub sources share
// one catalog (it implements github.Shared, which this package does not
// import): a JetStream key-value bucket with one revision per key, whose
// Create and Update are compare-and-set on the key's last revision. It
// needs nothing newer than NATS 2.9: no per-key TTL (a claim expires by
// the time written in it) and no bucket TTL.
//
// Every value is stored signed with a key derived from the state keys
// (bus.go) and bound to its key: a value no replica wrote (someone else
// with access to the bucket) is refused and counted in /healthz. Get
// returns it as an empty value with its revision, which github.Source
// takes as unreadable and writes over; Watch passes over it.
//
// The bucket is created at first use, so a replica that starts with NATS
// down gets it when the link comes up. It is safe for concurrent use.
type Catalog struct {
	node   *Node
	bucket string

	mu sync.Mutex
	kv jetstream.KeyValue
}

// NewCatalog returns the node's catalog store.
func NewCatalog(node *Node) *Catalog {
	return &Catalog{node: node, bucket: node.Bucket(catalogBucket)}
}

// open returns the bucket, creating it if needed. While the link is down it
// fails at once rather than queue requests that would wait out their
// timeouts.
func (c *Catalog) open(ctx context.Context) (jetstream.KeyValue, error) {
	if !c.node.Connected() {
		return nil, ErrUnavailable
	}
	c.mu.Lock()
	kv := c.kv
	c.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	js := c.node.JetStream()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      c.bucket,
		Description: "flowyprompt: the GitHub catalogs the replicas share",
		History:     1,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		// Created by another replica with another description or limits:
		// use it as it is.
		kv, err = js.KeyValue(ctx, c.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open bucket %s: %w", c.bucket, err)
	}
	c.mu.Lock()
	c.kv = kv
	c.mu.Unlock()
	return kv, nil
}

// check forgets the bucket handle when the bucket is gone (a server that
// lost its store), so the next call creates it again.
func (c *Catalog) check(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		c.mu.Lock()
		c.kv = nil
		c.mu.Unlock()
	}
	return err
}

// Get returns the value of key and its revision; an absent key is
// (nil, 0, nil), and a value no replica signed is empty, not nil, with
// its revision, so a compare-and-set can replace it.
func (c *Catalog) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	kv, err := c.open(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, 0, nil
	case err != nil:
		return nil, 0, c.check(fmt.Errorf("cluster: get %s: %w", key, err))
	}
	v, ok := c.unseal(key, e.Value())
	if !ok {
		return []byte{}, e.Revision(), nil
	}
	return v, e.Revision(), nil
}

// seal signs value for key.
func (c *Catalog) seal(key string, value []byte) []byte {
	return c.node.values.sign(c.bucket, key, value)
}

// unseal returns what a stored value signed for key carries; one no replica
// signed is refused and counted.
func (c *Catalog) unseal(key string, stored []byte) ([]byte, bool) {
	v, why, ok := c.node.values.open(c.bucket, key, stored)
	if !ok {
		c.node.bus.refuse(why, "$KV."+c.bucket+"."+key)
	}
	return v, ok
}

// Create stores value under key if it is absent; ok is false when present.
func (c *Catalog) Create(ctx context.Context, key string, value []byte) (uint64, bool, error) {
	kv, err := c.open(ctx)
	if err != nil {
		return 0, false, err
	}
	rev, err := kv.Create(ctx, key, c.seal(key, value))
	switch {
	case errors.Is(err, jetstream.ErrKeyExists):
		return 0, false, nil
	case err != nil:
		return 0, false, c.check(fmt.Errorf("cluster: create %s: %w", key, err))
	}
	return rev, true, nil
}

// Update replaces the value of key if its revision is still rev; ok is
// false when another writer came first.
func (c *Catalog) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, bool, error) {
	kv, err := c.open(ctx)
	if err != nil {
		return 0, false, err
	}
	next, err := kv.Update(ctx, key, c.seal(key, value), rev)
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return 0, false, nil
	case err != nil:
		return 0, false, c.check(fmt.Errorf("cluster: update %s: %w", key, err))
	}
	return next, true, nil
}

// Put stores value under key unconditionally.
func (c *Catalog) Put(ctx context.Context, key string, value []byte) error {
	kv, err := c.open(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, key, c.seal(key, value)); err != nil {
		return c.check(fmt.Errorf("cluster: put %s: %w", key, err))
	}
	return nil
}

// Delete removes key and leaves nothing behind; an absent key is not an
// error. A key-value delete would leave a marker per key for good (a 2.9
// server has no marker TTL), one per blob of every commit the library
// moved past, so the key's subject is purged from the bucket's stream
// instead. Watchers of the key are not told: the source deletes only
// listings and blobs, which nobody watches.
func (c *Catalog) Delete(ctx context.Context, key string) error {
	if _, err := c.open(ctx); err != nil {
		return err
	}
	js := c.node.JetStream()
	// A bucket B is the stream KV_B holding subject $KV.B.KEY per key.
	st, err := js.Stream(ctx, "KV_"+c.bucket)
	if err != nil {
		return c.check(fmt.Errorf("cluster: delete %s: %w", key, err))
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+c.bucket+"."+key)); err != nil {
		return c.check(fmt.Errorf("cluster: delete %s: %w", key, err))
	}
	return nil
}

// MaxValueSize is the server's max payload less room for the subject,
// headers and signature; 0 before the first connection, when nothing can
// be stored.
func (c *Catalog) MaxValueSize() int {
	return max(0, int(c.node.Conn().MaxPayload())-payloadHeadroom-valueOverhead)
}

// Watch calls fn with the value of key when armed and at each change until
// ctx ends. It arms itself again each time the link comes back (the
// server may have restarted, and the consumer behind the watch with it),
// so fn sees the current value after every outage; while the link is
// down, it waits for it.
func (c *Catalog) Watch(ctx context.Context, key string, fn func(value []byte, rev uint64)) error {
	back := make(chan struct{}, 1)
	cancel := c.node.OnReconnect(func() {
		select {
		case back <- struct{}{}:
		default:
		}
	})
	defer cancel()
	for ctx.Err() == nil {
		w, err := c.arm(ctx, key)
		if errors.Is(err, jetstream.ErrInvalidKey) {
			return fmt.Errorf("cluster: watch %s: %w", key, err)
		}
		if err != nil {
			t := time.NewTimer(watchRetry)
			select {
			case <-ctx.Done():
			case <-back:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		c.follow(ctx, key, w, back, fn)
		w.Stop()
	}
	return nil
}

func (c *Catalog) arm(ctx context.Context, key string) (jetstream.KeyWatcher, error) {
	kv, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	w, err := kv.Watch(ctx, key)
	if err != nil {
		return nil, c.check(err)
	}
	return w, nil
}

// follow passes the watcher's values to fn until ctx ends, the watcher
// closes, or the link comes back after an outage.
func (c *Catalog) follow(ctx context.Context, key string, w jetstream.KeyWatcher, back <-chan struct{}, fn func([]byte, uint64)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-back:
			return
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return
			case e == nil:
				// The end of the initial values.
			case e.Operation() == jetstream.KeyValuePut:
				if v, ok := c.unseal(key, e.Value()); ok {
					fn(v, e.Revision())
				}
			}
		}
	}
}
