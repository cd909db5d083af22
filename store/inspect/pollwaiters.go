package inspect

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Waiters of the lock kinds that wait by polling: store's spin lock, token
// lock and read-write lock keep no queue, so every failed attempt of a
// waiting call writes its entry into wire.PollWaitersKey(name), a hash
// id -> "<since ms> <deadline ms> <holder>" in the lock's slot, and the grant
// deletes it (luascripts/lock_acquire.lua, tokenlock_obtain.lua,
// rwlock_*_acquire.lua). An entry past its deadline belongs to a call that
// gave up or a client that is gone: it is not a waiter. The hash is read
// beside the lock in the same pipeline, and the light read's EXISTS covers
// it, so a lock nobody waits for pays one key in that EXISTS.

// queuePollWaiters queues the read of name's poll-waiter entries.
func queuePollWaiters(ctx context.Context, pipe redis.Pipeliner, name string) *redis.MapStringStringCmd {
	return pipe.HGetAll(ctx, wire.PollWaitersKey(name))
}

// pollEntry is one parsed poll-waiter entry.
type pollEntry struct {
	id              string
	since, deadline int64
	holder          string
}

// parsePollEntry reads "<since ms> <deadline ms> <holder>".
func parsePollEntry(id, v string) (pollEntry, bool) {
	since, rest, ok := strings.Cut(v, " ")
	if !ok {
		return pollEntry{}, false
	}
	deadline, holder, ok := strings.Cut(rest, " ")
	if !ok || holder == "" {
		return pollEntry{}, false
	}
	s, err1 := strconv.ParseInt(since, 10, 64)
	d, err2 := strconv.ParseInt(deadline, 10, 64)
	if err1 != nil || err2 != nil {
		return pollEntry{}, false
	}
	return pollEntry{id: id, since: s, deadline: d, holder: holder}, true
}

// applyPollWaiters adds the live poll waiters to info, longest waiting
// first, after any queued ones (a lock has one or the other).
func applyPollWaiters(info *LockInfo, cmd *redis.MapStringStringCmd, nowMS int64) {
	if cmd == nil || cmd.Err() != nil {
		return
	}
	var live []pollEntry
	for id, v := range cmd.Val() {
		if e, ok := parsePollEntry(id, v); ok && e.deadline >= nowMS {
			live = append(live, e)
		}
	}
	if len(live) == 0 {
		return
	}
	slices.SortFunc(live, func(a, b pollEntry) int {
		if a.since != b.since {
			return int(a.since - b.since)
		}
		return strings.Compare(a.id, b.id)
	})
	info.WaitersTotal += int64(len(live))
	for _, e := range live {
		if len(info.Waiters) >= MaxWaitersShown {
			break
		}
		info.Waiters = append(info.Waiters, Waiter{ID: e.id, Owner: e.holder, Position: len(info.Waiters) + 1,
			Deadline: time.UnixMilli(e.deadline), DeadlineMS: e.deadline, RemainingMS: e.deadline - nowMS,
			ArrivedMS: e.since, Channel: info.Channel})
	}
}
