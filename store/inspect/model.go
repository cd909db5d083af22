package inspect

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/clients"
	"github.com/lockwarden/lockwarden/store/inspect/stats"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Kind names the layout an object has in Redis, i.e. which client wrote it.
type Kind string

const (
	// KindReentrant is Redisson's RLock layout: hash <name>, one field
	// "<uuid>:<owner>" holding the reentry count, PEXPIRE lease.
	KindReentrant Kind = "reentrant"
	// KindTokenBucket is the "ratelimit:<app>" token bucket: hash with
	// last_mill_second, stored_permits, max_permits, interval and app.
	KindTokenBucket Kind = "token-bucket"

	// KindFairLock is Redisson's RFairLock while it has waiters: the RLock
	// hash plus the list redisson_lock_queue:{<name>} (waiter ids in
	// arrival order) and the zset redisson_lock_timeout:{<name>} (each
	// waiter's deadline, ms since the epoch). Without waiters Redisson
	// deletes both, and the lock is indistinguishable from KindReentrant.
	KindFairLock Kind = "fair"
	// KindFencedLock is Redisson's RFencedLock: the RLock hash plus the
	// counter redisson_lock_token:{<name>}, incremented by every acquire and
	// never expired, the fencing token the holder passes to the resource.
	KindFencedLock Kind = "fenced"
	// KindRWLock is Redisson's RReadWriteLock: hash <name> with "mode"
	// (read or write) and one field per holder ("<uuid>:<thread>" for
	// readers, "<uuid>:<thread>:write" for the writer) holding reentry
	// counts; each read level also has a string key
	// {<name>}:<holder>:rwlock_timeout:<level> with its own lease.
	KindRWLock Kind = "rwlock"
	// KindTokenLock is a string set with SET NX PX to a random token and
	// released by compare-and-delete (redsync, bsm/redislock).
	// Strings carry no marker, so only keys matching
	// ObjectPatterns.TokenLocks are treated as locks.
	KindTokenLock Kind = "token-lock"
	// KindDeadlineLock is a timestamp lock: a string SETNX to a
	// deadline in epoch ms, usually without expiry, which a client takes
	// over with GETSET once the deadline has passed. Only keys matching
	// ObjectPatterns.DeadlineLocks whose value is a number are listed; the
	// value is the holder (LockInfo.Deadline says it as a time).
	KindDeadlineLock Kind = "deadline-lock"

	// KindRedissonLimiter is Redisson's RRateLimiter: config hash <name>
	// with rate, interval (ms), type (0 overall, 1 per client) and, from
	// 3.35, keepAliveTime; state in {<name>}:value (and per client
	// {<name>}:value:<client-id>). LimiterInfo.Algorithm says whether the
	// state is the fixed window (before 3.13.3) or the sliding window (3.13.3+).
	KindRedissonLimiter Kind = "redisson-rate-limiter"
	// KindCounter is an access counter: a string INCRemented per
	// hit, EXPIREd on the first hit of a window. Only keys matching
	// ObjectPatterns.Counters are treated as counters.
	KindCounter Kind = "counter"
)

// The kinds the console lists, in the order its filters offer them. Every
// other list of kinds (the web API's ?kind= filter, the pages' filter
// links, the views' kind-specific rendering) is derived from these two.

// LockKinds are the kinds listed as locks.
func LockKinds() []Kind {
	return append([]Kind{KindReentrant, KindFairLock, KindFencedLock, KindRWLock, KindTokenLock, KindDeadlineLock},
		conventionKinds(false)...)
}

// LimiterKinds are the kinds listed as limiters.
func LimiterKinds() []Kind {
	return append([]Kind{KindTokenBucket, KindRedissonLimiter, KindCounter}, conventionKinds(true)...)
}

// Algorithm values of a Redisson rate limiter (LimiterInfo.Algorithm).
const (
	// AlgorithmFixedWindow is Redisson before 3.13.3: the whole window refills
	// at once.
	AlgorithmFixedWindow = wire.AlgorithmFixedWindow
	// AlgorithmSlidingWindow is Redisson 3.13.3 and later: each grant returns
	// one interval after it was made.
	AlgorithmSlidingWindow = wire.AlgorithmSlidingWindow
)

// Waiter is one place in a lock's queue: a thread queued on a Redisson
// fair lock, or a Lock call queued in store's hand-off queue
// (store/lock_wait.go; waiters.go reads it).
type Waiter struct {
	// ID is a fair lock's "<client-uuid>:<thread-id>", as in the queue, or
	// the wait token a store waiter queued under.
	ID string `json:"id"`
	// Owner is the holder field the waiter takes when granted,
	// "<client-uuid>:<owner>": the fair lock's waiter id, or the holder a
	// store waiter's entry names. The wait-for graph (deadlock.go) joins
	// it with the holders of other locks.
	Owner string `json:"owner"`
	// Position is the 1-based place in the queue.
	Position int `json:"position"`
	// Deadline is when the waiter is dropped if it has not taken the lock
	// by then: the score in redisson_lock_timeout, or the end of a store
	// entry (refreshed while its Lock call lives).
	Deadline time.Time `json:"deadline"`
	// DeadlineMS is Deadline in epoch ms; RemainingMS is Deadline minus
	// Redis time at the read, in ms (negative: stale, the next operation
	// on the lock drops it).
	DeadlineMS  int64 `json:"deadline_ms"`
	RemainingMS int64 `json:"remaining_ms"`
	// WaitingMS is how long the waiter has waited (AnnotateWaiter); null
	// when its arrival is not known (a fair-lock waiter).
	WaitingMS *int64 `json:"waiting_ms"`
	// ArrivedMS is when a store waiter queued (Redis time, epoch ms: the
	// queue's score); 0 for a fair-lock waiter, whose arrival Redis keeps
	// nowhere.
	ArrivedMS int64 `json:"-"`
	// Channel is where a release tells this waiter to try again.
	Channel string `json:"channel"`
	// Client and Who are the owner's identity, filled by the console
	// (AnnotateWaiter) from the client registry, never by reads.
	Client *HolderClient `json:"client,omitempty"`
	Who    string        `json:"who,omitempty"`
}

// ClientWindow is one client's state of a per-client Redisson limiter.
type ClientWindow struct {
	ClientID  string `json:"client_id"`
	Available int64  `json:"available"`
	Used      int64  `json:"used"` // permits granted in the current window
	// ResetInMS is when a fixed window refills (PTTL of the value key,
	// ms); 0 for a sliding window or when unknown.
	ResetInMS int64 `json:"reset_in_ms"`
}

// Holder is one owner of a lock.
type Holder struct {
	ID    string `json:"id"`    // the hash field, "<client-uuid>:<owner>"; a token lock's token
	Count int64  `json:"count"` // reentry count (1 for a token lock)
	// Mode is "read" or "write" for a read-write lock holder, "" otherwise.
	Mode string `json:"mode,omitempty"`
	// LeaseMS is a read holder's longest remaining level lease in ms (its
	// rwlock_timeout keys); 0 when not applicable or not read.
	LeaseMS int64 `json:"lease_ms,omitempty"`

	// Who holds it and since when: filled by the console (AnnotateHolder)
	// from the client registry and hold times, never by reads.
	//
	// Client is the holder's registered client; nil when unregistered
	// (Redisson, other libraries) or not a client's id (a token).
	Client *HolderClient `json:"client,omitempty"`
	// HeldMS is how long this holder has held the lock: since the
	// acquisition lockwarden's scripts recorded, or, with HeldSinceSeen,
	// since the console first saw it (a foreign holder). 0: unknown.
	HeldMS        int64 `json:"held_ms,omitempty"`
	HeldSinceSeen bool  `json:"held_since_seen,omitempty"`
	// RenewedAgoMS is how long ago the holder last renewed its lease
	// (recorded by lockwarden's scripts); 0 when unknown.
	RenewedAgoMS int64 `json:"renewed_ago_ms,omitempty"`
	// Who says it in words (DescribeHolder).
	Who string `json:"who,omitempty"`
	// Facts are what another library's value says of the holder (a
	// framework convention: host, pid, job, worker, since; the Fact*
	// names); nil for lockwarden's and Redisson's holders.
	Facts map[string]string `json:"facts,omitempty"`
	// AcquiredMS and RenewedMS are the recorded times (epoch ms, Redis
	// time) of lockwarden's lock scripts; 0 when none were recorded.
	AcquiredMS int64 `json:"-"`
	RenewedMS  int64 `json:"-"`
}

// HolderClient is what the registry says about a holder's client
// (clients.HolderClient).
type HolderClient = clients.HolderClient

// LockInfo is a lock as it is in Redis right now.
type LockInfo struct {
	Name    string
	Kind    Kind
	Holders []Holder
	// PTTL is the remaining lease; negative when the key has no expiry.
	PTTL time.Duration
	// Mode is a read-write lock's "read" or "write".
	Mode string
	// Waiters are the lock's queued waiters in queue order: a fair lock's
	// threads, then store's hand-off queue (at most MaxWaitersShown of
	// each; WaitersTotal counts them all).
	Waiters      []Waiter
	WaitersTotal int64
	// Subscribers counts the clients subscribed to a held Redisson lock's
	// unlock channel beside the console: its waiters when they can only be
	// counted (nil when not counted this tick).
	Subscribers *int64
	// Deadline is a deadline lock's value as a time.
	Deadline time.Time
	// FencingToken is a fenced lock's current token (the last one handed
	// out; the holder has this one). Never reset by a force-unlock.
	FencingToken int64
	// Channel is where a release of this lock is announced (for a fair
	// lock, the prefix of its per-waiter channels); "" for token locks,
	// which announce nothing.
	Channel string
	// Recognised says, for another library's convention, what in the key
	// and value made the console take it for that kind ("" for
	// lockwarden's and Redisson's own layouts).
	Recognised string
	// Stale is set when the console shows the lock as last read: its
	// node did not answer the latest sample.
	Stale *StaleRead
}

// MaxWaitersShown bounds the fair-lock waiters read per lock.
const MaxWaitersShown = 100

// LimiterInfo is a limiter's configuration and state as it is in Redis.
type LimiterInfo struct {
	Name string
	Kind Kind
	// Rate is permits per Interval for Redisson limiters and the capacity
	// (max_permits) for a token bucket.
	Rate int64
	// IntervalMS is the interval in milliseconds; for a token bucket the time
	// to refill one permit (fractions allowed, e.g. "2.0").
	IntervalMS float64
	// PerSecond is the sustained admission rate.
	PerSecond float64
	// Available is the number of permits an acquire could take now
	// (for a token bucket: stored permits plus refill up to now, capped).
	Available int64
	// App is a token bucket's "app" field (any non-empty marker).
	App string

	// AvailableUnknown says Available could not be read: a per-client
	// Redisson limiter has one value per client (its family's readings
	// list them: package family).
	AvailableUnknown bool
	// RejectionsHidden is set for limiters whose decisions other clients
	// make in their own scripts (Redisson's): Redis keeps their grants but
	// no trace of a rejection, so the stats ring counts only the attempts
	// made through lockwarden's store. Never present its rejected count as
	// the limiter's; show Grants and say rejections are not visible.
	RejectionsHidden bool
	// Grants is the permits granted in the current window as Redis shows
	// them (Redisson: rate minus value for a fixed window, the permits
	// recorded in the last interval for a sliding one); GrantsKnown false
	// when Redis does not reveal them.
	Grants      int64
	GrantsKnown bool

	// Redisson rate limiter only.
	Algorithm string // AlgorithmFixedWindow, AlgorithmSlidingWindow, or "" before the first acquire
	PerClient bool   // type 1: every client has its own window
	// ResetIn is when a fixed window refills (PTTL of the value key).
	ResetIn time.Duration
	// NextFreeIn is, for a sliding window, when its oldest grant returns.
	NextFreeIn time.Duration
	// KeepAliveMS is Redisson's keepAliveTime (0: none).
	KeepAliveMS int64
	// Counter only.
	Count int64 // hits in the current window
	// Limit is the registered limit (ObjectPatterns.Counters); LimitKnown false
	// when no rule gave one.
	Limit      int64
	LimitKnown bool
	// TTL is the remaining window; negative when the counter has no expiry
	// (its EXPIRE never ran: it will block until reset).
	TTL time.Duration

	// Recognised says, for another library's convention, what made the
	// console take the key for that kind; Facts are what its value says
	// (settings, window, where the limit lives; the Fact* names).
	Recognised string
	Facts      map[string]string
	// Stale is set when the console shows the limiter as last read: its
	// node did not answer the latest sample.
	Stale *StaleRead
}

// MaxClientsShown bounds the client windows a per-client limiter shows
// (package family keeps at most this many per limiter).
const MaxClientsShown = 100

// Counts are outcomes of acquire attempts (stats.Counts).
type Counts = stats.Counts

// The stats layout (documented above wire.BucketMS), as the console reads it.
const (
	BucketMS       = wire.BucketMS       // one stats bucket
	WindowMS       = wire.WindowMS       // the rolling window: the last 5 complete buckets
	StatsRing      = wire.StatsRing      // buckets kept per object after a clean-up (3.2 s)
	StatsMaxFields = wire.StatsMaxFields // fields a hash may reach before a clean-up
	StatsTTLMS     = wire.StatsTTLMS     // expiry of a stats hash after its last new field
)

// Summary is the rolling view of one object's outcomes at one instant.
type Summary struct {
	// Bucket is the newest (still filling) bucket number at sampling time.
	Bucket int64
	// Window sums the 5 complete buckets before Bucket (a 1 s window that
	// steps by one bucket every 200 ms).
	Window Counts
	// Newest is Bucket on its own.
	Newest Counts
	// Recent are the RecentBuckets complete buckets before Bucket, oldest
	// first (Recent[len-1] is Bucket-1); nil when all of them are empty. A
	// reader that follows a limiter bucket by bucket (the console's
	// history) counts each once however late a tick comes, up to that many.
	// On a Cluster Bucket-1 may still grow: the ring can be read just
	// before the TIME, from another master, that set Bucket.
	Recent []Counts
	// Wait is a lock's acquisitions and waits over 1 s, 10 s and 1 min;
	// nil when it had no acquisition in the last minute (and for
	// limiters).
	Wait *WaitWindows
	// Late are the late releases and renewals the lock's scripts recorded
	// in its ring (late.go), as long as the ring keeps them.
	Late []LateRelease
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
	// Waiter is the fair-lock waiter a per-waiter channel addressed.
	Waiter string `json:"waiter,omitempty"`
	// Late is what an EventLate reports (late.go).
	Late *LateRelease `json:"late,omitempty"`
}
