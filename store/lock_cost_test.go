package store

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The uncontended path stays cheap on the Redis side: a TryLock + Unlock of
// a free lock nobody waits for runs at most 11 commands inside the scripts
// (TIME, EXISTS, HSET, PEXPIRE, HINCRBY and the hold times' HSET, PEXPIRE;
// HGET, DEL of the lock and its hold times, ZPOPMIN, PUBLISH), plus
// a PEXPIRE and an HLEN of the stats hash once per 200 ms bucket. A private server, so
// no other test moves its counters.
func TestLockUncontendedCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	// Out of the client registry: its beats would count as script commands.
	l := New(rdb, &Options{NoRegistry: true}).NewLock("cost", nil)
	if err := l.TryLock(ctx); err != nil { // loads the scripts
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	const pairs = 200
	before := redistest.CommandCalls(t, rdb)
	start := time.Now()
	for i := 0; i < pairs; i++ {
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	buckets := int64(time.Since(start)/(wire.BucketMS*time.Millisecond)) + 2
	after := redistest.CommandCalls(t, rdb)
	var inside int64
	for cmd, n := range after {
		if !notInScripts[cmd] {
			inside += n - before[cmd]
		}
	}
	// Each new bucket's first count adds the stats hash's PEXPIRE and HLEN
	// (the record block of lock_acquire.lua and lock_release.lua): a loaded
	// machine spreads the pairs over more buckets.
	if limit := 11*int64(pairs) + 2*buckets; inside > limit {
		t.Errorf("%d commands inside the scripts for %d pairs (%.1f a pair), want at most %d", inside, pairs, float64(inside)/pairs, limit)
	}
	if got := after["evalsha"] - before["evalsha"]; got != 2*pairs {
		t.Errorf("%d EVALSHA for %d pairs, want one per call", got, pairs)
	}
}

// notInScripts are the commands a Client sends outside its scripts: the
// calls themselves, its INFO (once at first use, then the replica
// acknowledgement's check of the master every second, replica_ack.go) and
// the handshake of a connection that check may open, and a waiter's
// subscriptions.
var notInScripts = map[string]bool{"evalsha": true, "info": true, "hello": true, "client|setinfo": true,
	"subscribe": true, "unsubscribe": true}

// Every other lock kind's uncontended TryLock + Unlock pair, counted the
// same way: the bound is the scripts' commands on the common path (their
// headers list them), hold times included, plus a stats PEXPIRE and HLEN per
// bucket. Measured before hold times were recorded for these kinds (and
// after): spin 9 (11), fair 14 (16), fenced 13 (14: its release already
// kept them), read 14 (16), write 13 (15), token 6 (9: its release also
// publishes, for waiters).
func TestLockKindsUncontendedCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	c := New(rdb, &Options{NoRegistry: true})
	type pair struct{ take, release func(context.Context) error }
	kinds := []struct {
		name  string
		limit int64
		pair  func() pair
	}{
		{"spin", 11, func() pair { s := c.NewSpinLock("cost-spin", nil); return pair{s.TryLock, s.Unlock} }},
		{"fair", 16, func() pair { f := c.NewFairLock("cost-fair", nil); return pair{f.TryLock, f.Unlock} }},
		{"fenced", 14, func() pair { f := c.NewFencedLock("cost-fenced", nil); return pair{f.TryLock, f.Unlock} }},
		{"read", 16, func() pair { r := c.NewRWLock("cost-rw", nil).Reader(); return pair{r.TryLock, r.Unlock} }},
		{"write", 15, func() pair { w := c.NewRWLock("cost-rw", nil).Writer(); return pair{w.TryLock, w.Unlock} }},
		{"token", 9, func() pair { tl := c.NewTokenLock("cost-token", nil); return pair{tl.TryLock, tl.Unlock} }},
	}
	for _, k := range kinds {
		p := k.pair()
		// The first pair loads the scripts (and decides the publish mode).
		if err := p.take(ctx); err != nil {
			t.Fatal(k.name, err)
		}
		if err := p.release(ctx); err != nil {
			t.Fatal(k.name, err)
		}
		const pairs = 100
		before := redistest.CommandCalls(t, rdb)
		start := time.Now()
		for i := 0; i < pairs; i++ {
			if err := p.take(ctx); err != nil {
				t.Fatal(k.name, err)
			}
			if err := p.release(ctx); err != nil {
				t.Fatal(k.name, err)
			}
		}
		buckets := int64(time.Since(start)/(wire.BucketMS*time.Millisecond)) + 2
		after := redistest.CommandCalls(t, rdb)
		var inside int64
		for cmd, n := range after {
			if !notInScripts[cmd] {
				inside += n - before[cmd]
			}
		}
		t.Logf("%s: %.2f commands a pair inside the scripts", k.name, float64(inside)/pairs)
		if limit := k.limit*pairs + 2*buckets; inside > limit {
			t.Errorf("%s: %d commands inside the scripts for %d pairs (%.1f a pair), want at most %d", k.name, inside, pairs, float64(inside)/pairs, limit)
		}
		if got := after["evalsha"] - before["evalsha"]; got != 2*pairs {
			t.Errorf("%s: %d EVALSHA for %d pairs, want one per call", k.name, got, pairs)
		}
	}
}

// A hand-off to a waiter of another Client costs 15 commands inside the
// scripts and one EVALSHA, the release's: HGET, DEL, ZPOPMIN, TIME, HGET of
// the entry, HSET of the mark and HDEL of the entry, the lock's HSET and
// PEXPIRE, the hold times' HSET and PEXPIRE, the ZRANGE naming the next
// waiter, two PUBLISH, and the grant with its wait in one HMGET and one
// HSET (layout above wire.BucketMS). A bucket's first grant counts its "a"
// by HINCRBY instead, with the stats hash's PEXPIRE and HLEN: 3 more.
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
	limit := int64(15)
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
