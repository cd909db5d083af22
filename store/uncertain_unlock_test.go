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
// lives. A proxy closes the connection that sends the release, which so
// never reaches Redis; every other call, renewals included, goes through.
func TestUncertainUnlockStopsRenewal(t *testing.T) {
	opts := &LockOptions{Lease: 3 * time.Second} // renewed every second while held
	for _, tc := range []struct {
		kind    string
		release *Script
		make    func(c *Client, name string) tryLocker
	}{
		{"lock", lockReleaseScript, func(c *Client, name string) tryLocker { return c.NewLock(name, opts) }},
		{"fenced", lockReleaseScript, func(c *Client, name string) tryLocker { return c.NewFencedLock(name, opts) }},
		{"fair", fairUnlockScript, func(c *Client, name string) tryLocker { return c.NewFairLock(name, opts) }},
		{"rw-read", rwUnlockScript, func(c *Client, name string) tryLocker { return c.NewRWLock(name, opts).Reader() }},
		{"rw-write", rwUnlockScript, func(c *Client, name string) tryLocker { return c.NewRWLock(name, opts).Writer() }},
		{"spin", lockReleaseScript, func(c *Client, name string) tryLocker {
			return c.NewSpinLock(name, &LockOptions{Lease: opts.Lease})
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel() // a private server each
			srv := redistest.StartT(t)
			admin := redistest.NewClient(t, srv)
			p := startProxyTo(t, srv.Addr)
			rdb := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
			t.Cleanup(func() { rdb.Close() })
			ctx := redistest.Context(t, 30*time.Second)
			name := redistest.Prefix(t) + "lock"
			l := tc.make(New(rdb, &Options{NoRegistry: true}), name)
			if err := l.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			granted := time.Now()
			p.dropRequests(tc.release.w.Hash())
			if err := l.Unlock(ctx); !errors.Is(err, ErrUncertain) {
				t.Fatalf("Unlock whose connection was lost = %v, want ErrUncertain", err)
			}
			if p.held.Load() != 1 || admin.Exists(ctx, name).Val() != 1 {
				t.Fatalf("%d releases kept from Redis, lock exists %d; want the one release kept and the lock held",
					p.held.Load(), admin.Exists(ctx, name).Val())
			}
			p.letThrough()
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
