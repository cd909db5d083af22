package store

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// slowReplyProxy is a loopback TCP proxy in front of the shared test server
// that can hold back the next reply Redis sends: the command has run, its
// reply arrives after the client's ReadTimeout. That is the case in which
// go-redis, left to itself, sends the command again.
type slowReplyProxy struct {
	ln    net.Listener
	delay time.Duration
	armed atomic.Bool
	late  chan struct{} // one value once the held-back reply is written (or dropped)
	wg    sync.WaitGroup
}

func startSlowReplyProxy(t *testing.T, delay time.Duration) *slowReplyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowReplyProxy{ln: ln, delay: delay, late: make(chan struct{}, 1)}
	target := redistest.Shared(t).Addr
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			cli, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", target)
			if err != nil {
				cli.Close()
				continue
			}
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(srv, cli); srv.Close() }()
			go func() { defer p.wg.Done(); p.replies(cli, srv); cli.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

// replies copies srv to cli, holding back the first read after arm.
func (p *slowReplyProxy) replies(cli, srv net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := srv.Read(buf)
		if n > 0 {
			held := p.armed.CompareAndSwap(true, false)
			if held {
				time.Sleep(p.delay)
			}
			_, werr := cli.Write(buf[:n])
			if held {
				p.late <- struct{}{}
			}
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// arm makes the next reply late.
func (p *slowReplyProxy) arm() { p.armed.Store(true) }

// waitLate returns once the reply held back after arm has been written to
// the client (which has usually given up on it and closed the connection).
func (p *slowReplyProxy) waitLate(t *testing.T) {
	t.Helper()
	select {
	case <-p.late:
	case <-time.After(redistest.Patience):
		t.Fatal("the held-back reply was never written")
	}
}

// slowClient is a go-redis client through the proxy with go-redis's default
// retry settings (MaxRetries 3) and a short ReadTimeout, the only way to
// make a read time out without waiting seconds. A connection is warmed
// before the test arms the proxy, so only the call under test is delayed.
func slowClient(t *testing.T, p *slowReplyProxy) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), ReadTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	warm(t, "PING", func() error { return rdb.Ping(t.Context()).Err() })
	// Scripts are loaded first: a NOSCRIPT reply would take the delay.
	for _, s := range []*redis.Script{lockAcquireScript, lockReleaseScript, lockRenewScript} {
		warm(t, "SCRIPT LOAD", func() error { return s.Load(t.Context(), rdb).Err() })
	}
	return rdb
}

// warm sends an idempotent set-up call until it is answered: on a loaded
// machine a reply can outlast slowClient's short ReadTimeout before the
// proxy is armed.
func warm(t *testing.T, what string, call func() error) {
	t.Helper()
	var err error
	for range 50 {
		if err = call(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

func TestLateReplyTryLockNotAppliedTwice(t *testing.T) {
	p := startSlowReplyProxy(t, 400*time.Millisecond)
	rdb := slowClient(t, p)
	direct := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	// Out of the client registry: the proxy holds back the next reply on any
	// connection, which must be this test's call, not a beat's.
	c := New(rdb, &Options{NoRegistry: true})
	// The Client's one INFO (sharded.go) goes first, so the armed delay
	// falls on the script call under test.
	warm(t, "INFO", func() error { return c.decidePubsub(t.Context()) })
	l := c.NewLock(name, &LockOptions{Owner: "o"})

	p.arm()
	err := l.TryLock(t.Context())
	// Before the fix go-redis re-sent the EVALSHA: the lock held count 2
	// for a caller told of one success. Now the one send ran and the handle
	// withdrew it: nobody holds a lease the caller does not know of.
	p.waitLate(t)
	if n, _ := direct.HGet(t.Context(), name, l.HolderID()).Int64(); n != 0 {
		t.Fatalf("after one TryLock (err %v): reentry count %d, want the lock withdrawn", err, n)
	}
	if !errors.Is(err, ErrUncertain) {
		t.Fatalf("TryLock with a late reply: %v, want ErrUncertain", err)
	}
	if err := l.TryLock(t.Context()); err != nil {
		t.Fatalf("TryLock after: %v", err)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := direct.Exists(t.Context(), name).Result(); n != 0 {
		t.Fatalf("one TryLock and one Unlock left the lock held")
	}
}

func TestLateReplyUnlockNotAppliedTwice(t *testing.T) {
	p := startSlowReplyProxy(t, 400*time.Millisecond)
	rdb := slowClient(t, p)
	direct := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	// Out of the client registry: the proxy holds back the next reply on any
	// connection, which must be this test's call, not a beat's.
	c := New(rdb, &Options{NoRegistry: true})
	// The Client's one INFO (sharded.go) goes first, so the armed delay
	// falls on the script call under test.
	warm(t, "INFO", func() error { return c.decidePubsub(t.Context()) })
	l := c.NewLock(name, &LockOptions{Owner: "o"})
	redistest.UnlockAtEnd(t, l)
	for range 2 {
		if err := l.TryLock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	p.arm()
	unlockErr := l.Unlock(t.Context())
	p.waitLate(t)
	// Before the fix the re-sent release freed a lock whose owner still
	// held a level; another client could take it.
	n, err := direct.HGet(t.Context(), name, l.HolderID()).Int64()
	if err != nil || n != 1 {
		t.Fatalf("after one uncertain Unlock of two levels: count=%d err=%v, want 1", n, err)
	}
	if !errors.Is(unlockErr, ErrUncertain) {
		t.Fatalf("Unlock with a late reply: %v, want ErrUncertain", unlockErr)
	}
	other := New(direct, nil).NewLock(name, nil)
	if err := other.TryLock(t.Context()); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another client's TryLock: %v, want ErrNotObtained", err)
	}
}
