package store

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// tryLocker is what every lock kind's handle (or RW side) offers.
type tryLocker interface {
	TryLock(context.Context) error
	Lock(context.Context) error
	Unlock(context.Context) error
}

// An acquire whose reply is lost, by a handle that held nothing, leaves no
// level behind: the kind withdraws it with one release sent once. Before,
// fenced, fair, rw and spin handles kept the level the attempt took (the
// caller was told ErrUncertain while a lease it did not know of ran on).
func TestLateReplyAcquireWithdrawnByEveryKind(t *testing.T) {
	for _, tc := range []struct {
		kind string
		make func(c *Client, name string) tryLocker
	}{
		{"fenced", func(c *Client, name string) tryLocker { return c.NewFencedLock(name, &LockOptions{Owner: "o"}) }},
		{"fair", func(c *Client, name string) tryLocker {
			return c.NewFairLock(name, &LockOptions{Owner: "o"})
		}},
		{"rw-read", func(c *Client, name string) tryLocker { return c.NewRWLock(name, &LockOptions{Owner: "o"}).Reader() }},
		{"rw-write", func(c *Client, name string) tryLocker { return c.NewRWLock(name, &LockOptions{Owner: "o"}).Writer() }},
		{"spin", func(c *Client, name string) tryLocker { return c.NewSpinLock(name, &LockOptions{Owner: "o"}) }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			p := startLostReplyProxy(t)
			rdb := proxiedClient(t, p)
			for _, s := range []*Script{fencedAcquireScript, fairAcquireScript, fairUnlockScript,
				rwReadAcquireScript, rwWriteAcquireScript, rwUnlockScript} {
				if err := s.Load(t.Context(), rdb).Err(); err != nil {
					t.Fatal(err)
				}
			}
			direct := redistest.Client(t)
			name := redistest.Prefix(t) + "lock"
			c := New(rdb, &Options{NoBatching: true, NoRegistry: true})
			// The Client's one INFO (sharded.go) goes first, so the lost
			// reply is the acquire's.
			if err := c.decidePubsub(t.Context()); err != nil {
				t.Fatal(err)
			}
			l := tc.make(c, name)

			p.arm()
			err := l.TryLock(t.Context())
			p.waitLost(t)
			if !errors.Is(err, ErrUncertain) {
				t.Fatalf("TryLock with a lost reply: %v, want ErrUncertain", err)
			}
			if n, _ := direct.Exists(t.Context(), name).Result(); n != 0 {
				fields, _ := direct.HGetAll(t.Context(), name).Result()
				t.Fatalf("after an uncertain TryLock the lock is still held: %v", fields)
			}
			// The handle is usable afterwards: one level, one release.
			if err := l.TryLock(t.Context()); err != nil {
				t.Fatalf("TryLock after: %v", err)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n, _ := direct.Exists(t.Context(), name).Result(); n != 0 {
				t.Fatalf("one TryLock and one Unlock left the lock held")
			}
		})
	}
}

// refusingDialer dials Redis until refuse is set, then fails every dial the
// way an unreachable server does.
type refusingDialer struct {
	addr   string
	refuse atomic.Bool
}

func (d *refusingDialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	if d.refuse.Load() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("i/o timeout")}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.addr)
}

// A Lock that finds the lock taken and then cannot subscribe to its channel
// took nothing: the error is ErrNotObtained with the cause. Before, fenced,
// rw and fair handles returned the bare network error.
func TestLockSubscribeFailureIsNotObtained(t *testing.T) {
	for _, tc := range []struct {
		kind string
		make func(c *Client, name string) tryLocker
	}{
		{"lock", func(c *Client, name string) tryLocker { return c.NewLock(name, nil) }},
		{"fenced", func(c *Client, name string) tryLocker { return c.NewFencedLock(name, nil) }},
		{"fair", func(c *Client, name string) tryLocker { return c.NewFairLock(name, nil) }},
		{"rw", func(c *Client, name string) tryLocker { return c.NewRWLock(name, nil).Writer() }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			name := redistest.Prefix(t) + "lock"
			holder := tc.make(New(redistest.Client(t), nil), name)
			if err := holder.TryLock(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = holder.Unlock(context.WithoutCancel(t.Context())) })

			d := &refusingDialer{addr: redistest.Addr()}
			rdb := redis.NewClient(&redis.Options{Addr: d.addr, Dialer: d.dial})
			t.Cleanup(func() { rdb.Close() })
			if err := rdb.Ping(t.Context()).Err(); err != nil { // the pooled connection the first attempt uses
				t.Fatal(err)
			}
			d.refuse.Store(true) // the PubSub needs a new connection
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			// Out of the registry: its beat would take the one pooled connection.
			err := tc.make(New(rdb, &Options{NoBatching: true, NoRegistry: true}), name).Lock(ctx)
			if !errors.Is(err, ErrNotObtained) || ctx.Err() != nil {
				t.Fatalf("Lock whose subscription fails: %v, want ErrNotObtained with the cause", err)
			}
		})
	}
}

// An acquire Redis refuses before it writes anything (here OOM: Redis
// refuses a script's first write that may grow memory, which ends it) took
// nothing: the error is ErrNotObtained with the reply, not a bare Redis
// error, and nothing is held. Before, every kind returned the bare "OOM
// command not allowed". The fair lock is not here: its acquire first
// drops stale waiters (a deletion, allowed under OOM), after which Redis
// lets the script write on, so it is simply taken.
func TestRefusedAcquireIsNotObtained(t *testing.T) {
	s := redistest.StartT(t, "--maxmemory", "1", "--maxmemory-policy", "noeviction")
	rdb := redistest.NewClient(t, s)
	c := New(rdb, &Options{NoBatching: true, NoRegistry: true})
	name := redistest.Prefix(t) + "lock"
	for _, l := range []interface{ TryLock(context.Context) error }{
		c.NewLock(name, nil), c.NewFencedLock(name, nil),
		c.NewRWLock(name, nil).Reader(), c.NewRWLock(name, nil).Writer(), c.NewSpinLock(name, nil),
		c.NewTokenLock(name, nil),
	} {
		err := l.TryLock(t.Context())
		if !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrUncertain) {
			t.Errorf("%T TryLock refused by OOM: %v, want ErrNotObtained", l, err)
		}
	}
	if n, _ := rdb.DBSize(t.Context()).Result(); n != 0 {
		t.Fatalf("refused acquires left %d keys", n)
	}
}
