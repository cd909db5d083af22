package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// The history's keys that span objects are fixed names: each test starts
// from none and leaves none.
func clean(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	keys := []string{history.MetaKey, history.IndexKey, history.WriterLock}
	// One DEL: the keys share the {lw-history} tag.
	if err := rdb.Del(t.Context(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = rdb.Del(ctx, keys...).Err() // the next test's clean deletes them too
	})
}

// fresh is the shared Redis (a single node or a Cluster, see
// redistest.TopologyEnv) without the history's shared keys, and a sample
// time to start from.
func fresh(t testing.TB) (redis.UniversalClient, time.Time) {
	t.Helper()
	rdb := redistest.Universal(t)
	clean(t, rdb)
	return rdb, base(t, rdb)
}

// open starts a History closed when t ends; queue room for a test's bursts.
func open(t testing.TB, rdb redis.UniversalClient, opts *history.Options) *history.History {
	t.Helper()
	o := history.Options{Queue: 1 << 14}
	if opts != nil {
		o = *opts
		if o.Queue == 0 {
			o.Queue = 1 << 14
		}
	}
	h, err := history.Open(t.Context(), rdb, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.WithoutCancel(t.Context())) })
	return h
}

// feed observes samples on every h, then flushes each.
func feed(t testing.TB, hs []*history.History, samples ...history.Sample) {
	t.Helper()
	for _, s := range samples {
		for _, h := range hs {
			h.Observe(t.Context(), s)
		}
	}
	for _, h := range hs {
		if err := h.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := h.Stats().Dropped; d != 0 {
			t.Fatalf("%d samples dropped", d)
		}
	}
}

// base is a minute-aligned sample time near Redis's clock.
func base(t testing.TB, rdb redis.UniversalClient) time.Time {
	return time.UnixMilli(redistest.NowMS(t, rdb)).Truncate(time.Minute)
}

func name(t testing.TB, what string) string { return redistest.Prefix(t) + what }

func holder(i int) history.Holder {
	return history.Holder{ID: fmt.Sprintf("4f1c2a9e-0000-4000-8000-%012d:worker-%d", i, i), App: "orders-api",
		Host: "host-7", PID: 4000 + i}
}

// readLimiter and readLock read h's history of name over span, failing t on
// an error.
func readLimiter(t testing.TB, h *history.History, name, span string) history.LimiterHistory {
	t.Helper()
	got, err := h.Limiter(t.Context(), name, span)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func readLock(t testing.TB, h *history.History, name, span string) history.LockHistory {
	t.Helper()
	got, err := h.Lock(t.Context(), name, span)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
