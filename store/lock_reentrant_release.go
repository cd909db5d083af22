package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The reentrant lock's releases: Unlock, and the withdrawals of a waiter
// that gives up or of an acquire whose outcome is unknown, all sent
// through lock_release (lock_pass.go hands a release to a waiter of the
// same Client instead).

// withdraw takes a waiter that gives up out of the queue. If the lock was
// handed to it meanwhile, that hold is released (and handed on) instead.
// It runs even when ctx has ended: a stale entry would make the next
// release hand the lock to nobody for up to handoffLease.
func (l *Lock) withdraw(ctx context.Context, turn *waitTurn) {
	if !turn.queued {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = l.c.runScript(wctx, lockReleaseScript, l.keys, l.releaseArgs(releaseWithdraw, turn.token)...).Err()
}

// withdrawUncertain undoes an acquire attempt whose reply was lost, when
// the handle held no level before it. The release is sent once: if this
// holder's field is absent nothing changes; with a token the release script
// first removes a queue entry and releases a hold handed to that token.
// A lost reply here too leaves at most one level that expires with its
// lease (no watchdog renews it).
func (l *Lock) withdrawUncertain(ctx context.Context, turn *waitTurn) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if turn == nil {
		_ = l.unlockCall.run(wctx, l.c.rdb).Err()
		return
	}
	turn.queued = false // the entry goes too
	res, err := l.c.runScript(wctx, lockReleaseScript, l.keys, l.releaseArgs(releaseWithdraw, turn.token)...).Int64()
	if err == nil && res == 4 {
		// Neither queued nor handed: the attempt may have found the lock
		// free and taken it itself.
		_ = l.unlockCall.run(wctx, l.c.rdb).Err()
	}
}

// Unlock releases one level of reentry; the last level hands the lock to the
// longest waiter or deletes it, and tells waiters. ErrNotHeld (lock
// untouched) when this handle's holder does not hold it, e.g. after its
// lease ran out or it was force-unlocked.
func (l *Lock) Unlock(ctx context.Context) error {
	if a := actor(ctx, l.owners); a != nil {
		return a.Unlock(ctx)
	}
	if l.err != nil {
		return l.err
	}
	if err := l.c.decidePubsub(ctx); err != nil {
		return err
	}
	if err := l.settle(ctx); err != nil {
		return err
	}
	if passed, err := l.tryPass(ctx); passed {
		return err
	}
	res, err := l.release(ctx).Int64()
	if err != nil || res >= 1 {
		l.dropTrain()
	}
	if errors.Is(err, redis.Nil) {
		// The holder holds nothing (lease ran out, force-unlock): a later
		// uncertain acquire has nothing of the caller's to spare.
		l.levels.Store(0)
		l.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
	}
	if err != nil {
		// An unknown outcome is reported as it is: resending could release
		// a second level, or another holder's lock. The count left is not
		// known either: no pass of this hold (lock_pass.go).
		l.setHold("", time.Time{})
		l.releaseUnknown()
		return l.scriptErr("unlock", err)
	}
	if l.levels.Add(-1) <= 0 || res >= 1 {
		l.watch.released()
	}
	if res >= 1 {
		l.setHold("", time.Time{})
	}
	if l.watchdog {
		l.shared.released(l, res >= 1)
	}
	return nil
}

// What lock_release does (its ARGV[2]).
const (
	releaseOne      = ""
	releaseLast     = "last"
	releaseWithdraw = "withdraw"
	releasePass     = "pass"
)

// releaseArgs is lock_release's ARGV for op, then more.
func (l *Lock) releaseArgs(op string, more ...any) []any {
	return append([]any{l.holder, op, l.c.pubsub, l.argv[0]}, more...)
}

// release sends the release of one level. A handle that is the only one
// on its holder field and counts one level sends lock_release's "last":
// one HDEL of its field, hold record and queued mark is the whole release
// when nobody is queued, and levels Redis holds beyond the handle's count
// (a re-entry whose reply was lost) go with it, as they go with a local
// pass. Acquires of the handle wait meanwhile (passMu), so the count it
// reads is not raced by a re-entry on the wire.
//
// A release does not wait for replicas (Options.ReplicaAcks): one that a
// failover loses leaves the hold on the promoted replica until its lease
// ends, which delays the next holder but never makes two; a hand-off's
// grant is confirmed by the waiter it names (its short claim, see
// tryAcquireAt).
func (l *Lock) release(ctx context.Context) *redis.Cmd {
	if !l.unique || l.levels.Load() != 1 {
		return l.c.call(ctx, &l.unlockCall)
	}
	l.passMu.Lock()
	defer l.passMu.Unlock()
	if l.levels.Load() != 1 {
		return l.c.call(ctx, &l.unlockCall)
	}
	return l.c.call(ctx, &l.lastCall)
}

// releaseUnknown follows an Unlock whose outcome is unknown: the last
// level is no longer renewed, so if the release never ran the lock ends
// with its lease instead of outliving a caller that meant to give it up
// (Redisson's unlock also cancels the renewal whatever the reply). The
// level stays counted: Unlock again still releases it meanwhile.
func (l *Lock) releaseUnknown() {
	if l.levels.Load() != 1 {
		return
	}
	// The caller meant to end the hold: if it ends with its lease, that
	// is no loss to report.
	l.watch.released()
	if l.watchdog {
		l.shared.released(l, true)
	}
}

// giveBack releases the level a grant just took, once, for a grant that
// must not be reported held. A lost reply leaves that level to its lease.
func (l *Lock) giveBack(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = l.unlockCall.run(wctx, l.c.rdb).Err()
}
