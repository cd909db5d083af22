package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrLeaseLost is the cause (context.Cause) of a LostContext cancelled
// because the hold ended without the handle's own release. The error a
// handle gives says why, and matches ErrLeaseLost with errors.Is.
var ErrLeaseLost = errors.New("store: lock lease lost")

// Why a hold was lost (the text after ErrLeaseLost).
const (
	lostGone       = "the lock is gone or held by another (expired, force-unlocked or evicted)"
	lostExpired    = "the lease ran out before a release or renewal"
	lostUnrenewed  = "no renewal was confirmed for a whole lease"
	lostClosed     = "the client was closed while holding it"
	lostNotHeld    = "a release or refresh found it no longer held"
	lostPassFailed = "the in-process pass that granted it was not made"
)

// leaseWatch tells a handle's caller when its hold ends without the
// handle's own release (Lost, LostContext). The handle reports every grant
// with the send time of the call that set the lease, every renewal that
// Redis confirmed the same way, its own releases, and what its renewals
// and releases found; the watch keeps the latest point by which the lease
// surely ends, end, since Redis set the lease after that send. Nothing
// here runs unless a caller asked for the signal: the channel and the
// timer are made by the first Lost of a hold, so a grant costs a mutex and
// a clock read the handle already made.
type leaseWatch struct {
	mu   sync.Mutex
	held bool // a hold of the handle is running
	lost error
	ch   chan struct{} // closed on loss; made on demand
	end  time.Time     // the lease ends by then unless renewed (zero: unknown)
	// check, when set, is a read of Redis that tells when the lease
	// really ends: used once end was estimated from below for a hand-off
	// (the release that set the lease ran at an unknown time after it).
	check func(ctx context.Context) (time.Time, bool)
	// checking says the timer found end passed and check is on the wire.
	checking bool
	timer    *time.Timer
	// ctx carries the values of the hold's first grant for check's read;
	// its cancellation is dropped where check runs, not per grant.
	ctx context.Context
}

// granted records a grant (a new hold, or a re-entry of the running one)
// whose lease runs at least until end. check, when not nil, says end is a
// lower bound only, and how to learn the real one.
func (w *leaseWatch) granted(ctx context.Context, end time.Time, check func(context.Context) (time.Time, bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held {
		w.held, w.ctx = true, ctx
		if w.lost != nil {
			// A new hold after a lost one gets a signal of its own.
			w.lost, w.ch = nil, nil
		}
	}
	w.end, w.check = end, check
	w.rearm()
}

// renewed records that the running hold's lease was set again after sent
// (a renewal or refresh Redis confirmed), for a lease of lease.
func (w *leaseWatch) renewed(end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held || end.Before(w.end) {
		return
	}
	w.end, w.check = end, nil
	w.rearm()
}

// released records that the hold ended by the handle's own release (or an
// Unlock whose outcome is unknown: the caller meant to give it up).
func (w *leaseWatch) released() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = false
	w.stopTimer()
}

// lose ends the running hold as lost, for why; nothing when no hold runs.
func (w *leaseWatch) lose(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loseLocked(why)
}

func (w *leaseWatch) loseLocked(why string) {
	if !w.held {
		return
	}
	w.held, w.lost = false, fmt.Errorf("%w: %s", ErrLeaseLost, why)
	w.stopTimer()
	if w.ch != nil {
		close(w.ch)
	}
}

// signal returns the hold's channel, making it (and arming the timer) on
// first use. A fixed lease whose end has passed is lost here and now, so
// a caller that asks after the end never sees the hold as running.
func (w *leaseWatch) signal() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
		if w.lost != nil {
			close(w.ch)
			return w.ch
		}
	}
	if w.held && w.check == nil && !w.end.IsZero() && !time.Now().Before(w.end) {
		w.loseLocked(lostExpired)
		return w.ch
	}
	w.rearm()
	return w.ch
}

// cause is why the latest hold was lost; nil while it runs or after the
// handle's own release.
func (w *leaseWatch) cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// rearm points the timer at end, once a caller asked for the signal.
// Callers hold mu.
func (w *leaseWatch) rearm() {
	if w.ch == nil || !w.held || w.end.IsZero() || w.checking {
		return
	}
	d := time.Until(w.end)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

func (w *leaseWatch) stopTimer() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// fire runs at end: the lease ran out unless a renewal moved end (the
// timer then fired early and re-arms), or end was only a lower bound, in
// which case Redis is asked.
func (w *leaseWatch) fire() {
	w.mu.Lock()
	if !w.held || w.checking {
		w.mu.Unlock()
		return
	}
	if d := time.Until(w.end); d > 0 {
		w.timer.Reset(d)
		w.mu.Unlock()
		return
	}
	check, end := w.check, w.end
	if check == nil {
		w.loseLocked(lostExpired)
		w.mu.Unlock()
		return
	}
	w.checking = true
	ctx := w.ctx
	w.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	real, ok := check(cctx)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checking = false
	if !w.held || !w.end.Equal(end) {
		w.rearm() // released, or renewed meanwhile
		return
	}
	if !ok {
		w.loseLocked(lostGone)
		return
	}
	w.end, w.check = real, nil
	if !time.Now().Before(real) {
		w.loseLocked(lostExpired)
		return
	}
	w.rearm()
}

// context returns a copy of parent cancelled with the loss as its cause
// when the hold current at the call (or the next, between holds) is lost.
func (w *leaseWatch) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	lost := w.signal()
	go func() {
		select {
		case <-lost:
			cause := w.cause()
			if cause == nil {
				cause = ErrLeaseLost
			}
			cancel(cause)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// leaseEnd is when a lease of d set by a call sent at sent ends at the
// earliest.
func leaseEnd(sent time.Time, d time.Duration) time.Time { return sent.Add(d) }

// pttlCheck reads when a hold of holder in the hash at key ends: the
// field's presence and the key's PTTL in one pipeline, the lease counted
// from the send time. ok is false when the field is gone, the key has no
// lease, or Redis did not answer (the hold cannot be vouched for).
func pttlCheck(rdb redis.UniversalClient, key, holder string) func(context.Context) (time.Time, bool) {
	return func(ctx context.Context) (time.Time, bool) {
		sent := time.Now()
		var exists *redis.BoolCmd
		var pttl *redis.DurationCmd
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			exists = p.HExists(ctx, key, holder)
			pttl = p.PTTL(ctx, key)
			return nil
		})
		if err != nil || !exists.Val() || pttl.Val() < 0 {
			return time.Time{}, false
		}
		return sent.Add(pttl.Val()), true
	}
}

// Lost returns a channel closed when the handle's hold ends without its
// own Unlock: the watchdog found the lock gone or held by another (its
// lease ran out, a force-unlock, an eviction), no renewal was confirmed
// for a whole lease, the fixed lease of a handle without a watchdog ran
// out (counted from the send time of the call that set it, so it closes
// no later than Redis expires the lock), or an Unlock or Refresh found the
// lock no longer held. Asked between holds it is the next hold's; after
// the handle's own last Unlock it never closes. Handles of one holder (a
// shared Owner) are each told of the holds they took. See the package
// doc for what each kind can detect.
func (l *Lock) Lost() <-chan struct{} { return l.watch.signal() }

// LostContext returns a copy of ctx that is cancelled when Lost closes,
// with the loss (matching ErrLeaseLost) as its context.Cause, so work
// guarded by the lock can stop. Call cancel when the work is done. With
// an owner in ctx (WithOwner) it follows that owner's hold.
func (l *Lock) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a := actor(ctx, l.owners); a != nil {
		return a.LostContext(ctx)
	}
	return l.watch.context(ctx)
}

// LostCause says why the handle's latest hold was lost (it matches
// ErrLeaseLost); nil while it runs, after its own Unlock, or before any.
func (l *Lock) LostCause() error { return l.watch.cause() }

// Lost is Lock.Lost for the spin lock, whose renewal timer is its
// watchdog.
func (s *SpinLock) Lost() <-chan struct{} { return s.watch.signal() }

// LostContext is Lock.LostContext for the spin lock.
func (s *SpinLock) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a := actor(ctx, s.owners); a != nil {
		return a.LostContext(ctx)
	}
	return s.watch.context(ctx)
}

// Lost is Lock.Lost for the fenced lock. A fencing token makes a lost
// hold harmless to resources that check it; Lost says when to stop.
func (f *FencedLock) Lost() <-chan struct{} { return f.inner.Lost() }

// LostContext is Lock.LostContext for the fenced lock.
func (f *FencedLock) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a := actor(ctx, f.owners); a != nil {
		return a.LostContext(ctx)
	}
	return f.inner.watch.context(ctx)
}

// Lost is Lock.Lost for the fair lock.
func (f *FairLock) Lost() <-chan struct{} { return f.inner.Lost() }

// LostContext is Lock.LostContext for the fair lock.
func (f *FairLock) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a := actor(ctx, f.owners); a != nil {
		return a.LostContext(ctx)
	}
	return f.inner.watch.context(ctx)
}

// Lost is Lock.Lost for the read-write lock's owner: one signal for both
// sides, closed when the owner's hold of either ends without its release
// (its watchdog renews both together and finds both gone together).
func (s *RWLockSide) Lost() <-chan struct{} { return s.rw.watch.signal() }

// LostContext is Lock.LostContext for the read-write lock's owner.
func (s *RWLockSide) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a := actor(ctx, s.rw.owners); a != nil {
		return a.side(s.write).LostContext(ctx)
	}
	return s.rw.watch.context(ctx)
}

// Lost returns a channel closed when the token lock's lease runs out
// before Unlock, counted from the send time of the TryLock, Lock or
// Refresh that set it, or an Unlock or Refresh finds another token (or
// none) there. A token lock has no watchdog: Refresh before the lease
// ends, or the hold is lost at its end whatever Redis still says.
func (t *TokenLock) Lost() <-chan struct{} { return t.watch.signal() }

// LostContext is Lock.LostContext for the token lock.
func (t *TokenLock) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return t.watch.context(ctx)
}
