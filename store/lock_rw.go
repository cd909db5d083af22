package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redisson's RReadWriteLock for Go applications, in its wire format (see
// the package doc and rwlock_read_acquire.lua), so Java clients, Go clients
// and the console share one lock: readers hold together, a writer alone (its
// own owner may add read levels), and releases are announced on
// wire.RWLockChannel(name) with "0" after the last reader and "1" after a
// writer. Waiting is Redisson's: subscribe, retry on a message or when the
// holder's lease would run out.
//
// Each read level has its own lease key, and scripts take keys only in
// KEYS, so a handle names the level keys it expects to touch from the read
// count it believes its owner has; a script that finds another count
// changes nothing and returns the real one, and the handle retries.

var (
	rwReadAcquireScript  = newScript("rwlock_read_acquire")
	rwWriteAcquireScript = newScript("rwlock_write_acquire")
	rwUnlockScript       = newScript("rwlock_unlock")
	rwRenewScript        = newScript("rwlock_renew")
)

// rwCountRetries bounds the attempts of one call whose read-count guess was
// wrong; each wrong guess means another handle of the same owner changed
// the count between two round trips.
const rwCountRetries = 8

// RWLock is a handle on one read-write lock for one owner. Reader and Writer
// return its two sides; both share the owner, so the owner's writer may
// take read levels and keeps them after it releases the write side.
type RWLock struct {
	c          *Client
	shared     *lockShared
	name       string
	readField  string // "<client-id>:<owner>"
	writeField string // readField + ":write"
	lease      time.Duration
	retryCap   time.Duration
	watchdog   bool
	channel    string
	err        error

	read, write RWLockSide
	owners      *byOwner[*RWLock] // see Lock.owners

	mu        sync.Mutex
	readCount int64 // the owner's read count as last seen in Redis
	// levels counts, per side (0 read, 1 write), the levels this handle's
	// calls took and did not give back, whatever the watchdog: an acquire
	// whose outcome is unknown is withdrawn only from a side at 0.
	levels [2]int64
	// renewal counts the levels of both sides taken through this handle,
	// and renews them (with a watchdog).
	renewal renewer
	// watch tells the caller when a hold of either side ends without its
	// release (lost.go).
	watch leaseWatch
}

// RWLockSide is the read or the write side of an RWLock.
type RWLockSide struct {
	rw    *RWLock
	write bool
}

// NewRWLock returns a handle on the read-write lock stored at name. Invalid
// input is reported by the first call of either side, with nothing sent to
// Redis. opts is as for NewLock; Owner must not end in ":write", which
// would read as a writer's field.
func (c *Client) NewRWLock(name string, opts *LockOptions) *RWLock {
	c.reg.announce(name)
	rw := &RWLock{c: c, shared: sharedFor(c), name: name, lease: opts.getLease(),
		retryCap: opts.getRetryInterval(), watchdog: opts.watchdog(), channel: wire.RWLockChannel(name)}
	rw.readField = c.ID() + ":" + opts.getOwner()
	rw.writeField = rw.readField + wire.RWWriteSuffix
	rw.read = RWLockSide{rw: rw}
	rw.write = RWLockSide{rw: rw, write: true}
	if opts == nil || opts.Owner == "" {
		rw.owners = &byOwner[*RWLock]{idle: func(h *RWLock) bool { return h.addLevels(false, 0) == 0 && h.addLevels(true, 0) == 0 },
			make: func(owner string) *RWLock { return c.NewRWLock(name, withOwner(opts, owner)) }}
	}
	switch {
	case validateName(name) != nil:
		rw.err = validateName(name)
	case opts.validate(MaxOwnerLen) != nil:
		rw.err = opts.validate(MaxOwnerLen)
	case strings.HasSuffix(rw.readField, wire.RWWriteSuffix):
		rw.err = invalid("owner", "must not end in %q", wire.RWWriteSuffix)
	default:
		rw.err = c.redissonSlotCheck(name, wire.RWReadLevelKey(name, rw.readField, 1))
	}
	return rw
}

// redissonSlotCheck refuses, on a Cluster, a name whose Redisson-derived key
// derived would hash to another slot than the name. Redisson names derived
// keys "{<name>}:..." or "...:{<name>}", which share the name's slot unless
// the name holds braces that do not form a tag ("a{b", "a{}b"); Redisson
// itself fails with CROSSSLOT on such names, and on a single node they work.
func (c *Client) redissonSlotCheck(name, derived string) error {
	if _, cluster := c.rdb.(*redis.ClusterClient); cluster && wire.Slot(derived) != wire.Slot(name) {
		return invalid("name", "%q cannot be used on Redis Cluster: Redisson's key %q is in another hash slot", name, derived)
	}
	return nil
}

// side is the read or the write side.
func (rw *RWLock) side(write bool) *RWLockSide {
	if write {
		return &rw.write
	}
	return &rw.read
}

// Reader is the read side: any number of owners may hold it at once.
func (rw *RWLock) Reader() *RWLockSide { return &rw.read }

// Writer is the write side: one owner holds it, and no other owner reads.
func (rw *RWLock) Writer() *RWLockSide { return &rw.write }

// Name is the key of the lock.
func (rw *RWLock) Name() string { return rw.name }

// Name is the key of the lock.
func (s *RWLockSide) Name() string { return s.rw.name }

// HolderID is the hash field of this side, as the console lists it:
// "<client-id>:<owner>" for reads, with ":write" appended for writes.
func (s *RWLockSide) HolderID() string {
	if s.write {
		return s.rw.writeField
	}
	return s.rw.readField
}

// TryLock takes this side, or re-enters it, without waiting. When the other
// side is held by someone else the error is a *LockedError (errors.Is
// ErrNotObtained). A read holder asking for the write side is refused like
// anyone else, as in Redisson: release the read levels first.
func (s *RWLockSide) TryLock(ctx context.Context) error {
	if a := actor(ctx, s.rw.owners); a != nil {
		return a.side(s.write).TryLock(ctx)
	}
	if s.rw.err != nil {
		return s.rw.err
	}
	ttl, ok, err := s.attempt(ctx, nil)
	if err != nil || ok {
		return err
	}
	return &LockedError{Name: s.rw.name, TTL: ttl}
}

// Lock takes this side, waiting while it cannot. The first attempt goes out
// before subscribing, so an uncontended lock costs one round trip; then the
// handle listens on redisson_rwlock:{<name>} and tries again on every release,
// when the holder's lease would run out, and at least every RetryInterval. When
// ctx ends first the error matches ErrNotObtained and ctx.Err(); when it
// cannot subscribe to the channel, ErrNotObtained with the cause (nothing
// taken). Readers are not queued: a steady stream of readers can keep a
// writer waiting, as in Redisson.
//
// An attempt that gets no reply ends Lock (and TryLock) with ErrUncertain.
// When the handle held no level of this side before, the level the attempt
// may have taken is released at once by one rwlock_unlock sent once (a
// no-op when it took none), so no lease outlives a caller told it failed.
// What remains possible: if that release loses its reply too, or finds
// another handle of the same owner changed the read count meanwhile, the
// level stays until its lease runs out (no watchdog renews it). A handle
// that already held levels of this side keeps whatever the attempt did.
func (s *RWLockSide) Lock(ctx context.Context) error {
	if a := actor(ctx, s.rw.owners); a != nil {
		return a.side(s.write).Lock(ctx)
	}
	if s.rw.err != nil {
		return s.rw.err
	}
	return waitRetrying(ctx, &s.rw.shared.hub, s.rw.channel, s.rw.retryCap,
		func(ctx context.Context, _ bool, clock *waitClock) (time.Duration, bool, error) {
			return s.attempt(ctx, clock)
		}, nil)
}

// Unlock releases one level of this side. The owner's last level of the
// last holder deletes the lock and publishes; ErrNotHeld (lock untouched)
// when the owner does not hold this side, e.g. after its lease ran out or
// it was force-unlocked.
func (s *RWLockSide) Unlock(ctx context.Context) error {
	if a := actor(ctx, s.rw.owners); a != nil {
		return a.side(s.write).Unlock(ctx)
	}
	rw := s.rw
	if rw.err != nil {
		return rw.err
	}
	if err := rw.c.decidePubsub(ctx); err != nil {
		return err
	}
	keys := []string{rw.name, wire.HeldKey(rw.name)}
	argv := []any{"write", rw.writeField, rw.channel, rw.lease.Milliseconds(), 0, rw.c.pubsub}
	for range rwCountRetries {
		var guess int64
		if !s.write {
			guess = rw.guess()
			if guess < 1 {
				guess = 1
			}
			keys = []string{rw.name, wire.HeldKey(rw.name), wire.RWReadLevelKey(rw.name, rw.readField, guess)}
			argv = []any{"read", rw.readField, rw.channel, rw.lease.Milliseconds(), guess, rw.c.pubsub}
		}
		res, err := rw.c.runScript(ctx, rwUnlockScript, keys, argv...).Result()
		if errors.Is(err, redis.Nil) {
			// The watchdog finds out on its own if the hold was lost.
			rw.clearLevels(s.write)
			if rw.addLevels(!s.write, 0) == 0 {
				rw.watch.lose(lostNotHeld)
			}
			return fmt.Errorf("%w: %q by %s", ErrNotHeld, rw.name, s.HolderID())
		}
		if err != nil {
			// As Lock.releaseUnknown: the owner's last level, whose release is
			// unknown, is no longer renewed.
			if rw.addLevels(s.write, 0)+rw.addLevels(!s.write, 0) == 1 {
				rw.watch.released()
			}
			rw.renewal.releasedUncertain()
			return rw.scriptErr("unlock", err)
		}
		if count, retry := rwRecount(res); retry {
			rw.setGuess(count)
			continue
		}
		code, _ := res.(int64)
		if !s.write {
			rw.setGuess(guess - 1)
		}
		if rw.addLevels(s.write, -1) == 0 && (code == 1 || rw.addLevels(!s.write, 0) == 0) {
			rw.watch.released()
		}
		rw.released(code == 1)
		return nil
	}
	return fmt.Errorf("store: rwlock unlock %q: the read count of %s keeps changing", rw.name, rw.readField)
}

// Refresh restarts the lease of what the owner holds of the lock, as the
// watchdog's renewal does: both sides, and every read level's lease key,
// share one lease. For handles made with NoWatchdog, or to extend the lease
// at once. ErrNotHeld when the owner holds neither side.
func (s *RWLockSide) Refresh(ctx context.Context) error {
	if a := actor(ctx, s.rw.owners); a != nil {
		return a.side(s.write).Refresh(ctx)
	}
	if s.rw.err != nil {
		return s.rw.err
	}
	ok, err := s.rw.renew(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, s.rw.name, s.HolderID())
	}
	return nil
}

// attempt runs one acquire of this side: ok, or the holder's remaining
// lease.
func (s *RWLockSide) attempt(ctx context.Context, clock *waitClock) (time.Duration, bool, error) {
	rw := s.rw
	lease := rw.lease.Milliseconds()
	for range rwCountRetries {
		var cmd *redis.Cmd
		var guess int64
		sent := time.Now()
		if s.write {
			keys, argv := []string{rw.name, wire.StatsKey(rw.name), wire.HeldKey(rw.name)}, []any{lease, rw.writeField}
			if clock != nil {
				keys, argv = append(keys, wire.PollWaitersKey(rw.name)), append(argv, clock.pollArgs()...)
			}
			cmd = rw.c.runScript(ctx, rwWriteAcquireScript, keys, argv...)
		} else {
			guess = rw.guess()
			if guess >= wire.MaxRWLevelKeys {
				return 0, false, invalid("read levels", "%s already holds %d read levels of %q", rw.readField, guess, rw.name)
			}
			keys := []string{rw.name, wire.StatsKey(rw.name), wire.RWReadLevelKey(rw.name, rw.readField, guess+1), wire.HeldKey(rw.name)}
			argv := []any{lease, rw.readField, rw.writeField, guess}
			if clock != nil {
				keys, argv = append(keys, wire.PollWaitersKey(rw.name)), append(argv, clock.pollArgs()...)
			}
			cmd = rw.c.runScript(ctx, rwReadAcquireScript, keys, argv...)
		}
		res, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			rw.watch.granted(ctx, leaseEnd(sent, rw.lease), nil)
			if !s.write {
				rw.setGuess(guess + 1)
			}
			rw.addLevels(s.write, 1)
			rw.held(ctx)
			return 0, true, nil
		}
		if err != nil {
			if errors.Is(err, ErrUncertain) && rw.addLevels(s.write, 0) == 0 {
				s.withdrawUncertain(ctx, guess)
			}
			return 0, false, rw.scriptErr("acquire", err)
		}
		if count, retry := rwRecount(res); retry {
			rw.setGuess(count)
			continue
		}
		ms, _ := res.(int64)
		return time.Duration(ms) * time.Millisecond, false, nil
	}
	return 0, false, fmt.Errorf("store: rwlock acquire %q: the read count of %s keeps changing", rw.name, rw.readField)
}

// withdrawUncertain releases the level an acquire whose reply was lost may
// have taken, when this side held none before; guess is the read count the
// acquire was sent with (it would have made it guess+1). The release is
// sent once: it changes nothing when the owner holds no such level.
func (s *RWLockSide) withdrawUncertain(ctx context.Context, guess int64) {
	rw := s.rw
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	keys := []string{rw.name, wire.HeldKey(rw.name)}
	argv := []any{"write", rw.writeField, rw.channel, rw.lease.Milliseconds(), 0, rw.c.pubsub}
	if !s.write {
		keys = []string{rw.name, wire.HeldKey(rw.name), wire.RWReadLevelKey(rw.name, rw.readField, guess+1)}
		argv = []any{"read", rw.readField, rw.channel, rw.lease.Milliseconds(), guess + 1, rw.c.pubsub}
	}
	res, err := rw.c.runScript(wctx, rwUnlockScript, keys, argv...).Result()
	if err != nil {
		return
	}
	if count, retry := rwRecount(res); retry {
		rw.setGuess(count)
	} else if !s.write {
		rw.setGuess(guess)
	}
}

// addLevels adds d to a side's level count and returns the new count.
func (rw *RWLock) addLevels(write bool, d int64) int64 {
	i := 0
	if write {
		i = 1
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.levels[i] = max(rw.levels[i]+d, 0)
	return rw.levels[i]
}

// clearLevels records that the owner holds no level of a side (an unlock
// was told so).
func (rw *RWLock) clearLevels(write bool) { rw.addLevels(write, -1<<62) }

// rwRecount reads a script's "your count was wrong" reply, {count}.
func rwRecount(res any) (int64, bool) {
	v, ok := res.([]any)
	if !ok || len(v) != 1 {
		return 0, false
	}
	n, ok := v[0].(int64)
	return n, ok
}

func (rw *RWLock) guess() int64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.readCount
}

func (rw *RWLock) setGuess(n int64) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.readCount = max(n, 0)
}

// held counts a level and starts the renewal on the first one.
func (rw *RWLock) held(ctx context.Context) {
	if rw.watchdog {
		rw.renewal.held(func(stop chan struct{}) { rw.renewLoop(context.WithoutCancel(ctx), stop) })
	}
}

// released stops the renewal once this handle holds no level, or the lock
// is gone.
func (rw *RWLock) released(gone bool) {
	if rw.watchdog {
		rw.renewal.released(gone)
	}
}

// renewLoop extends the lock and the owner's read level keys every
// lease/3 while the owner holds either side. One goroutine per handle that
// holds something: a read-write lock is held by few owners at a time, and
// the per-Client watchdog renews RLock-layout holds only.
func (rw *RWLock) renewLoop(ctx context.Context, stop chan struct{}) {
	every := max(rw.lease/3, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		sent := time.Now()
		ok, err := rw.renew(rctx)
		cancel()
		switch {
		case err == nil && ok:
			lastOK = sent
			rw.watch.renewed(leaseEnd(sent, rw.lease))
			continue
		case err == nil, errors.Is(err, redis.ErrClosed), time.Since(lastOK) >= rw.lease:
			// Lost (expired, force-unlocked), or unreachable for a whole
			// lease: nothing left to keep.
			rw.renewal.lost(stop)
			why := lostGone
			if errors.Is(err, redis.ErrClosed) {
				why = lostClosed
			} else if err != nil {
				why = lostUnrenewed
			}
			rw.watch.lose(why)
			return
		}
		// A transient error: the next tick retries.
	}
}

// renew runs one renewal; false when the owner holds neither side.
func (rw *RWLock) renew(ctx context.Context) (bool, error) {
	for range rwCountRetries {
		guess := min(rw.guess(), wire.MaxRWLevelKeys)
		keys := make([]string, 0, 2+guess)
		keys = append(keys, rw.name, wire.HeldKey(rw.name))
		for level := int64(1); level <= guess; level++ {
			keys = append(keys, wire.RWReadLevelKey(rw.name, rw.readField, level))
		}
		res, err := rw.c.runScript(ctx, rwRenewScript, keys,
			rw.lease.Milliseconds(), rw.readField, rw.writeField, strconv.FormatInt(guess, 10)).Result()
		if err != nil {
			return false, rw.scriptErr("renew", err)
		}
		if count, retry := rwRecount(res); retry {
			rw.setGuess(count)
			continue
		}
		n, _ := res.(int64)
		return n == 1, nil
	}
	return false, fmt.Errorf("store: rwlock renew %q: the read count of %s keeps changing", rw.name, rw.readField)
}

func (rw *RWLock) scriptErr(op string, err error) error {
	return lockScriptErr("rwlock", op, rw.name, err)
}
