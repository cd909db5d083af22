package store

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The lone caller's pair, against bsm/redislock's on the same private
// server: ns/op, allocs/op, and the CPU each side spends per pair
// (app-µs/pair: this process, getrusage; redis-µs/pair: the server's
// used_cpu_user + used_cpu_sys). Profile with -cpuprofile.
//
//	go test -run '^$' -bench 'LonePair' -benchmem -count 5 ./store/
func BenchmarkLonePair(b *testing.B) {
	srv := redistest.StartT(b)
	newRDB := func(b *testing.B) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 9, MinIdleConns: 1})
		b.Cleanup(func() { rdb.Close() })
		return rdb
	}
	for _, try := range []bool{false, true} {
		name := map[bool]string{false: "lockwarden", true: "lockwarden-try"}[try]
		b.Run(name, func(b *testing.B) {
			rdb := newRDB(b)
			c := New(rdb, nil)
			b.Cleanup(func() { c.Close() })
			l := c.NewLock("bench:"+name, nil)
			take := l.Lock
			if try {
				take = l.TryLock
			}
			lonePairs(b, rdb, take, l.Unlock)
		})
	}
	b.Run("redislock", func(b *testing.B) {
		rdb := newRDB(b)
		locker := redislock.New(rdb)
		var held *redislock.Lock
		lock := func(ctx context.Context) (err error) {
			held, err = locker.Obtain(ctx, "bench:rl", 30*time.Second, nil)
			return err
		}
		lonePairs(b, rdb, lock, func(ctx context.Context) error { return held.Release(ctx) })
	})
}

// lonePairs runs take and release b.N times from one goroutine, after a
// warm-up pair (scripts loaded, INFO read, connection open).
func lonePairs(b *testing.B, rdb *redis.Client, take, release func(context.Context) error) {
	ctx := context.Background()
	for range 2 {
		if err := take(ctx); err != nil {
			b.Fatal(err)
		}
		if err := release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	redisBefore := redisCPU(b, rdb)
	appBefore, switchesBefore := selfCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := take(ctx); err != nil {
			b.Fatal(err)
		}
		if err := release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	appAfter, switchesAfter := selfCPU()
	app := appAfter - appBefore
	redisUsed := redisCPU(b, rdb) - redisBefore
	b.ReportMetric(float64(app.Microseconds())/float64(b.N), "app-µs/pair")
	b.ReportMetric(redisUsed.Seconds()*1e6/float64(b.N), "redis-µs/pair")
	b.ReportMetric(float64(switchesAfter-switchesBefore)/float64(b.N), "csw/pair")
}

// selfCPU is this process's user and system CPU so far, and its context
// switches (voluntary and not): a thread that sleeps until a reply comes
// back pays one.
func selfCPU() (time.Duration, int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw
}

// redisCPU is the server's user and system CPU so far (INFO cpu).
func redisCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// A Client's life around a few pairs, as each run of e2e/bench's case 1
// has it: New, NewLock, the first pair (INFO for the pubsub mode and the
// replica count, script loads), Close. Its CPU is spread over the run's
// pairs there.
//
//	go test -run '^$' -bench 'ClientLife' -benchmem ./store/
func BenchmarkClientLife(b *testing.B) {
	srv := redistest.StartT(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 9, MinIdleConns: 1})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	appBefore, _ := selfCPU()
	b.ReportAllocs()
	for i := range b.N {
		c := New(rdb, nil)
		l := c.NewLock("bench:life:"+strconv.Itoa(i), nil)
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
	appAfter, _ := selfCPU()
	b.ReportMetric(float64((appAfter-appBefore).Microseconds())/float64(b.N), "app-µs/op")
}
