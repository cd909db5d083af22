package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// testPair is an application's client and the console on one connection, so
// a test can take an object with one and look at it with the other.
// Selectors both have (Redis) must be spelled out.
type testPair struct {
	*store.Client
	*Inspector
}

func newPair(rdb redis.UniversalClient) testPair {
	return testPair{store.New(rdb, nil), New(rdb, nil)}
}

func lockTestClient(t *testing.T) (testPair, *redis.Client) {
	t.Helper()
	rdb := redistest.Client(t)
	return newPair(rdb), rdb
}

func lockTestCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// unlockAtEnd releases every level l may still hold so a failing test does
// not leave a watchdog renewing into the next test.
func unlockAtEnd(t *testing.T, l *store.Lock) {
	t.Cleanup(func() {
		ctx := context.Background()
		for i := 0; i < 10 && l.Unlock(ctx) == nil; i++ {
		}
	})
}

func receiveMessage(sub *redis.PubSub, d time.Duration) (*redis.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		m, err := sub.ReceiveTimeout(ctx, d)
		if err != nil {
			return nil, err
		}
		if msg, ok := m.(*redis.Message); ok {
			return msg, nil
		}
	}
}

func tbNewBucket(t *testing.T) (testPair, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	return newPair(rdb), rdb, redistest.Prefix(t) + "ratelimit:b"
}

func queueLen(rdb *redis.Client, name string) int64 {
	return rdb.LLen(context.Background(), wire.FairLockQueueKey(name)).Val()
}

// eventually polls cond every 10 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

func rwLevelTTL(t *testing.T, rdb *redis.Client, name, holder string, level int64) time.Duration {
	t.Helper()
	return rdb.PTTL(context.Background(), wire.RWReadLevelKey(name, holder, level)).Val()
}
