package store

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// The watchdog keeps the locks a Client holds alive: every hold is renewed
// every lease/3 until its last level is released. Renewal is per holder, not
// per handle: handles sharing an Owner re-enter one hold, and one renewal
// keeps it alive.
//
// One scheduler per Client serves every hold: a heap ordered by the next
// renewal and one timer armed for the earliest. Taking and releasing a lock
// is then a map insert and a heap push (and their removal) under a mutex,
// with no goroutine, channel or timer per hold; a lock held for less than
// lease/3 is never renewed and costs nothing more. A renewal that comes due
// runs in its own goroutine, so a slow Redis delays no other renewal.

type renewKey struct{ name, holder string }

// renewal is one hold being kept alive.
type renewal struct {
	key   renewKey
	l     *Lock           // the handle that took it: lease, script, keys
	ctx   context.Context // of the first acquire, for its values (never cancelled here)
	holds int             // successful acquires minus releases seen through this Client
	every time.Duration
	due   time.Time
	index int // in the heap; -1 while out of it (renewing, or gone)
	// lastOK is when the call that last set the lease was sent; once a
	// whole lease has passed without a successful renewal the lock is lost
	// whatever Redis says.
	lastOK time.Time
	// others are the other handles of this Client that took the hold
	// under the same holder field (a shared Owner): a loss is theirs too.
	others []*Lock
}

type renewHeap []*renewal

func (h renewHeap) Len() int           { return len(h) }
func (h renewHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h renewHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *renewHeap) Push(x any) {
	r := x.(*renewal)
	r.index = len(*h)
	*h = append(*h, r)
}
func (h *renewHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.index = -1
	return r
}

// watchdog is the scheduler's state; lockShared.mu guards it.
type watchdog struct {
	renewals map[renewKey]*renewal
	queue    renewHeap
	timer    *time.Timer
	armedFor time.Time // when timer fires; zero while disarmed
}

func (s *lockShared) acquired(ctx context.Context, l *Lock) {
	s.acquiredFirst(ctx, l, l.lease/3)
}

// acquiredFirst is acquired with the first renewal after first.
func (s *lockShared) acquiredFirst(ctx context.Context, l *Lock, first time.Duration) {
	k := renewKey{l.name, l.holder}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.wd.renewals[k]; r != nil {
		r.holds++
		if r.l != l && !slices.Contains(r.others, l) {
			r.others = append(r.others, l)
		}
		return
	}
	now := time.Now()
	r := l.spare
	if r == nil {
		r = &renewal{}
	}
	l.spare = nil
	*r = renewal{key: k, l: l, ctx: ctx, holds: 1, every: l.lease / 3, lastOK: now, index: -1, others: r.others[:0]}
	if s.wd.renewals == nil {
		s.wd.renewals = make(map[renewKey]*renewal)
	}
	s.wd.renewals[k] = r
	s.schedule(r, now.Add(max(first, time.Millisecond)))
}

// released stops the renewal once the last level is gone. A release of the
// last level racing a new acquire by the same holder leaves holds above zero
// either way the two updates are ordered, so the new hold keeps its renewal.
func (s *lockShared) released(l *Lock, last bool) {
	k := renewKey{l.name, l.holder}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.wd.renewals[k]
	if r == nil {
		return
	}
	r.holds--
	if last && r.holds <= 0 {
		s.drop(r)
	}
}

// schedule queues r for due and arms the timer if due is the earliest.
// Callers hold mu.
func (s *lockShared) schedule(r *renewal, due time.Time) {
	r.due = due
	heap.Push(&s.wd.queue, r)
	s.arm()
}

// drop forgets r. A renewal that was in the heap has no renewOnce
// running on it, so nothing else refers to it: it becomes its handle's
// spare, and that handle's next hold takes it instead of allocating one
// (a short hold, never renewed, is the common case). Callers hold mu.
func (s *lockShared) drop(r *renewal) {
	if s.wd.renewals[r.key] == r {
		delete(s.wd.renewals, r.key)
	}
	if r.index >= 0 {
		heap.Remove(&s.wd.queue, r.index)
		if r.l.spare == nil {
			clear(r.others)
			r.ctx = nil
			r.l.spare = r
		}
	}
}

// arm makes the timer fire by the earliest due renewal. A timer armed for
// a later time is moved earlier; one armed earlier than needed (its hold was
// released) just fires, finds nothing due and re-arms. Callers hold mu.
func (s *lockShared) arm() {
	if len(s.wd.queue) == 0 {
		return
	}
	due := s.wd.queue[0].due
	if !s.wd.armedFor.IsZero() && !due.Before(s.wd.armedFor) {
		return
	}
	s.wd.armedFor = due
	d := time.Until(due)
	if s.wd.timer == nil {
		s.wd.timer = time.AfterFunc(d, s.fire)
		return
	}
	s.wd.timer.Reset(d)
}

// fire starts every renewal that is due and re-arms for the next.
func (s *lockShared) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wd.armedFor = time.Time{}
	now := time.Now()
	for len(s.wd.queue) > 0 && !s.wd.queue[0].due.After(now) {
		r := heap.Pop(&s.wd.queue).(*renewal)
		go s.renewOnce(r)
	}
	s.arm()
}

// renewOnce extends r's lease and schedules the next renewal, or forgets r
// when the lock is gone. r is out of the heap meanwhile; a release that
// comes in between only removes it from the map, which renewOnce notices.
func (s *lockShared) renewOnce(r *renewal) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.every)
	sent := time.Now()
	ok, err := r.l.renew(ctx)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wd.renewals[r.key] != r {
		return // released meanwhile
	}
	now := time.Now()
	switch {
	case err == nil && ok:
		r.lastOK = sent
		r.tell(func(w *leaseWatch) { w.renewed(leaseEnd(sent, r.l.lease)) })
	case err == nil && !ok:
		// Expired, force-unlocked or taken over: nothing left to keep.
		s.drop(r)
		r.tell(func(w *leaseWatch) { w.lose(lostGone) })
		return
	case errors.Is(err, redis.ErrClosed):
		s.drop(r)
		r.tell(func(w *leaseWatch) { w.lose(lostClosed) })
		return
	case now.Sub(r.lastOK) >= r.l.lease:
		// The lease ran out while Redis could not be reached: the lock is
		// lost either way.
		s.drop(r)
		r.tell(func(w *leaseWatch) { w.lose(lostUnrenewed) })
		return
	}
	// Renewed, or a transient error the next round retries (by the end of
	// the last confirmed lease at the latest).
	next := now.Add(r.every)
	if end := r.lastOK.Add(r.l.lease); err != nil && end.Before(next) {
		next = end
	}
	s.schedule(r, next)
}

// tell applies f to the lease watch of every handle that took the hold.
// Callers hold mu; the watches have locks of their own, never taken
// around mu.
func (r *renewal) tell(f func(*leaseWatch)) {
	f(&r.l.watch)
	for _, l := range r.others {
		f(&l.watch)
	}
}
