package pubsub

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Redisson's RLock and read-write lock keep no queue: a waiter subscribes
// to the lock's channel (redisson_lock__channel:{name}, redisson_rwlock:
// {name}) and tries again on every release. Its threads are invisible, but
// the subscribers can be counted: PUBSUB NUMSUB on one node, and on a
// Cluster of Redis >= 7, where Redisson subscribes with SSUBSCRIBE on the
// master of the channel's slot, PUBSUB SHARDNUMSUB sent to that master. On
// a Cluster without sharded pub/sub a subscriber may sit on any node and
// counting would take a command per node per channel: not counted.
//
// Package walk's walker counts the channels of held locks in its tick's
// pipeline, at most maxCountedPerTick a tick, taking turns, so a console
// watching many held locks counts each every few ticks. A count that
// changed makes the lock busy: a waiter joining an idle lock leaves its
// hash as it was, and without notifications the lock's next read could be
// seconds away, while every waiter, store's included, subscribes to its
// channel. From each count it takes away the console's own sharded subscription (the event stream SSUBSCRIBEs
// every known lock's channel; its pattern subscriptions are not counted by
// NUMSUB) and one per store client queued in the lock's hand-off queue
// (store's waiters listen on the channel too). A store client keeps its
// subscription for a few seconds after its last waiter left
// (store/lock_wait.go waitIdleClose), and is counted meanwhile.

// countReq is one lock whose channel a tick counts.
type countReq struct{ name, channel string }

// Counts are a tick's queued subscriber counts.
type Counts struct {
	reqs []countReq
	cmds []*redis.MapStringIntCmd // one for all (a node) or one per channel (sharded)
	// watched is the channel set the console's sharded subscriptions
	// cover when the counts were queued (nil: none).
	watched map[string]struct{}
}

// QueueCounts queues the counts of want's channels (lock name ->
// channel): one NUMSUB on a single node, a SHARDNUMSUB per channel routed
// to its master on a sharded Cluster (cluster; leaving out the masters up
// says do not answer). The caller queues nothing on a Cluster without
// sharded pub/sub. watched is the channel set the console's own sharded
// subscriptions cover (nil: none), each counted once too many. Nil when
// there is nothing to count.
func QueueCounts(ctx context.Context, pipe redis.Pipeliner, cluster bool, want map[string]string,
	up func(key string) bool, watched map[string]struct{}) *Counts {
	sc := &Counts{}
	for name, ch := range want {
		if cluster && up != nil && !up(ch) { // each channel's count goes to its slot's master
			continue
		}
		sc.reqs = append(sc.reqs, countReq{name, ch})
	}
	if len(sc.reqs) == 0 {
		return nil
	}
	if !cluster {
		chans := make([]string, len(sc.reqs))
		for i, r := range sc.reqs {
			chans[i] = r.channel
		}
		sc.cmds = []*redis.MapStringIntCmd{pipe.PubSubNumSub(ctx, chans...)}
		return sc
	}
	sc.watched = watched
	for _, r := range sc.reqs {
		cmd := redis.NewMapStringIntCmd(ctx, "pubsub", "shardnumsub", r.channel)
		cmd.SetFirstKeyPos(2) // the channel: routed to its slot's master
		_ = pipe.Process(ctx, cmd)
		sc.cmds = append(sc.cmds, cmd)
	}
	return sc
}

// Of returns each counted lock's subscribers beside the console's own
// sharded subscription, by lock name; a failed count is left out.
func (sc *Counts) Of() map[string]int64 {
	if sc == nil {
		return nil
	}
	all := map[string]int64{}
	for _, cmd := range sc.cmds {
		if v, err := cmd.Result(); err == nil {
			for ch, n := range v {
				all[ch] = n
			}
		}
	}
	out := make(map[string]int64, len(sc.reqs))
	for _, r := range sc.reqs {
		n, ok := all[r.channel]
		if !ok {
			continue
		}
		if _, mine := sc.watched[r.channel]; mine {
			n--
		}
		out[r.name] = max(0, n)
	}
	return out
}
