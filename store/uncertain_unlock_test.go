package store

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// An Unlock whose outcome is unknown stops renewing the last level, in
// every kind: when the release never ran, the lock ends with its lease
// rather than being renewed by the watchdog for as long as the process
// lives. Redis pauses writes while the Unlock is on the wire; the Unlock's
// read times out, go-redis closes the connection, and Redis drops the
// release it had postponed (checked below, so the test cannot pass on a
// release that ran).
func TestUncertainUnlockStopsRenewal(t *testing.T) {
	opts := &LockOptions{Lease: 3 * time.Second} // renewed every second while held
	for _, tc := range []struct {
		kind string
		make func(c *Client, name string) tryLocker
	}{
		{"lock", func(c *Client, name string) tryLocker { return c.NewLock(name, opts) }},
		{"fenced", func(c *Client, name string) tryLocker { return c.NewFencedLock(name, opts) }},
		{"fair", func(c *Client, name string) tryLocker { return c.NewFairLock(name, opts) }},
		{"rw-read", func(c *Client, name string) tryLocker { return c.NewRWLock(name, opts).Reader() }},
		{"rw-write", func(c *Client, name string) tryLocker { return c.NewRWLock(name, opts).Writer() }},
		{"spin", func(c *Client, name string) tryLocker {
			return c.NewSpinLock(name, &LockOptions{Lease: opts.Lease})
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel() // a private server each, paused for a moment
			srv := redistest.StartT(t)
			admin := redistest.NewClient(t, srv)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			ctx := redistest.Context(t, 30*time.Second)
			name := redistest.Prefix(t) + "lock"
			l := tc.make(New(rdb, &Options{NoRegistry: true}), name)
			if err := l.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			granted := time.Now()
			const pause = 700 * time.Millisecond
			if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx); !errors.Is(err, ErrUncertain) {
				t.Fatalf("Unlock while Redis holds writes = %v, want ErrUncertain", err)
			}
			time.Sleep(time.Until(granted.Add(pause + 100*time.Millisecond)))
			if admin.Exists(ctx, name).Val() != 1 {
				t.Fatal("the postponed release ran after all: nothing left to test")
			}
			// The renewals due at 1 s and 2 s would have kept it.
			deadline := granted.Add(opts.Lease + time.Second)
			for admin.Exists(ctx, name).Val() == 1 {
				if time.Now().After(deadline) {
					t.Fatalf("lock still held %v after its grant (PTTL %v): renewed after an uncertain Unlock",
						time.Since(granted), admin.PTTL(ctx, name).Val())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Unlock again after the lease ran out = %v, want ErrNotHeld", err)
			}
		})
	}
}
