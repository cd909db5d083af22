package store

import (
	"context"
	"fmt"
	"time"
)

// Followers: a Client's waiters that arrive within followWindow of a
// queued waiter of the same Client on the same lock write no queue entry
// of their own. They stand behind that waiter in process, as a train, in
// arrival order, and each holder of the train passes the lock to the next
// of them (lock_pass.go) before anyone behind the train in the Redis
// queue. That is the order lock_acquire.lua's place gives them anyway
// (right behind their Client's newest entry within 3 ms), without the
// queueing attempt's commands. A follower still waiting after followMax,
// or whose train broke up (its leader gave up, a holder could not pass),
// queues itself: right behind the waiter it followed while that one is
// still queued, else as any waiter does.

// followWindow is how long after its leader's queueing attempt was sent a
// waiter may board a train: shorter than lock_acquire.lua's follow_us, so
// that the follower arrived in Redis time within that window of the
// leader's score.
const followWindow = 2500 * time.Microsecond

// followMax is how long a follower waits in process before it queues
// itself, so that the console and deadlock detection see it.
const followMax = waitEntryTTL / 3

// train is a queued waiter (its leader) and the followers behind it.
// Guarded by the hub's mu.
type train struct {
	cw      *channelWaiters
	leader  string    // the queued waiter's token
	until   time.Time // followers may board until then
	closed  bool
	members []*unlockWaiter // followers not yet passed the lock, in order
}

// mayFollow reports whether a waiting Lock call of l can be passed the
// lock in process: no replica has to acknowledge its grant, and its holder
// field holds nothing (a re-entry must not wait behind its own hold).
func (l *Lock) mayFollow(ctx context.Context) bool {
	return l.unique && l.levels.Load() == 0 && !l.c.acksNeeded(ctx, l.keys[0])
}

// lead opens a train behind w, a waiter whose first queueing attempt was
// sent at sent.
func (h *waitHub) lead(w *unlockWaiter, sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.train != nil || w.left {
		return
	}
	t := &train{cw: w.group, leader: w.token, until: sent.Add(h.followWindow)}
	w.train = t
	w.group.train = t
}

// board puts w, parked for a pass, behind the open train of its lock, if
// any.
func (h *waitHub) board(w *unlockWaiter, l *Lock, clock *waitClock, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := w.group.train
	if t == nil || t.closed || !now.Before(t.until) {
		return false
	}
	t.members = append(t.members, w)
	w.train = t
	w.parked, w.lock, w.queuedAt, w.clock = true, l, now, clock
	return true
}

// alight takes follower w off its train: the pass it was given, if any,
// else the token of the waiter it followed ("" when its train broke up).
func (h *waitHub) alight(w *unlockWaiter) (p *localPass, leader string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.parked = false
	if w.pass != nil {
		return w.pass, ""
	}
	if t := w.train; t != nil {
		leader = t.leader
		for i, m := range t.members {
			if m == w {
				t.members = append(t.members[:i:i], t.members[i+1:]...)
				break
			}
		}
	}
	w.train = nil
	return nil, leader
}

// disband closes t: no follower boards it any more, and those on it are
// woken to queue themselves.
func (h *waitHub) disband(t *train) {
	if t == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t.closed = true
	if t.cw.train == t {
		t.cw.train = nil
	}
	for _, m := range t.members {
		m.train = nil
		m.notify()
	}
	t.members = nil
}

// handOver moves the train a waiter led or rode to the hold it was granted.
func (l *Lock) handOver(w *unlockWaiter) {
	h := w.hub
	h.mu.Lock()
	t := w.train
	w.train = nil
	h.mu.Unlock()
	l.carryTrain(t)
}

// carryTrain makes t, when there is one, the train the handle's hold
// passes to first; a train the handle carried before is broken up.
func (l *Lock) carryTrain(t *train) {
	if t == nil {
		return
	}
	l.hold.mu.Lock()
	old := l.hold.train
	l.hold.train = t
	l.hold.mu.Unlock()
	if old != t {
		l.shared.hub.disband(old)
	}
}

// dropTrain breaks up the train of the handle's hold: it ends without
// passing to its followers.
func (l *Lock) dropTrain() {
	l.hold.mu.Lock()
	t := l.hold.train
	l.hold.train = nil
	l.hold.mu.Unlock()
	l.shared.hub.disband(t)
}

// claimFollower gives a local pass to the first parked follower of t.
func (h *waitHub) claimFollower(t *train, at time.Time) *unlockWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(t.members) > 0 {
		w := t.members[0]
		t.members = t.members[1:]
		w.train = nil
		if !w.parked || w.pass != nil || w.left {
			w.notify() // it queues itself
			continue
		}
		h.givePass(w, at, t)
		return w
	}
	return nil
}

// follow waits on a train for a pass. done is false when the follower must
// queue itself (followMax passed, or the train broke up); behind is then
// the token it followed, while its train lasted.
func (l *Lock) follow(ctx context.Context, w *unlockWaiter, clock *waitClock) (done bool, behind string, err error) {
	timer := time.NewTimer(w.hub.followMax)
	defer timer.Stop()
	for {
		select {
		case <-w.H:
		case <-w.C:
			w.hub.mu.Lock()
			still := w.train != nil && w.pass == nil
			w.hub.mu.Unlock()
			if still {
				continue // a release that did not break the train up
			}
		case <-timer.C:
		case <-ctx.Done():
		}
		break
	}
	p, leader := w.hub.alight(w)
	if p != nil {
		return true, "", l.takePass(ctx, p)
	}
	if err := ctx.Err(); err != nil {
		return true, "", fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	clock.failed = true
	return false, leader, nil
}
