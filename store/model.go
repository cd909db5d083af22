package store

import "time"

// Kind names the layout an object has in Redis, i.e. which client wrote it.
type Kind string

const (
	// KindReentrant is Redisson's RLock layout: hash <name>, one field
	// "<uuid>:<owner>" holding the reentry count, PEXPIRE lease.
	KindReentrant Kind = "reentrant"
	// KindTokenBucket is seed 001's bucket: hash with last_mill_second,
	// stored_permits, max_permits, interval and app.
	KindTokenBucket Kind = "token-bucket"
)

// Holder is one owner of a lock.
type Holder struct {
	ID    string `json:"id"`    // the hash field, "<client-uuid>:<owner>"
	Count int64  `json:"count"` // reentry count
}

// LockInfo is a lock as it is in Redis right now.
type LockInfo struct {
	Name    string
	Kind    Kind
	Holders []Holder
	// PTTL is the remaining lease; negative when the key has no expiry.
	PTTL time.Duration
}

// LimiterInfo is a limiter's configuration and state as it is in Redis.
type LimiterInfo struct {
	Name string
	Kind Kind
	// Rate is permits per Interval for Redisson limiters and the capacity
	// (max_permits) for a token bucket.
	Rate int64
	// IntervalMS is the interval in milliseconds; for a token bucket the time
	// to refill one permit (seed 001 allows fractions, e.g. "2.0").
	IntervalMS float64
	// PerSecond is the sustained admission rate.
	PerSecond float64
	// Available is the number of permits an acquire could take now
	// (for a token bucket: stored permits plus refill up to now, capped).
	Available int64
	// App is seed 001's "app" field (any non-empty marker).
	App string
}

// Counts are outcomes of acquire attempts.
type Counts struct {
	Acquired int64 `json:"acquired"`
	Rejected int64 `json:"rejected"`
	Errors   int64 `json:"errors"`
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return Counts{c.Acquired + o.Acquired, c.Rejected + o.Rejected, c.Errors + o.Errors}
}

// Stats layout, shared by every script that records outcomes:
//
//	StatsKey(name) is a hash holding a ring of StatsRing slots. The bucket of
//	time t is floor(t_ms / BucketMS) (t from Redis TIME); its slot is
//	bucket % StatsRing. Fields per slot s: "b<s>" the bucket number stored
//	there, "a<s>" acquired, "r<s>" rejected, "e<s>" errors. A writer that
//	finds another bucket number in "b<s>" resets the slot first. The key
//	gets PEXPIRE StatsTTL on every write, so idle objects leave nothing.
const (
	BucketMS   = 200  // one stats bucket
	WindowMS   = 1000 // the rolling window: the last 5 complete buckets
	StatsRing  = 16   // slots kept per object (3.2 s)
	StatsTTLMS = 5000 // expiry of a stats hash after its last write
)

// Summary is seed 001's rolling view of one object at one instant.
type Summary struct {
	// Bucket is the newest (still filling) bucket number at sampling time.
	Bucket int64
	// Window sums the 5 complete buckets before Bucket (a 1 s window that
	// steps by one bucket every 200 ms).
	Window Counts
	// Newest is Bucket on its own.
	Newest Counts
}

// EventType says what happened to a lock.
type EventType string

const (
	// EventUnlock is a message on an unlock channel (Redisson's "0"/"1").
	EventUnlock EventType = "unlock"
	// EventForceUnlock is emitted by the console after it broke a lock.
	EventForceUnlock EventType = "force-unlock"
	// EventExpired is emitted when a lock disappears without an unlock message.
	EventExpired EventType = "expired"
)

// Event is one thing that happened to a lock.
type Event struct {
	Type    EventType `json:"type"`
	Name    string    `json:"name"`    // the lock name
	Channel string    `json:"channel"` // the pub/sub channel, for unlock events
	Message string    `json:"message"` // the published payload ("0" or "1")
	At      time.Time `json:"at"`
}
