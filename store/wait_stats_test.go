package store

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// waitFields sums a lock's wait fields over every bucket of its stats hash
// (layout above wire.BucketMS): contended grants per histogram class, the
// total and the max wait in ms.
type waitFields struct {
	classes [len(wire.WaitClassLetters)]int64
	total   int64
	max     int64
}

func (w waitFields) count() int64 {
	var n int64
	for _, c := range w.classes {
		n += c
	}
	return n
}

func readWaitFields(t *testing.T, rdb redis.Cmdable, name string) waitFields {
	t.Helper()
	fields, err := rdb.HGetAll(t.Context(), wire.StatsKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var w waitFields
	for k, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("stats field %s=%q: %v", k, v, err)
		}
		switch i := strings.IndexByte(wire.WaitClassLetters, k[0]); {
		case i >= 0:
			w.classes[i] += n
		case k[0] == 't':
			w.total += n
		case k[0] == 'm':
			w.max = max(w.max, n)
		}
	}
	return w
}

// waitClass is the histogram class of a wait of ms.
func waitClass(ms int64) int {
	for i, b := range wire.WaitClassBoundsMS {
		if ms <= b {
			return i
		}
	}
	return len(wire.WaitClassBoundsMS)
}

// acquiredMS reads the acquisition time the lock scripts recorded for
// holder (wire.HoldField), in Redis time.
func acquiredMS(t *testing.T, rdb redis.Cmdable, name, holder string) int64 {
	t.Helper()
	v, err := rdb.HGet(t.Context(), name, wire.HoldField(holder)).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms, _, ok := wire.ParseHoldRecord(v)
	if !ok {
		t.Fatalf("hold record of %s = %q", holder, v)
	}
	return ms
}

// Each hand-off records the waiter's wait from its queue arrival (the ZSET
// score) to the grant (the hold time the hand-off wrote), both Redis time:
// the counts, total, max and classes must be exactly those.
func TestLockHandOffRecordsWaits(t *testing.T) {
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	first := New(rdb, nil).NewLock(name, nil)
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 3
	locks := make([]*Lock, waiters)
	done := make([]chan error, waiters)
	for i := range locks {
		locks[i] = New(rdb, nil).NewLock(name, nil)
		done[i] = make(chan error, 1)
		go func() { done[i] <- locks[i].Lock(ctx) }()
		// One at a time, so the queue order is the slice's.
		redistest.Eventually(t, "waiter queued", func() bool {
			return rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() == int64(i+1)
		})
		// A gap between arrivals spreads the waits over classes.
		time.Sleep(time.Duration(i) * 20 * time.Millisecond)
	}
	queued, err := rdb.ZRangeWithScores(ctx, wire.LockQueueKey(name), 0, -1).Result()
	if err != nil || len(queued) != waiters {
		t.Fatalf("queue %v, %v", queued, err)
	}
	var want waitFields
	holder := first
	for i, z := range queued {
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done[i]; err != nil {
			t.Fatal(err)
		}
		wait := acquiredMS(t, rdb, name, locks[i].HolderID()) - int64(z.Score)/1000
		want.classes[waitClass(wait)]++
		want.total += wait
		want.max = max(want.max, wait)
		holder = locks[i]
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readWaitFields(t, rdb, name); got != want {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
}

// An uncontended lock records no wait, and a TryLock that fails neither.
func TestUncontendedLockRecordsNoWait(t *testing.T) {
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 10*time.Second)
	a, b := New(rdb, nil).NewLock(name, nil), New(rdb, nil).NewLock(name, nil)
	for range 3 {
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.TryLock(ctx); err == nil {
			t.Fatal("b took a held lock")
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := readWaitFields(t, rdb, name); got != (waitFields{}) {
		t.Fatalf("recorded %+v for uncontended acquisitions", got)
	}
}

// pollWaiter is what a kind that waits without a queue shows while it waits.
type pollWaiter struct {
	since, deadline int64
	holder          string
}

func readPollWaiters(t *testing.T, rdb redis.Cmdable, name string) []pollWaiter {
	t.Helper()
	entries, err := rdb.HGetAll(t.Context(), wire.PollWaitersKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []pollWaiter
	for _, v := range entries {
		parts := strings.SplitN(v, " ", 3)
		if len(parts) != 3 {
			t.Fatalf("poll waiter entry %q", v)
		}
		since, err1 := strconv.ParseInt(parts[0], 10, 64)
		deadline, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("poll waiter entry %q", v)
		}
		out = append(out, pollWaiter{since, deadline, parts[2]})
	}
	return out
}

// The kinds without a queue show their waiter in the lock's poll waiters
// while it waits (since, a deadline ahead, the holder it will hold under),
// and the grant removes it and records one contended acquisition whose wait
// is at least what Redis time says passed since the entry's "since".
func TestPollWaitersAppearAndVanish(t *testing.T) {
	rdb := redistest.Client(t)
	c := New(rdb, nil)
	p := redistest.Prefix(t)
	type lockPair struct {
		take, release, wait func(context.Context) error
		waiterHolder        string
	}
	cases := []struct {
		kind string
		make func(name string) lockPair
	}{
		{"spin", func(name string) lockPair {
			h := c.NewSpinLock(name, nil)
			w := New(rdb, nil).NewSpinLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond})
			return lockPair{h.TryLock, h.Unlock, w.Lock, w.HolderID()}
		}},
		{"token", func(name string) lockPair {
			h := c.NewTokenLock(name, nil)
			w := c.NewTokenLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond})
			return lockPair{h.TryLock, h.Unlock, w.Lock, w.HolderID()}
		}},
		{"write-waits-for-read", func(name string) lockPair {
			h := c.NewRWLock(name, nil).Reader()
			w := New(rdb, nil).NewRWLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond}).Writer()
			return lockPair{h.TryLock, h.Unlock, w.Lock, w.HolderID()}
		}},
		{"read-waits-for-write", func(name string) lockPair {
			h := c.NewRWLock(name, nil).Writer()
			w := New(rdb, nil).NewRWLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond}).Reader()
			return lockPair{h.TryLock, h.Unlock, w.Lock, w.HolderID()}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			ctx := redistest.Context(t, 20*time.Second)
			name := p + tc.kind
			l := tc.make(name)
			if err := l.take(ctx); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- l.wait(ctx) }()
			var seen []pollWaiter
			redistest.Eventually(t, "the waiter shows in its poll waiters", func() bool {
				seen = readPollWaiters(t, rdb, name)
				return len(seen) == 1
			})
			w := seen[0]
			if w.holder != l.waiterHolder || w.deadline <= w.since {
				t.Fatalf("poll waiter %+v, want holder %q and a deadline after since", w, l.waiterHolder)
			}
			// Let Redis time pass the entry's "since" by a measurable wait.
			redistest.Eventually(t, "Redis time moves on", func() bool {
				return redistest.NowMS(t, rdb) > w.since+20
			})
			if err := l.release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if left := readPollWaiters(t, rdb, name); len(left) != 0 {
				t.Fatalf("poll waiters after the grant: %+v", left)
			}
			got := readWaitFields(t, rdb, name)
			if got.count() != 1 || got.total < 20 || got.max != got.total || got.classes[waitClass(got.total)] != 1 {
				t.Fatalf("recorded %+v, want one wait of at least 20 ms in its class", got)
			}
		})
	}
}

// A fair lock's queued waiter records its wait when it takes the lock.
func TestFairLockRecordsWait(t *testing.T) {
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "fair"
	ctx := redistest.Context(t, 20*time.Second)
	h := New(rdb, nil).NewFairLock(name, nil)
	w := New(rdb, nil).NewFairLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond})
	if err := h.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	redistest.Eventually(t, "the waiter queues", func() bool {
		return rdb.LLen(ctx, wire.FairLockQueueKey(name)).Val() == 1
	})
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readWaitFields(t, rdb, name); got.count() != 1 || got.total < 1 || got.max != got.total {
		t.Fatalf("recorded %+v, want one wait", got)
	}
}

// A fenced lock's Lock that had to wait records its wait when it takes the
// lock (at least the Redis time between its first failed attempt and the
// release), and its TryLock, which never waits, records none.
func TestFencedLockRecordsWait(t *testing.T) {
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "fenced"
	ctx := redistest.Context(t, 20*time.Second)
	h := New(rdb, nil).NewFencedLock(name, nil)
	w := New(rdb, nil).NewFencedLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond})
	if err := h.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.TryLock(ctx); err == nil {
		t.Fatal("the waiter took a held lock")
	}
	if got := readWaitFields(t, rdb, name); got != (waitFields{}) {
		t.Fatalf("recorded %+v without a contended grant", got)
	}
	rejected := func() int64 {
		var n int64
		for k, v := range rdb.HGetAll(ctx, wire.StatsKey(name)).Val() {
			if k[0] == 'r' {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
		return n
	}
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	// The TryLock above was one rejection; Lock's first failed attempt is
	// the second, and starts its wait.
	redistest.Eventually(t, "the waiter's attempt fails", func() bool { return rejected() >= 2 })
	since := redistest.NowMS(t, rdb)
	redistest.Eventually(t, "Redis time moves on", func() bool {
		return redistest.NowMS(t, rdb) > since+20
	})
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := readWaitFields(t, rdb, name)
	if got.count() != 1 || got.total < 20 || got.max != got.total || got.classes[waitClass(got.total)] != 1 {
		t.Fatalf("recorded %+v, want one wait of at least 20 ms in its class", got)
	}
	if w.Token() <= 0 {
		t.Fatalf("token %d after the wait", w.Token())
	}
}
