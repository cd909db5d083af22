package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// lostReplyProxy is a loopback TCP proxy in front of the shared test server
// that can lose the next reply Redis sends: the command has run, and the
// proxy closes the client's connection instead of passing its reply on.
// That is the case in which go-redis, left to itself, sends the command
// again (a bad connection is retried like a read timeout). The reply is
// lost by the proxy, not by a short ReadTimeout on the client: such a
// timeout also ends, on a loaded machine, the calls the test needs answered
// (the withdrawing release's connection handshake; a reply from the shared
// server took 120 ms under the CI's load).
//
// It can also keep requests from Redis: the connection that sends one is
// left open and silent (holdRequests), as a server that never runs it, or
// closed (dropRequests), as a connection lost before the request arrived.
type lostReplyProxy struct {
	ln    net.Listener
	armed atomic.Bool
	lost  chan struct{} // one value once the reply read after arm is dropped
	hold  atomic.Pointer[[]byte]
	drop  atomic.Bool  // close, rather than silence, a connection held
	held  atomic.Int64 // requests kept from Redis
	wg    sync.WaitGroup
}

func startLostReplyProxy(t *testing.T) *lostReplyProxy {
	t.Helper()
	return startProxyTo(t, redistest.Shared(t).Addr)
}

// startProxyTo starts a lostReplyProxy in front of the server at target.
func startProxyTo(t *testing.T, target string) *lostReplyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lostReplyProxy{ln: ln, lost: make(chan struct{}, 1)}
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
			go func() { defer p.wg.Done(); p.requests(cli, srv); srv.Close() }()
			go func() { defer p.wg.Done(); p.replies(cli, srv); cli.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

// replies copies srv to cli until the first read after arm, which it drops
// (its caller then closes both ends).
func (p *lostReplyProxy) replies(cli, srv net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := srv.Read(buf)
		if n > 0 {
			if p.armed.CompareAndSwap(true, false) {
				srv.Close()
				p.lost <- struct{}{}
				return
			}
			if _, werr := cli.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// requests copies cli to srv until a request holds the bytes set by
// holdRequests or dropRequests: from there on nothing more of the
// connection reaches Redis (a request cut in two never completes there),
// and the client hears nothing until it closes the connection itself, or
// with dropRequests the connection closes at once.
func (p *lostReplyProxy) requests(cli, srv net.Conn) {
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the previous read, for a match across reads
	for {
		n, err := cli.Read(buf)
		if n > 0 {
			if h := p.hold.Load(); h != nil && bytes.Contains(append(tail, buf[:n]...), *h) {
				p.held.Add(1)
				if !p.drop.Load() {
					_, _ = io.Copy(io.Discard, cli)
				}
				return
			}
			if _, werr := srv.Write(buf[:n]); werr != nil {
				return
			}
			tail = append(tail[:0], buf[max(0, n-64):n]...)
		}
		if err != nil {
			return
		}
	}
}

// holdRequests keeps every request that holds the bytes of arg, sent as a
// RESP bulk string, from Redis.
func (p *lostReplyProxy) holdRequests(arg string) {
	b := []byte(fmt.Sprintf("$%d\r\n%s\r\n", len(arg), arg))
	p.hold.Store(&b)
}

// dropRequests is holdRequests that closes the connection instead.
func (p *lostReplyProxy) dropRequests(arg string) {
	p.drop.Store(true)
	p.holdRequests(arg)
}

// letThrough ends holdRequests and dropRequests for the requests after.
func (p *lostReplyProxy) letThrough() { p.hold.Store(nil) }

// arm makes the proxy lose the next reply.
func (p *lostReplyProxy) arm() { p.armed.Store(true) }

// waitLost returns once the reply read after arm has been dropped.
func (p *lostReplyProxy) waitLost(t *testing.T) {
	t.Helper()
	select {
	case <-p.lost:
	case <-time.After(redistest.Patience):
		t.Fatal("no reply came after arm")
	}
}

// proxiedClient is a go-redis client through the proxy with go-redis's
// default retry settings (MaxRetries 3) and timeouts. A connection is
// warmed, and the scripts loaded (a NOSCRIPT reply would be the lost one),
// before the test arms the proxy, so only the call under test loses its
// reply.
func proxiedClient(t *testing.T, p *lostReplyProxy) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Script{lockAcquireScript, lockReleaseScript, lockRenewScript} {
		if err := s.Load(t.Context(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return rdb
}

func TestLateReplyTryLockNotAppliedTwice(t *testing.T) {
	p := startLostReplyProxy(t)
	rdb := proxiedClient(t, p)
	direct := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	// Out of the client registry: the proxy loses the next reply on any
	// connection, which must be this test's call, not a beat's.
	c := New(rdb, &Options{NoRegistry: true})
	// The Client's one INFO (sharded.go) goes first, so the lost reply
	// is the script call's.
	if err := c.decidePubsub(t.Context()); err != nil {
		t.Fatal(err)
	}
	l := c.NewLock(name, &LockOptions{Owner: "o"})

	p.arm()
	err := l.TryLock(t.Context())
	// A re-sent EVALSHA would leave the lock at count 2 for a caller told
	// of one success. The one send ran and the handle withdrew it: nobody
	// holds a lease the caller does not know of.
	p.waitLost(t)
	if n, _ := direct.HGet(t.Context(), name, l.HolderID()).Int64(); n != 0 {
		t.Fatalf("after one TryLock (err %v): reentry count %d, want the lock withdrawn", err, n)
	}
	if !errors.Is(err, ErrUncertain) {
		t.Fatalf("TryLock with a lost reply: %v, want ErrUncertain", err)
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
	p := startLostReplyProxy(t)
	rdb := proxiedClient(t, p)
	direct := redistest.Client(t)
	name := redistest.Prefix(t) + "lock"
	// Out of the client registry: the proxy loses the next reply on any
	// connection, which must be this test's call, not a beat's.
	c := New(rdb, &Options{NoRegistry: true})
	// The Client's one INFO (sharded.go) goes first, so the lost reply
	// is the script call's.
	if err := c.decidePubsub(t.Context()); err != nil {
		t.Fatal(err)
	}
	l := c.NewLock(name, &LockOptions{Owner: "o"})
	redistest.UnlockAtEnd(t, l)
	for range 2 {
		if err := l.TryLock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	p.arm()
	unlockErr := l.Unlock(t.Context())
	p.waitLost(t)
	// A re-sent release would free a lock whose owner still holds a
	// level; another client could take it.
	n, err := direct.HGet(t.Context(), name, l.HolderID()).Int64()
	if err != nil || n != 1 {
		t.Fatalf("after one uncertain Unlock of two levels: count=%d err=%v, want 1", n, err)
	}
	if !errors.Is(unlockErr, ErrUncertain) {
		t.Fatalf("Unlock with a lost reply: %v, want ErrUncertain", unlockErr)
	}
	other := New(direct, nil).NewLock(name, nil)
	if err := other.TryLock(t.Context()); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another client's TryLock: %v, want ErrNotObtained", err)
	}
}
