package inspect

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Waiters of store's reentrant lock. A Lock call that must wait queues a
// token in wire.LockQueueKey(name), a zset scored by arrival (Redis TIME in
// microseconds; a token that follows its Client's within 3 ms is scored
// right behind it, store/lock_wait.go), and keeps an entry under the same token in
// wire.LockEntriesKey(name): "<deadline ms> <lease ms> <holder>", the
// holder field it takes when the release hands it the lock (the token
// handed the lock is marked in that holder's hold record, wire.HoldField).
// A store Client's waiters that follow another of its waiters in process
// (store/lock_follow.go) have no entry for their first second. The queue
// gives the order and the wait; the entry gives who waits and until when.
// Both are read beside the hash in the full read of the RLock family
// (queueRLockSides), and the light read's EXISTS covers the queue, so an
// idle lock pays nothing more than one key in that EXISTS.

// storeQueue is the pending read of one lock's hand-off queue.
type storeQueue struct {
	queue   *redis.ZSliceCmd
	entries *redis.MapStringStringCmd
}

// queueStoreWaiters queues the read of name's hand-off queue: its first
// MaxWaitersShown tokens and every entry (one per queued token, so the
// entries count the whole queue).
func queueStoreWaiters(ctx context.Context, pipe redis.Pipeliner, name string) storeQueue {
	return storeQueue{
		queue:   pipe.ZRangeWithScores(ctx, wire.LockQueueKey(name), 0, MaxWaitersShown-1),
		entries: pipe.HGetAll(ctx, wire.LockEntriesKey(name)),
	}
}

// found reports whether the queue read saw a queue (or failed: a key of
// an unexpected type keeps the full read).
func (q storeQueue) found() bool {
	if q.queue == nil {
		return false
	}
	v, err := q.queue.Result()
	return err != nil || len(v) > 0
}

// storeEntry is one parsed entry of the waiter entries hash.
type storeEntry struct {
	deadlineMS int64
	holder     string
}

// parseStoreEntry reads "<deadline ms> <lease ms> <holder>"; false for the
// hand-off mark (a token) or anything else.
func parseStoreEntry(v string) (storeEntry, bool) {
	d, rest, ok := strings.Cut(v, " ")
	if !ok {
		return storeEntry{}, false
	}
	_, holder, ok := strings.Cut(rest, " ")
	if !ok || holder == "" {
		return storeEntry{}, false
	}
	deadline, err := strconv.ParseInt(d, 10, 64)
	if err != nil {
		return storeEntry{}, false
	}
	return storeEntry{deadline, holder}, true
}

// apply adds the queued waiters to info after any fair-lock waiters. A
// token without a waiting entry (handed the lock a moment ago, or an entry
// already dropped) is not a waiter; one whose entry outlived its deadline
// is shown with a negative RemainingMS, as the next attempt on the lock
// drops it.
func (q storeQueue) apply(info *LockInfo, nowMS int64) {
	if q.queue == nil || q.queue.Err() != nil || q.entries.Err() != nil {
		return
	}
	entries := q.entries.Val()
	var total int64
	for _, v := range entries {
		if _, ok := parseStoreEntry(v); ok {
			total++
		}
	}
	if total == 0 {
		return
	}
	info.WaitersTotal += total
	ch := wire.LockWakeChannel(info.Name)
	for _, z := range q.queue.Val() {
		token, ok := z.Member.(string)
		if !ok {
			continue
		}
		e, ok := parseStoreEntry(entries[token])
		if !ok {
			continue
		}
		info.Waiters = append(info.Waiters, Waiter{ID: token, Owner: e.holder, Position: len(info.Waiters) + 1,
			Deadline: time.UnixMilli(e.deadlineMS), DeadlineMS: e.deadlineMS, RemainingMS: e.deadlineMS - nowMS,
			ArrivedMS: int64(z.Score) / 1000, Channel: ch})
	}
}

// AnnotateWaiter fills w's identity from the registry, as AnnotateHolder
// does for a holder, and how long it has waited as of now.
func AnnotateWaiter(reg *Registry, w *Waiter, now time.Time) {
	w.Who, w.Client = DescribeHolder(reg, w.Owner), holderClient(reg, w.Owner)
	if w.ArrivedMS > 0 {
		ms := max(0, now.UnixMilli()-w.ArrivedMS)
		w.WaitingMS = &ms
	}
}
