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

func tbNewBucket(t *testing.T) (testPair, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	return newPair(rdb), rdb, redistest.Prefix(t) + "ratelimit:b"
}

func queueLen(rdb *redis.Client, name string) int64 {
	return rdb.LLen(context.Background(), wire.FairLockQueueKey(name)).Val()
}

func rwLevelTTL(t *testing.T, rdb *redis.Client, name, holder string, level int64) time.Duration {
	t.Helper()
	return rdb.PTTL(context.Background(), wire.RWReadLevelKey(name, holder, level)).Val()
}
