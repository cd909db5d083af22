package inspect

import (
	"context"
	"sync/atomic"

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
// The walker counts the channels of held locks in its tick's pipeline, at
// most maxCountedPerTick a tick, taking turns, so a console watching many
// held locks counts each every few ticks. A count that changed makes the
// lock busy: a waiter joining an idle lock leaves its hash as it was, and
// without notifications the lock's next read could be seconds away, while
// every waiter, store's included, subscribes to its channel. From each count it takes away
// the console's own sharded subscription (the event stream SSUBSCRIBEs
// every known lock's channel; its pattern subscriptions are not counted by
// NUMSUB) and one per store client queued in the lock's hand-off queue
// (store's waiters listen on the channel too). A store client keeps its
// subscription for a few seconds after its last waiter left
// (store/lock_wait.go waitIdleClose), and is counted meanwhile.

// maxCountedPerTick bounds the channels one tick counts.
const maxCountedPerTick = 32

// countReq is one lock whose channel a tick counts.
type countReq struct{ name, channel string }

// countDue picks this tick's share of the held locks whose waiters only a
// count can show, at most n.
func (c *cadence) countDue(n int) []countReq {
	var held []countReq
	for name, st := range c.objs {
		if l := st.lock; l != nil && len(l.Holders) > 0 && l.Channel != "" &&
			(l.Kind == KindReentrant || l.Kind == KindFencedLock || l.Kind == KindRWLock) {
			held = append(held, countReq{name, l.Channel})
		}
	}
	turns := int64((len(held) + n - 1) / max(n, 1))
	if turns <= 1 {
		return held
	}
	out := make([]countReq, 0, n)
	for _, r := range held {
		if (int64(nameHash(r.name))+c.tick)%turns == 0 && len(out) < n {
			out = append(out, r)
		}
	}
	return out
}

// subCounts are a tick's queued counts.
type subCounts struct {
	reqs []countReq
	cmds []*redis.MapStringIntCmd // one for all (a node) or one per channel (sharded)
	// watched is the channel set the console's sharded subscriptions
	// cover when the counts were queued (nil: none).
	watched map[string]struct{}
}

// queue queues the counts: one NUMSUB on a single node, a SHARDNUMSUB per
// channel routed to its master on a sharded Cluster, nothing on a Cluster
// without sharded pub/sub; nil when there is nothing to count.
func (cs *countStep) queue(ctx context.Context, pipe redis.Pipeliner) *subCounts {
	if cs == nil || len(cs.reqs) == 0 || (cs.cluster && cs.sharded != "1") {
		return nil
	}
	reqs := cs.reqs
	sc := &subCounts{reqs: reqs}
	if !cs.cluster {
		chans := make([]string, len(reqs))
		for i, r := range reqs {
			chans[i] = r.channel
		}
		sc.cmds = []*redis.MapStringIntCmd{pipe.PubSubNumSub(ctx, chans...)}
		return sc
	}
	if p := cs.own.Load(); p != nil {
		sc.watched = *p
	}
	for _, r := range reqs {
		cmd := redis.NewMapStringIntCmd(ctx, "pubsub", "shardnumsub", r.channel)
		cmd.SetFirstKeyPos(2) // the channel: routed to its slot's master
		_ = pipe.Process(ctx, cmd)
		sc.cmds = append(sc.cmds, cmd)
	}
	return sc
}

// counts returns each counted lock's subscribers beside the console's own
// sharded subscription, by lock name; a failed count is left out.
func (sc *subCounts) counts() map[string]int64 {
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

// countsRead applies a tick's counts to its locks and makes those whose
// count changed busy.
func (w *Walker) countsRead(locks []LockInfo, fresh map[string]int64) {
	for _, n := range w.subs.apply(locks, fresh) {
		w.cad.touch(n)
	}
}

// subscriberMemo keeps each held lock's last count between its turns.
type subscriberMemo map[string]int64

// apply records fresh counts and sets Subscribers on every held lock of
// locks that has one, less the store clients queued for it; a lock no
// longer held forgets its count. It returns the locks whose count changed
// (or is first seen above zero): someone began or stopped waiting, which
// an idle lock's hash does not show, so the walker reads them next tick.
func (m subscriberMemo) apply(locks []LockInfo, fresh map[string]int64) (changed []string) {
	for name, n := range fresh {
		if old, ok := m[name]; (ok && old != n) || (!ok && n > 0) {
			changed = append(changed, name)
		}
		m[name] = n
	}
	seen := make(map[string]bool, len(m))
	for i := range locks {
		l := &locks[i]
		n, ok := m[l.Name]
		if !ok {
			continue
		}
		if len(l.Holders) == 0 {
			delete(m, l.Name)
			continue
		}
		seen[l.Name] = true
		n -= storeClientsQueued(*l)
		if n > 0 {
			l.Subscribers = &n
		} else {
			l.Subscribers = nil
		}
	}
	for name := range m {
		if !seen[name] {
			delete(m, name)
		}
	}
	return changed
}

// storeClientsQueued is how many store clients wait in l's hand-off queue
// (each holds one subscription to the lock's channel however many of its
// Lock calls wait).
func storeClientsQueued(l LockInfo) int64 {
	ids := map[string]bool{}
	for _, w := range l.Waiters {
		if w.ArrivedMS > 0 {
			ids[ClientIDOf(w.Owner)] = true
		}
	}
	return int64(len(ids))
}

// countStep is a tick's counting work, with what decides how to count.
type countStep struct {
	reqs    []countReq
	cluster bool
	sharded string // pubsubFlag: "1" when Redisson subscribes with SSUBSCRIBE
	own     *atomic.Pointer[map[string]struct{}]
}

// countMode turns reqs into the tick's counting work; nil when there is
// none, or the deployment's pub/sub mode is not known yet and could not be
// read (the next tick asks again).
func (c *Inspector) countMode(ctx context.Context, reqs []countReq) *countStep {
	if len(reqs) == 0 {
		return nil
	}
	_, cluster := c.rdb.(*redis.ClusterClient)
	sharded := "0"
	if cluster {
		f, err := c.pubsubFlag(ctx)
		if err != nil {
			return nil
		}
		sharded = f
	}
	return &countStep{reqs: reqs, cluster: cluster, sharded: sharded, own: &c.ownShard}
}
