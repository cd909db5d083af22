package inspecttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
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

// Cleanup deletes the keys under prefix when the test ends, on every
// master of the shared Cluster when rdb is its client.
func Cleanup(t testing.TB, rdb *redis.Client, prefix string) {
	all := redistest.UniversalFor(t, rdb)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, k := range scanAll(ctx, all, prefix+"*") {
			all.Del(ctx, k)
		}
	})
}

// Scan lists the keys matching match on every master of rdb's Redis
// (redistest.UniversalFor): a SCAN through rdb alone reaches one master of
// a Cluster.
func Scan(t testing.TB, rdb *redis.Client, match string) []string {
	t.Helper()
	return scanAll(t.Context(), redistest.UniversalFor(t, rdb), match)
}

func scanAll(ctx context.Context, rdb redis.UniversalClient, match string) []string {
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, node *redis.Client) error {
		for iter := node.Scan(ctx, 0, match, 1000).Iterator(); iter.Next(ctx); {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, scan)
	} else if c, ok := rdb.(*redis.Client); ok {
		_ = scan(ctx, c)
	}
	return out
}
