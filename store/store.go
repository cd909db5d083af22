package store

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Client runs lockwarden's scripts against one Redis deployment (a single
// node, or a Cluster through redis.ClusterClient).
type Client struct {
	rdb  redis.UniversalClient
	id   string
	opts Options
	// batch pipelines the hot script calls of concurrent goroutines (see
	// batch.go); nil with Options.NoBatching.
	batch *batcher
	// pubsub says whether releases also SPUBLISH (sharded.go).
	pubsub *pubsubMode
	// reg is the client registry record and name announcements (see
	// registry.go); nil with Options.NoRegistry.
	reg *registry
	// ack decides the replica acknowledgement of lock writes (see
	// replica_ack.go); nil when ReplicaAcks is negative.
	ack *acker
}

// Options tunes a Client. The zero value is usable; a nil *Options is too.
type Options struct {
	// ID identifies this client instance in lock holder fields
	// ("<ID>:<owner>"), like Redisson's connection manager UUID. It must be
	// a canonical UUID (36 characters, 8-4-4-4-12 hex digits): that is how
	// the console tells a lock's holder field from an application's hash
	// field. New panics on anything else. Default: a random UUID.
	ID string
	// NoBatching sends every lock, unlock and one-permit bucket call on its
	// own. By default calls that arrive while others are in flight are sent
	// together as one pipeline (see batch.go), which costs Redis and the
	// client far less per call under concurrency.
	NoBatching bool
	// App is the application name the client registers under (the
	// console's "orders-api on host-7"). Default: the binary's name.
	App string
	// Version is the application's version, shown next to App.
	Version string
	// Beat is the registry heartbeat period. Default: DefaultBeat. The
	// console calls a client gone after three periods without a beat.
	Beat time.Duration
	// NoRegistry keeps the client out of the client registry: no record,
	// no name announcements, no background goroutine. The console's own
	// client sets it.
	NoRegistry bool
	// ReplicaAcks is how many replicas must confirm a Lock's or FencedLock's
	// grant or renewal before it counts (Redis WAIT, sent in the same
	// pipeline as the script; see replica_ack.go); releases do not wait.
	// A grant that fewer replicas confirmed within ReplicaAckTimeout is
	// withdrawn and fails with ErrNotObtained wrapping ErrNotReplicated,
	// so a failover cannot promote a replica that never saw a lock
	// reported held. Zero follows
	// Redisson's default: every replica the master has (on one replica,
	// one), none on a master without replicas; negative turns it off.
	//
	// Cost: no extra round trip, but each write (or batch of writes) waits
	// for the replica's acknowledgement, about one more loopback or LAN
	// round trip from master to replica, and an INFO per master per second
	// while locks are used. Lock waits of a Client on a Cluster go out one
	// call per pipeline instead of batched (WAIT has no key to route by).
	ReplicaAcks int
	// ReplicaAckTimeout bounds that wait. Default DefaultReplicaAckTimeout.
	// It is held below nine tenths of rdb's ReadTimeout, which bounds the
	// pipeline the WAIT goes out in.
	ReplicaAckTimeout time.Duration
	// ReplicaAckPersist waits with WAITAOF (replicas have written the
	// grant to their append-only file) on servers that have it (Redis >=
	// 7.2); older servers get WAIT.
	ReplicaAckPersist bool
}

// batching is nil-safe: batching is on unless turned off.
func (o *Options) batching() bool { return o == nil || !o.NoBatching }

func (o *Options) getID() string {
	if o == nil || o.ID == "" {
		return newUUID()
	}
	return o.ID
}

// New wraps rdb. The caller keeps ownership of rdb and closes it; Close
// ends the client's registration (see registry.go).
func New(rdb redis.UniversalClient, opts *Options) *Client {
	c := &Client{rdb: rdb, id: opts.getID(), pubsub: &pubsubMode{}}
	if !wire.IsHolderField(c.id + ":x") {
		panic(fmt.Sprintf("store: Options.ID %q is not a canonical UUID", c.id))
	}
	if opts != nil {
		c.opts = *opts
	}
	c.opts.ID = c.id
	if opts.batching() {
		c.batch = newBatcher(rdb)
	}
	c.ack = newAcker(rdb, opts)
	// A nil rdb (a Client only asked for its ID) has nowhere to register.
	if opts.registryOn() && rdb != nil {
		c.reg = newRegistry(rdb, c.id, opts)
	}
	return c
}

// ID is the instance UUID used as the first part of holder fields.
func (c *Client) ID() string { return c.id }

// Redis returns the underlying client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
