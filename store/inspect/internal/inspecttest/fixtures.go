package inspecttest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// HolderUUID is the client id of the holders Lock writes.
const HolderUUID = "0b9c4f6e-2a7d-4c1b-8e3f-5d6a7b8c9d0e"

// Lock writes a Redisson-layout lock held by HolderUUID:owner count
// times, with a minute's lease.
func Lock(t testing.TB, rdb redis.Cmdable, name, owner string, count int64) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	if err := rdb.HSet(ctx, name, HolderUUID+":"+owner, count).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.PExpire(ctx, name, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// Bucket writes a token bucket in the client script's layout.
func Bucket(t testing.TB, rdb redis.Cmdable, name string, last int64, stored, max int64, interval string) {
	t.Helper()
	err := rdb.HSet(context.WithoutCancel(t.Context()), name,
		"last_mill_second", last, "stored_permits", stored, "max_permits", max,
		"interval", interval, "app", name).Err()
	if err != nil {
		t.Fatal(err)
	}
}

// Cleanup deletes the keys under prefix when the test ends.
func Cleanup(t testing.TB, rdb *redis.Client, prefix string) {
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
}
