package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The uncontended path stays cheap on the Redis side: a Lock + Unlock of a
// free lock nobody waits for runs 7 commands inside the scripts, TIME,
// EXISTS of the lock and its queue, HSET of the holder and its hold record,
// PEXPIRE and the stats HINCRBY; then one HDEL of the holder field, hold
// record and queued mark, and PUBLISH of Redisson's "0". Each new 200 ms
// bucket's first count adds the stats hash's PEXPIRE and HLEN (the record
// block of lock_acquire.lua). Every other command, and any of these run
// more than once a pair, fails the test. A private server, so no other
// test moves its counters. The hold record and the queued mark are fields
// of the lock's hash so that a pair sends no HSET and PEXPIRE of a record
// key of its own, no HGET of the count before the DEL and no ZPOPMIN of an
// empty queue.
func TestLockUncontendedCommands(t *testing.T) {
	rdb := redistest.NewClient(t, redistest.StartT(t))
	// Out of the client registry: its beats would count as script commands.
	l := New(rdb, &Options{NoRegistry: true}).NewLock("cost", nil)
	const pairs = 200
	calls, buckets := pairCommands(t, rdb, pairs, pair{l.Lock, l.Unlock})
	t.Logf("a pair, inside the scripts: %s", perPair(calls, pairs))
	want := map[string]int64{"time": 1, "exists": 1, "hset": 1, "pexpire": 1, "hincrby": 1, "hdel": 1, "publish": 1}
	var inside int64
	for cmd, n := range calls {
		if notInScripts[cmd] {
			continue
		}
		inside += n
		limit := want[cmd] * pairs
		switch cmd {
		case "pexpire", "hlen": // the stats hash's, once per bucket
			limit += buckets
		}
		if n > limit {
			t.Errorf("%d %s for %d pairs, want at most %d", n, cmd, pairs, limit)
		}
	}
	if limit := 7*int64(pairs) + 2*buckets; inside > limit {
		t.Errorf("%d commands inside the scripts for %d pairs (%.1f a pair), want at most %d", inside, pairs, float64(inside)/pairs, limit)
	}
	if got := calls["evalsha"]; got != 2*pairs {
		t.Errorf("%d EVALSHA for %d pairs, want one per call", got, pairs)
	}
}

// pair is one lock kind's take and release.
type pair struct{ take, release func(context.Context) error }

// pairCommands runs p once (the first pair loads the scripts), then pairs
// times, and returns the commands Redis executed meanwhile by name, and a
// bound on the 200 ms buckets the pairs spread over (a loaded machine
// spreads them over more).
func pairCommands(t *testing.T, rdb *redis.Client, pairs int, p pair) (map[string]int64, int64) {
	t.Helper()
	ctx := t.Context()
	if err := p.take(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.release(ctx); err != nil {
		t.Fatal(err)
	}
	before := redistest.CommandCalls(t, rdb)
	start := time.Now()
	for i := 0; i < pairs; i++ {
		if err := p.take(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	buckets := int64(time.Since(start)/(wire.BucketMS*time.Millisecond)) + 2
	return diffCalls(before, redistest.CommandCalls(t, rdb)), buckets
}

// perPair lists calls divided by pairs, inside the scripts only, by name.
func perPair(calls map[string]int64, pairs int) string {
	names := make([]string, 0, len(calls))
	for cmd := range calls {
		if !notInScripts[cmd] {
			names = append(names, cmd)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, cmd := range names {
		fmt.Fprintf(&b, "%s %.2f ", cmd, float64(calls[cmd])/float64(pairs))
	}
	return strings.TrimSpace(b.String())
}

// notInScripts are the commands a Client sends outside its scripts: the
// calls themselves, its INFO (once at first use, then the replica
// acknowledgement's check of the master every second, replica_ack.go) and
// the handshake of a connection that check may open, and a waiter's
// subscriptions.
var notInScripts = map[string]bool{"evalsha": true, "eval": true, "info": true, "hello": true, "client|setinfo": true,
	"subscribe": true, "unsubscribe": true}

// Every other lock kind's uncontended TryLock + Unlock pair, counted the
// same way: the bound is the scripts' commands on the common path (their
// headers list them), hold records included, plus a stats PEXPIRE and HLEN
// per bucket. Spin 8 (TIME, EXISTS, HSET, PEXPIRE, HINCRBY; HMGET, DEL,
// PUBLISH: its handle releases through the count), fair 14, fenced 10
// (TIME, HMGET, EXISTS of the lock and of its token key, INCR, HSET,
// PEXPIRE, HINCRBY; HDEL, PUBLISH), read 16, write 15, token 9.
func TestLockKindsUncontendedCommands(t *testing.T) {
	rdb := redistest.NewClient(t, redistest.StartT(t))
	c := New(rdb, &Options{NoRegistry: true})
	kinds := []struct {
		name  string
		limit int64
		pair  func() pair
	}{
		{"spin", 8, func() pair { s := c.NewSpinLock("cost-spin", nil); return pair{s.TryLock, s.Unlock} }},
		{"fair", 14, func() pair { f := c.NewFairLock("cost-fair", nil); return pair{f.TryLock, f.Unlock} }},
		{"fenced", 10, func() pair { f := c.NewFencedLock("cost-fenced", nil); return pair{f.TryLock, f.Unlock} }},
		{"read", 16, func() pair { r := c.NewRWLock("cost-rw", nil).Reader(); return pair{r.TryLock, r.Unlock} }},
		{"write", 15, func() pair { w := c.NewRWLock("cost-rw", nil).Writer(); return pair{w.TryLock, w.Unlock} }},
		{"token", 9, func() pair { tl := c.NewTokenLock("cost-token", nil); return pair{tl.TryLock, tl.Unlock} }},
	}
	for _, k := range kinds {
		const pairs = 100
		calls, buckets := pairCommands(t, rdb, pairs, k.pair())
		var inside int64
		for cmd, n := range calls {
			if !notInScripts[cmd] {
				inside += n
			}
		}
		t.Logf("%s: %.2f commands a pair inside the scripts: %s", k.name, float64(inside)/pairs, perPair(calls, pairs))
		if limit := k.limit*pairs + 2*buckets; inside > limit {
			t.Errorf("%s: %d commands inside the scripts for %d pairs (%.1f a pair), want at most %d", k.name, inside, pairs, float64(inside)/pairs, limit)
		}
		if got := calls["evalsha"]; got != 2*pairs {
			t.Errorf("%s: %d EVALSHA for %d pairs, want one per call", k.name, got, pairs)
		}
	}
}

// A hand-off to a waiter of another Client costs 12 commands inside the
// scripts and one EVALSHA, the release's: the HDEL of the releaser's
// field, hold record and queued mark (which says there is a queue),
// ZPOPMIN, TIME, HGET and HDEL of the entry, the ZRANGE naming the next
// waiter, the lock's HSET (holder, hold record with the hand-off mark,
// queued mark when others wait) and PEXPIRE, two PUBLISH, and the grant
// with its wait in one HMGET and one HSET (layout above wire.BucketMS). A
// bucket's first grant counts its "a" by HINCRBY instead, with the stats
// hash's PEXPIRE and HLEN: 3 more. With the hold record in a key of its
// own it cost 15 (an HGET before a DEL, and that key's HSET and PEXPIRE).
// The waiter, whose grants need no replica, sends nothing after the
// message. Before: a confirmation (EVALSHA, HEXISTS, PEXPIRE) per hand-off,
// and the wait in three or four commands of its own.
func TestLockHandOffCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	a := New(rdb, &Options{NoRegistry: true}).NewLock("cost", nil)
	b := New(rdb, &Options{NoRegistry: true}).NewLock("cost", nil)
	var inside int64
	var calls map[string]int64
	for range 2 { // the first loads the scripts (NOSCRIPT, then EVAL)
		if err := a.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- b.Lock(ctx) }()
		for rdb.ZCard(ctx, wire.LockQueueKey("cost")).Val() == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		before := redistest.CommandCalls(t, rdb)
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		after := redistest.CommandCalls(t, rdb)
		inside, calls = 0, diffCalls(before, after)
		for cmd, n := range calls {
			if !notInScripts[cmd] {
				inside += n
			}
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("one hand-off: %d commands inside the scripts: %v", inside, calls)
	limit := int64(12)
	if calls["hlen"] > 0 {
		limit += 3
	}
	if inside > limit {
		t.Errorf("%d commands inside the scripts for one hand-off, want at most %d: %v", inside, limit, calls)
	}
	if calls["evalsha"] != 1 {
		t.Errorf("%d EVALSHA for one hand-off, want the release's alone: %v", calls["evalsha"], calls)
	}
}

func diffCalls(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for cmd, n := range after {
		if d := n - before[cmd]; d != 0 {
			out[cmd] = d
		}
	}
	return out
}
