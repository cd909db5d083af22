package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"weak"
)

// A local pass: when the waiter the Redis queue would serve next belongs to
// the releasing Client, the release lets it go on at once, in process, and
// the release script (lock_release.lua, "pass") hands it the lock in Redis
// during the same round trip, instead of after it.
//
// The queue stays the one order: the new holder learns which token is
// first in the queue behind it from the hand-off that granted it (the
// message "<token> <next>", or the pass's reply), and passes in process
// only to that token. While it holds, nobody can overtake that waiter:
// later arrivals queue behind it, and only this holder's release pops the
// queue. What the pass relies on is the releaser's own hold, which it
// lends to the next holder for the round trip: the pass is only made
// while the releaser's lease has at least half of it left (from the send
// time of the call that set it, so Redis cannot have expired it), with no
// replica acknowledgement to wait for, from a handle whose holder field no
// other handle shares (its owner is random), holding one level, to a
// waiter parked in Lock whose queue entry was refreshed within the last
// passFresh. A release that finds the lock no longer the releaser's (it
// was force-unlocked, or Redis lost it) changes nothing, and both the
// releaser's Unlock and the next holder's next call report ErrNotHeld: the
// next holder ran on a hold that was already broken, as a holder whose
// lease is lost does. A pass whose reply is lost is sent again (the script
// answers "already made"), until the releaser's lease would have ended or
// its Unlock's ctx ends; a pass still unconfirmed then is reported to both
// as not confirmed. A refused pass withdraws its waiter's queue entry. Handles
// that may hold a level they do not count (a call whose outcome is
// unknown) do not pass until their next grant.
//
// The new holder's next call on the lock (Unlock, Refresh, a re-entry)
// waits until the pass is settled, so it is never ordered before the pass.

// passFresh is how recently a waiter's entry must have been refreshed to be
// passed to: its entry lives waitEntryTTL after that.
const passFresh = waitEntryTTL - waitEntryTTL/3

// passRetry spaces the re-sends of a pass whose outcome is unknown. They
// stop when the releaser's lease would have ended or its Unlock's ctx ends,
// whichever comes first; the next holder's calls then report the pass as
// not confirmed.
const passRetry = 20 * time.Millisecond

// localPass is a hold passed in process, settled once the release script
// answered.
type localPass struct {
	done   chan struct{}
	at     time.Time // the pass sets the new lease after this
	waited string    // the waiter's wait in ms, as lock_release records it
	next   string    // set before done closes: the queue's head behind it
	err    error     // set before done closes: the pass was not made
	train  *train    // the train the new holder holds for, if a follower
}

// holdState is what a handle knows of its current hold for a pass.
type holdState struct {
	mu      sync.Mutex
	next    string    // token first in the queue behind this hold, "" unknown
	from    time.Time // the hold's lease runs at least until from + lease
	pending *localPass
	train   *train // followers this hold passes to first (lock_follow.go)
}

// setHold records a new hold's queue head behind it and its lease start.
func (l *Lock) setHold(next string, from time.Time) {
	l.hold.mu.Lock()
	l.hold.next, l.hold.from = next, from
	l.hold.mu.Unlock()
}

// extendHold records that the current hold's lease was set again after
// from (a re-entry).
func (l *Lock) extendHold(from time.Time) {
	l.hold.mu.Lock()
	if !l.hold.from.IsZero() {
		l.hold.from = from
	}
	l.hold.mu.Unlock()
}

// WaitStats counts a Client's waits for its locks (store.Lock).
type WaitStats struct {
	Waits  int64 // Lock calls that had to wait
	Passes int64 // releases that passed the lock in process to one of them
}

// WaitStats returns the Client's counts since it was made.
func (c *Client) WaitStats() WaitStats {
	v, ok := sharedByClient.Load(weak.Make(c))
	if !ok {
		return WaitStats{}
	}
	h := &v.(*lockShared).hub
	h.mu.Lock()
	defer h.mu.Unlock()
	return WaitStats{Waits: h.waits, Passes: h.passes}
}

// settle waits until the pass that granted this handle its hold, if any,
// is answered. A pass that was not made is returned once, as ErrNotHeld.
func (l *Lock) settle(ctx context.Context) error {
	l.hold.mu.Lock()
	p := l.hold.pending
	l.hold.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("store: lock %q: waiting for the pass that granted it: %w", l.name, markUncertain(ctx.Err()))
	}
	l.hold.mu.Lock()
	mine := l.hold.pending == p
	if mine {
		l.hold.pending = nil
		if p.err == nil {
			l.hold.next = p.next
		}
	}
	l.hold.mu.Unlock()
	if mine && p.err != nil {
		l.dropTrain()
		l.levels.Store(0)
		l.watch.lose(lostPassFailed)
		if l.watchdog {
			l.shared.released(l, true)
		}
		return p.err
	}
	return nil
}

// takePass ends a wait with the local pass p: the hold is this handle's,
// unless the pass was already answered as not made.
func (l *Lock) takePass(ctx context.Context, p *localPass) error {
	l.tookPass(ctx, p)
	select {
	case <-p.done:
		// Already answered: a pass that was not made is not a grant.
		if err := l.settle(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrNotObtained, err)
		}
	default:
	}
	return nil
}

// tookPass takes the hold a local pass gave this waiting handle.
func (l *Lock) tookPass(ctx context.Context, p *localPass) {
	l.hold.mu.Lock()
	l.hold.pending, l.hold.next, l.hold.from = p, "", p.at
	l.hold.mu.Unlock()
	// The pass sets the lease after p.at, in the releaser's call.
	l.watch.granted(ctx, leaseEnd(p.at, l.lease), nil)
	l.carryTrain(p.train)
	l.took(ctx)
}

// tryPass releases the handle's last level by a local pass when it can
// (see above). passed is false when it did not try: the caller releases
// as usual.
func (l *Lock) tryPass(ctx context.Context) (passed bool, err error) {
	if !l.unique || l.levels.Load() != 1 {
		return false, nil
	}
	l.hold.mu.Lock()
	next, from, tr := l.hold.next, l.hold.from, l.hold.train
	l.hold.mu.Unlock()
	if next == "" && tr == nil { // nobody to pass to: no clock read
		return false, nil
	}
	now := time.Now()
	if now.Sub(from) > l.lease/2 || l.c.acksNeeded(ctx, l.keys[0]) {
		return false, nil
	}
	l.passMu.Lock()
	defer l.passMu.Unlock()
	if l.levels.Load() != 1 {
		return false, nil
	}
	var w *unlockWaiter
	follower := "0"
	if tr != nil {
		if w = l.shared.hub.claimFollower(tr, now); w != nil {
			next, follower = w.token, "1"
			l.hold.mu.Lock()
			l.hold.train = nil // the follower's hold carries it on
			l.hold.mu.Unlock()
		}
	}
	if w == nil {
		if next == "" {
			return false, nil
		}
		if w = l.shared.hub.claim(l.unlockCh, next, now); w == nil {
			return false, nil
		}
	}
	p, to := w.pass, w.lock
	argv := l.releaseArgs(releasePass, next, to.holder, to.lease.Milliseconds(), p.waited, follower)
	deadline := from.Add(l.lease)
	var own error
	refusedPass, unknown := false, false
	for attempt := 0; ; attempt++ {
		bound := time.Now().Add(time.Second)
		if deadline.Before(bound) {
			bound = deadline
		}
		actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), bound)
		cmd := l.c.runScript(actx, lockReleaseScript, l.keys, argv...)
		cancel()
		code, nx, rerr := passReply(cmd)
		if rerr == nil {
			switch code {
			case 5:
				p.next = nx
			case 6:
				p.next = nx
				if attempt == 0 {
					// The lock was already the waiter's before this pass:
					// this handle did not hold it.
					own = fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
				}
			default:
				refusedPass = true
				own = fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
				p.err = fmt.Errorf("%w: %q by %s: passed in process by %s, which no longer held it", ErrNotHeld, l.name, to.holder, l.holder)
			}
			break
		}
		if (errors.Is(rerr, ErrUncertain) || refused(rerr)) && time.Now().Add(passRetry).Before(deadline) && ctx.Err() == nil {
			time.Sleep(passRetry)
			continue
		}
		unknown = true
		own = l.scriptErr("unlock", rerr)
		p.err = fmt.Errorf("store: lock %q: the pass to %s was not confirmed: %w", l.name, to.holder, rerr)
		break
	}
	close(p.done)
	if follower == "0" {
		l.dropTrain()
	}
	if refusedPass {
		// Nothing changed, so the waiter's entry is still queued: take it
		// out, or a later release would hand the lock to a waiter that is
		// not waiting any more. (A pass whose outcome stays unknown may
		// have made the lock the waiter's: its entry is left to expire.)
		to.withdraw(ctx, &waitTurn{token: next, queued: true})
	}
	if unknown {
		// As after an Unlock whose outcome is unknown, the handle keeps
		// its level and does not pass again within this hold. Unlike it,
		// it keeps its watchdog too: the waiter that went on runs on this
		// hold if the pass never landed, and must not lose it to the
		// lease; the renewal stops when the caller releases again.
		l.setHold("", time.Time{})
		return true, own
	}
	if own != nil {
		l.levels.Store(0)
		l.watch.lose(lostNotHeld)
		return true, own
	}
	l.levels.Add(-1)
	l.watch.released()
	l.setHold("", time.Time{})
	if l.watchdog {
		l.shared.released(l, true)
	}
	return true, nil
}

// passReply reads lock_release's answer to a pass: {5|6, next} or 7.
func passReply(cmd interface {
	Val() any
	Err() error
}) (code int64, next string, err error) {
	if err := cmd.Err(); err != nil {
		return 0, "", err
	}
	switch v := cmd.Val().(type) {
	case int64:
		return v, "", nil
	case []any:
		if len(v) == 2 {
			c, _ := v[0].(int64)
			n, _ := v[1].(string)
			return c, n, nil
		}
	}
	return 0, "", fmt.Errorf("unexpected reply %v of lock_release", cmd.Val())
}

// park marks w as blocked in its wait, so that a holder of its Client may
// pass it the lock; queued is when its entry was last refreshed, and clock
// times its wait (the pass records it).
func (w *unlockWaiter) park(l *Lock, queued time.Time, clock *waitClock) {
	h := w.hub
	h.mu.Lock()
	w.parked, w.lock, w.queuedAt, w.clock = true, l, queued, clock
	h.mu.Unlock()
}

// unpark ends w's block: the pass it was given meanwhile, if any, and the
// next token a hand-off message named.
func (w *unlockWaiter) unpark() (*localPass, string) {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	w.parked = false
	return w.pass, w.next
}

// claim gives a local pass to the parked waiter with token, and wakes it.
// nil when no such waiter is parked with a fresh entry.
func (h *waitHub) claim(unlock, token string, at time.Time) *unlockWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[unlock]
	if cw == nil {
		return nil
	}
	for w := range cw.members {
		if w.token != token {
			continue
		}
		if !w.parked || w.pass != nil || at.Sub(w.queuedAt) > passFresh {
			return nil
		}
		h.givePass(w, at, nil)
		return w
	}
	return nil
}

// givePass makes a local pass to parked waiter w, for train t if it
// follows one, and wakes it. Callers hold h.mu.
func (h *waitHub) givePass(w *unlockWaiter, at time.Time, t *train) {
	// The waiter's own wait, not its score's: its score may be up to the
	// placement window earlier than its arrival (lock_acquire.lua's
	// place), and the release records this instead.
	w.pass = &localPass{done: make(chan struct{}), at: at, waited: w.clock.waitedMS(), train: t}
	w.parked = false
	h.passes++
	select {
	case w.H <- struct{}{}:
	default:
	}
}
