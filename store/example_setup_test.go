package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

var exampleSeq atomic.Int64

// exampleClient connects to the package's test redis-server (started by
// TestMain) and returns a store client, a key prefix no other example or
// test uses, and a cleanup that deletes the prefix's keys and closes the
// connection. An application would instead call store.New on its own
// go-redis client.
func exampleClient() (ctx context.Context, c *store.Client, prefix string, done func()) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(), MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	prefix = fmt.Sprintf("example:%d:", exampleSeq.Add(1))
	return ctx, store.New(rdb, nil), prefix, func() {
		var keys []string
		iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		cancel()
		rdb.Close()
	}
}
