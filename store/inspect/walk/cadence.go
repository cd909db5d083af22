package walk

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Read cadence of known objects. Reading every lock's hash, side keys and
// stats ring every tick made 10,000 idle locks cost tens of thousands of
// commands a tick. An object whose last idleAfter reads showed no change
// and no new counts is read only every idleEvery-th tick (staggered by
// name, so each tick reads an even share); between reads the walker
// repeats its last state (with the lease counted down) and zero counts.
// A change seen by a read, or a keyspace notification naming the object
// or its stats ring, makes it busy again at once.
//
// An idle limiter is read on its turn too, but nothing else says it is in
// use again when the server publishes no keyspace notifications (Redis's
// default), and its stats ring keeps only inspect.StatsRing buckets: a burst
// between two turns would be gone before the next. So between turns its
// ring is checked every ringCheck (one HLEN): the first attempt of a
// bucket adds a field, and a field count unlike the last one seen makes it
// busy, read in full on the next tick while the burst is still within the
// inspect.RecentBuckets an inspect.Summary carries.
//
// An idle hash lock whose last read found none of its side keys is read
// lightly on its turn (sidekeys.go): its hash, its lease and one EXISTS
// over the side keys that can appear beside an unchanged hash. EXISTS
// finding any makes it busy for one tick, whose full read shows what
// appeared (a waiter, a stats ring, a fencing token).

const (
	// DefaultIdleEvery is how many ticks apart idle objects are read (5 s
	// at the default tick). Their changes show sooner when something says
	// so: a keyspace notification, an unlock message, a lease about to end.
	DefaultIdleEvery = 25
	// idleAfter is how many unchanged reads make an object idle.
	idleAfter = 3
	// longIdleAfter is how many unchanged reads make an idle object long
	// idle: read every 2×idleEvery ticks (10 s at the defaults). At 10,000
	// idle locks on a keyspace of a million keys, reads every 5 s were
	// half of the console's Redis CPU once the walk stopped re-reading
	// application hashes; an object unchanged for a minute is the common
	// case, and its changes still show at once when something says so.
	longIdleAfter = idleAfter + 12
	// ringCheck is how long an idle limiter goes without a read or a check
	// of its ring. A burst right after one is found at the next, and read
	// a tick later: within ringCheck + a tick, under the inspect.RecentBuckets a
	// inspect.Summary carries (3 s), with a second to spare for late ticks. With
	// 10,000 idle token buckets on a keyspace of a million keys the
	// sampler's Redis CPU went from 1.0 % of a core to 1.5-1.7 % (about
	// 3,800 HLEN a second, 1 µs each, most of it the key's lookup).
	ringCheck = 2 * time.Second
)

// objState is what the walker knows of one sampled object.
type objState struct {
	lock   *inspect.LockInfo
	lim    *inspect.LimiterInfo
	print  string    // what a change of state changes (not time-varying fields)
	quiet  int       // consecutive reads without change or counts
	slot   int64     // stagger: read when (tick+slot) % idleEvery (or twice that) == 0
	readAt time.Time // Redis time of the last read
	// sideless says the last read of a hash lock found none of its side
	// keys: its idle reads can be light.
	sideless bool
	// lightReads counts its light reads, to take turns at the occasional
	// side keys.
	lightReads int
	// ringLen is how many fields a limiter's stats ring had at its last
	// read or check, and ringAt the Redis time of that read or check.
	ringLen int64
	ringAt  time.Time
}

// cadence decides which names a tick reads.
type cadence struct {
	every int64
	tick  int64
	objs  map[string]*objState
	hot   map[string]bool // named by a notification since the last tick
	// light are the names this tick reads lightly, with their light reads
	// so far (split sets them; inspect.SampleOptions.Light).
	light map[string]int
	// ringChecks are the idle limiters whose rings this tick checks
	// (split sets them).
	ringChecks []string
	// lastAt is the Redis time of the last sample.
	lastAt time.Time
}

func newCadence(every int) *cadence {
	if every <= 0 {
		every = DefaultIdleEvery
	}
	return &cadence{every: int64(every), objs: map[string]*objState{}, hot: map[string]bool{},
		light: map[string]int{}}
}

// leaseSoon is how close to its end a lease makes an idle lock read every
// tick: its expiry should show as promptly as a busy lock's.
const leaseSoon = time.Second

// due reports whether name is read this tick.
func (c *cadence) due(name string) bool {
	st := c.objs[name]
	if st == nil || st.quiet < idleAfter || c.hot[name] {
		return true
	}
	every := c.every
	if st.quiet >= longIdleAfter {
		every *= 2
	}
	if (c.tick+st.slot)%every == 0 {
		return true
	}
	return st.lock != nil && st.lock.PTTL > 0 && st.readAt.Add(st.lock.PTTL).Sub(c.lastAt) < leaseSoon
}

// touch marks name busy: read it next tick.
func (c *cadence) touch(name string) {
	if st := c.objs[name]; st != nil {
		c.hot[name] = true
	}
}

// lightRead reports whether name, due this tick, can be read lightly: an
// idle hash lock not named by a notification whose last read found no
// side keys. Busy objects keep the full read.
func (c *cadence) lightRead(name string) bool {
	st := c.objs[name]
	return st != nil && st.sideless && st.lock != nil && st.quiet >= idleAfter && !c.hot[name]
}

// split returns the names of locks and limiters to read this tick, and
// sets light to those of the locks to read lightly.
func (c *cadence) split(locks, limiters []string) (readLocks, readLims []string) {
	c.tick++
	clear(c.light)
	for _, n := range locks {
		if c.due(n) {
			readLocks = append(readLocks, n)
			if c.lightRead(n) {
				st := c.objs[n]
				st.lightReads++
				c.light[n] = st.lightReads
			}
		}
	}
	c.ringChecks = c.ringChecks[:0]
	for _, n := range limiters {
		if c.due(n) {
			readLims = append(readLims, n)
		} else if st := c.objs[n]; st != nil && c.lastAt.Sub(st.ringAt) >= ringCheck {
			c.ringChecks = append(c.ringChecks, n)
		}
	}
	return readLocks, readLims
}

// merge completes s, read for readLocks and readLims, into an inspect.Sample of
// every requested name (in request order), from the states of the names
// not read, and updates those states from what was read (seen).
func (c *cadence) merge(s *inspect.Sample, seen *inspect.Sampled, locks, limiters, readLocks, readLims []string) {
	clear(c.hot)
	c.lastAt = s.At
	for n, fields := range seen.RingChecks {
		if st := c.objs[n]; st != nil {
			if fields != st.ringLen {
				c.hot[n] = true
			}
			st.ringLen, st.ringAt = fields, s.At
		}
	}
	bucket := inspect.BucketOf(s.At)
	gotLock := make(map[string]*inspect.LockInfo, len(s.Locks))
	for i := range s.Locks {
		gotLock[s.Locks[i].Name] = &s.Locks[i]
	}
	gotLim := make(map[string]*inspect.LimiterInfo, len(s.Limiters))
	for i := range s.Limiters {
		gotLim[s.Limiters[i].Name] = &s.Limiters[i]
	}
	for _, n := range readLocks {
		c.update(n, gotLock[n], nil, s, seen)
	}
	for _, n := range readLims {
		c.update(n, nil, gotLim[n], s, seen)
	}
	if len(readLocks) == len(locks) && len(readLims) == len(limiters) {
		return
	}
	outLocks := make([]inspect.LockInfo, 0, len(locks))
	for _, n := range locks {
		if l := gotLock[n]; l != nil {
			outLocks = append(outLocks, *l)
		} else if st := c.objs[n]; st != nil && st.lock != nil && !wasRead(s, n) {
			l := *st.lock
			if l.PTTL > 0 {
				l.PTTL = max(l.PTTL-s.At.Sub(st.readAt), time.Millisecond)
			}
			outLocks = append(outLocks, l)
			s.Stats[n] = inspect.Summary{Bucket: bucket}
		}
	}
	outLims := make([]inspect.LimiterInfo, 0, len(limiters))
	for _, n := range limiters {
		if l := gotLim[n]; l != nil {
			outLims = append(outLims, *l)
		} else if st := c.objs[n]; st != nil && st.lim != nil && !wasRead(s, n) {
			outLims = append(outLims, *st.lim)
			s.Stats[n] = inspect.Summary{Bucket: bucket}
		}
	}
	s.Locks, s.Limiters = outLocks, outLims
}

// wasRead reports whether name was read this tick (it has a fresh
// inspect.Summary): then its absence from the reads means it is gone.
func wasRead(s *inspect.Sample, name string) bool {
	_, ok := s.Stats[name]
	return ok
}

// update records one read of name: its state, or that it is gone.
func (c *cadence) update(name string, lock *inspect.LockInfo, lim *inspect.LimiterInfo, s *inspect.Sample, seen *inspect.Sampled) {
	if lock == nil && lim == nil {
		delete(c.objs, name)
		return
	}
	st := c.objs[name]
	if st == nil {
		// Staggered over the long idle turn, so each tick reads an even share
		// at either level.
		st = &objState{slot: int64(nameHash(name) % uint32(2*c.every))}
		c.objs[name] = st
	}
	var print string
	if lock != nil {
		print = lockPrint(lock)
	} else {
		print = limiterPrint(lim)
	}
	sum := s.Stats[name]
	if print != st.print || sum.Window != (inspect.Counts{}) || sum.Newest != (inspect.Counts{}) {
		st.quiet = 0
	} else {
		st.quiet++
	}
	found, hashRead := seen.SideKeys[name]
	if _, light := c.light[name]; found && light {
		// EXISTS saw a side key appear: the next tick reads it all.
		c.hot[name] = true
	}
	st.sideless = hashRead && !found
	st.print, st.lock, st.lim, st.readAt = print, lock, lim, s.At
	if n, ok := seen.RingLens[name]; ok {
		st.ringLen, st.ringAt = n, s.At
	}
}

// forget drops the states of names no longer sampled.
func (c *cadence) forget(locks, limiters []string) {
	if len(c.objs) <= len(locks)+len(limiters) {
		return
	}
	keep := make(map[string]bool, len(locks)+len(limiters))
	for _, n := range locks {
		keep[n] = true
	}
	for _, n := range limiters {
		keep[n] = true
	}
	for n := range c.objs {
		if !keep[n] {
			delete(c.objs, n)
		}
	}
}

func lockPrint(l *inspect.LockInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%d|%d|%s|", l.Kind, l.Mode, l.WaitersTotal, l.FencingToken, l.Channel)
	for _, h := range l.Holders {
		fmt.Fprintf(&b, "%s=%d/%s;", h.ID, h.Count, h.Mode)
	}
	for _, w := range l.Waiters {
		fmt.Fprintf(&b, "%s;", w.ID)
	}
	return b.String()
}

func limiterPrint(l *inspect.LimiterInfo) string {
	v := *l
	v.ResetIn, v.NextFreeIn, v.TTL = 0, 0, 0
	return fmt.Sprintf("%+v", v)
}

func nameHash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
