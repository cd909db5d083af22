package store

import (
	"context"
	"fmt"
	"time"
)

// waitRetrying is the Redisson way of waiting for a lock, shared by the
// read-write, fair and fenced handles: one attempt without listening; then
// subscribe to channel (through the Client's shared PubSub) and attempt
// again on every message there, when the hint the last attempt returned
// runs out (a holder's remaining lease; negative: none), and at least every
// retryCap. attempt's second argument says whether the caller now listens
// (a fair lock queues only then, so no wake-up can slip past it). giveUp,
// if not nil, runs when the wait ends without the lock after an attempt
// that listened, even when ctx has ended. Every attempt gets the call's
// waitClock (wait_clock.go) for the scripts that record waits and poll
// waiters.
func waitRetrying(ctx context.Context, hub *waitHub, channel string, retryCap time.Duration,
	attempt func(ctx context.Context, listening bool, clock *waitClock) (time.Duration, bool, error), giveUp func(ctx context.Context)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	clock := newPollClock(retryCap)
	if _, ok, err := attempt(ctx, false, clock); err != nil || ok {
		return err
	}
	clock.failed = true
	w, err := hub.join(ctx, newWaitToken(), channel, "")
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		// Nothing is held or queued (only the first attempt, which found
		// the lock taken, went out): a plain "not obtained", with the cause.
		return fmt.Errorf("%w: subscribe to %q: %w", ErrNotObtained, channel, err)
	}
	defer w.leave(ctx)
	abandon := func() {
		if giveUp != nil {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			giveUp(gctx)
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		hint, ok, err := attempt(ctx, true, clock)
		if err != nil {
			abandon()
			return err
		}
		if ok {
			return nil
		}
		clock.failed = true
		wait := retryCap
		if hint >= 0 && hint < wait {
			wait = hint
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-w.C:
			// Go 1.23 timers: Reset discards a value Stop did not collect.
			timer.Stop()
		case <-timer.C:
		case <-ctx.Done():
			abandon()
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
	}
}
