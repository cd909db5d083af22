package inspect

import (
	"context"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Several kinds are one hash plus side keys: Redisson's fair lock (queue and
// timeouts), fenced lock (token counter), read-write lock (a lease key per
// read level) and rate limiter (value and grants). Classification decides
// the family from the hash alone; these reads, queued on the same pipeline
// machinery, add the side keys' state. Every side key is in the slot of the
// object's name, so on a Cluster they go to the node that holds the name.

// lockSides are the pending side reads of one hash lock.
type lockSides struct {
	queue    *redis.StringSliceCmd
	qlen     *redis.IntCmd
	timeouts *redis.ZSliceCmd
	token    *redis.StringCmd
	leases   []*redis.DurationCmd // rwlock: one per holder, nil for writers
	held     *redis.MapStringStringCmd
	store    storeQueue                // store's hand-off queue (waiters.go)
	poll     *redis.MapStringStringCmd // poll waiters (pollwaiters.go)
}

// queueLockSides queues the side reads info's family needs.
func queueLockSides(ctx context.Context, pipe redis.Pipeliner, info *LockInfo) *lockSides {
	s := &lockSides{}
	switch info.Kind {
	case KindReentrant, KindFairLock, KindFencedLock:
		return queueRLockSides(ctx, pipe, info.Name)
	case KindRWLock, KindTokenLock:
		// Hold times: a field per read or write holder, or the token.
		s.held = queueHoldTimes(ctx, pipe, info.Name)
		s.poll = queuePollWaiters(ctx, pipe, info.Name)
		if info.Kind == KindTokenLock {
			break
		}
		s.leases = make([]*redis.DurationCmd, len(info.Holders))
		for i, h := range info.Holders {
			if h.Mode == wire.RWModeRead {
				// The newest level was leased last; the watchdog renews all.
				s.leases[i] = pipe.PTTL(ctx, wire.RWReadLevelKey(info.Name, h.ID, h.Count))
			}
		}
	}
	return s
}

// queueRLockSides queues the side reads of the RLock family (fair queue,
// fencing token) by name alone, so Sample can send them with the hash read.
func queueRLockSides(ctx context.Context, pipe redis.Pipeliner, name string) *lockSides {
	return &lockSides{
		queue:    pipe.LRange(ctx, wire.FairLockQueueKey(name), 0, MaxWaitersShown-1),
		qlen:     pipe.LLen(ctx, wire.FairLockQueueKey(name)),
		timeouts: pipe.ZRangeWithScores(ctx, wire.FairLockTimeoutKey(name), 0, MaxWaitersShown-1),
		token:    pipe.Get(ctx, wire.FencingTokenKey(name)),
		held:     queueHoldTimes(ctx, pipe, name),
		store:    queueStoreWaiters(ctx, pipe, name),
		poll:     queuePollWaiters(ctx, pipe, name),
	}
}

// apply refines info with what the side reads returned. A fenced lock's
// token survives releases, so its presence marks the lock as fenced; a
// queue marks it as fair (Redisson deletes an empty queue, so a fair lock
// nobody waits for reads as a plain reentrant lock, which it behaves as).
func (s *lockSides) apply(info *LockInfo, nowMS int64) {
	if s == nil { // a light read (sidekeys.go): no side state to add
		return
	}
	rlock := info.Kind == KindReentrant || info.Kind == KindFairLock || info.Kind == KindFencedLock
	if s.token != nil && rlock {
		if v, err := s.token.Result(); err == nil {
			if n, ok := num.CanonicalInt(v); ok {
				info.Kind, info.FencingToken = KindFencedLock, n
			}
		}
	}
	if s.qlen != nil && rlock && s.qlen.Err() == nil && s.qlen.Val() > 0 && s.queue.Err() == nil {
		deadlines := map[string]float64{}
		for _, z := range s.timeouts.Val() { // a wrong type leaves this empty
			if m, ok := z.Member.(string); ok {
				deadlines[m] = z.Score
			}
		}
		info.Kind = KindFairLock
		info.WaitersTotal = s.qlen.Val()
		info.Waiters = make([]Waiter, 0, len(s.queue.Val()))
		for _, id := range s.queue.Val() {
			w := Waiter{ID: id, Owner: id, Position: len(info.Waiters) + 1, Channel: info.Channel + ":" + id}
			if d, ok := deadlines[id]; ok {
				w.Deadline, w.DeadlineMS = time.UnixMilli(int64(d)), int64(d)
				w.RemainingMS = int64(d) - nowMS
			}
			info.Waiters = append(info.Waiters, w)
		}
	}
	if rlock {
		s.store.apply(info, nowMS)
	}
	applyPollWaiters(info, s.poll, nowMS)
	applyHoldTimes(info, s.held)
	for i, cmd := range s.leases {
		if cmd != nil && i < len(info.Holders) && cmd.Err() == nil && cmd.Val() > 0 {
			info.Holders[i].LeaseMS = cmd.Val().Milliseconds()
		}
	}
}

// ReadSides runs the side reads of locks and limiters that live on one
// node (or any pipeline-capable client) in one round trip, and in a second
// one only when that node had to be given the window script: fair queue,
// fencing token, read-level leases, hold times and waiters of each lock,
// the window of each Redisson limiter. nowMS is Redis time for waiter
// deadlines. A full pass (package walk) completes what it classified with
// it, as GetLock and GetLimiter do.
func (c *Inspector) ReadSides(ctx context.Context, node redis.Cmdable, locks []LockInfo, lims []LimiterInfo, nowMS int64) error {
	for attempt := 0; ; attempt++ {
		pipe := node.Pipeline()
		sides := make([]*lockSides, len(locks))
		for i := range locks {
			sides[i] = queueLockSides(ctx, pipe, &locks[i])
		}
		states := make([]*redis.Cmd, len(lims))
		for i := range lims {
			states[i] = queueLimiterState(ctx, pipe, &lims[i])
		}
		if pipe.Len() == 0 {
			return nil
		}
		if err := nodes.Exec(ctx, pipe); err != nil {
			return err
		}
		if attempt == 0 && noScript(states) {
			if err := redissonLimiterStateScript.Load(ctx, node).Err(); err != nil {
				return err
			}
			continue
		}
		for i := range locks {
			sides[i].apply(&locks[i], nowMS)
		}
		for i := range lims {
			applyWindowCmd(&lims[i], states[i])
		}
		return nil
	}
}
