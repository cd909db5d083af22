package inspect

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// lateReplyClient is a client through a loopback proxy to the server at
// addr that, once armed, holds back the next reply past the client's
// ReadTimeout: the command ran, the caller hears nothing, and go-redis's
// own retry would send it again.
func lateReplyClient(t *testing.T, addr string) (*redis.Client, *atomic.Bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var armed atomic.Bool
	go func() {
		for {
			cli, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", addr)
			if err != nil {
				cli.Close()
				continue
			}
			go func() { _, _ = io.Copy(srv, cli); srv.Close() }()
			go func() {
				defer cli.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := srv.Read(buf)
					if n > 0 {
						if armed.CompareAndSwap(true, false) {
							time.Sleep(400 * time.Millisecond)
						}
						if _, werr := cli.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb, &armed
}

// A console reset whose reply is lost is reported as ErrUncertain, and ran
// once. Before it was sent with Script.Run: go-redis sent it again, the
// second run found the counter already gone, and the admin was told "not
// found" about a reset that had happened.
func TestResetCounterLateReplyIsUncertain(t *testing.T) {
	ctx, _, rdb, p := kindSetup(t)
	ip := p + "ip:10.0.0.1"
	// Through the server that holds the counter (a Cluster's master of its
	// slot).
	slow, armed := lateReplyClient(t, redistest.NodeFor(t, rdb, ip).Options().Addr)
	c := New(slow, &Options{Patterns: ObjectPatterns{Counters: []CounterRule{{Pattern: p + "ip:*", Limit: 3, Window: 10 * time.Second}}}})
	rdb.Set(ctx, ip, 4, 10*time.Second)
	if err := counterResetScript.Load(ctx, rdb).Err(); err != nil { // so the late reply is the reset's own
		t.Fatal(err)
	}
	armed.Store(true)
	err := c.ResetCounter(ctx, ip)
	if !errors.Is(err, store.ErrUncertain) {
		t.Fatalf("reset with a late reply = %v, want ErrUncertain", err)
	}
	if rdb.Exists(ctx, ip).Val() != 0 {
		t.Fatal("the reset did not run")
	}
}
