package inspect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/inspect/stats"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// luaFunction returns "local function <name>(" up to the first unindented
// "end" of a script.
func luaFunction(src, name string) (string, bool) {
	i := strings.Index(src, "local function "+name+"(")
	if i < 0 {
		return "", false
	}
	j := strings.Index(src[i:], "\nend\n")
	if j < 0 {
		return "", false
	}
	return src[i : i+j+4], true
}

// waitRecordAt runs the scripts' record and record_wait functions with now
// (ms) passed in: a grant ("a") and, when ARGV[2] is not empty, its wait.
func waitRecordAt(t *testing.T) *redis.Script {
	t.Helper()
	src := luascripts.Source("lock_release")
	rec, ok1 := statsRecordBlock(src)
	wait, ok2 := luaFunction(src, "record_wait")
	if !ok1 || !ok2 {
		t.Fatal("lock_release has no record or record_wait")
	}
	return redis.NewScript("local stats, now = KEYS[1], tonumber(ARGV[1])\n" + rec + "\n" + wait +
		"\nif ARGV[2] ~= '' then record_wait(tonumber(ARGV[2])) else record('a') end\nreturn 0\n")
}

// Waits written by the scripts' own functions in real Redis, read every
// bucket as the console does, give exact windows well beyond the ring's
// 16 buckets: counts, contended share, classes for p50/p99, and the max.
func TestWaitWindowsFromRedis(t *testing.T) {
	ctx := context.Background()
	rdb, key := scratchStatsKey(t, "lock")
	script := waitRecordAt(t)
	const base = int64(1_700_000_000_000) // bucket 8_500_000_000, a second's start
	first := BucketOf(time.UnixMilli(base))
	var book stats.WaitBook
	// 300 buckets (1 min): each has 3 grants, one of them after a wait of
	// 2 ms, and every tenth bucket one more of 4000 ms; the last 10 s
	// (buckets 250..299) also one of 40 ms each.
	for k := int64(0); k < 300; k++ {
		at := base + k*BucketMS + 7
		waits := []string{"", "", "2"}
		if k%10 == 0 {
			waits = append(waits, "4000")
		}
		if k >= 250 {
			waits = append(waits, "40")
		}
		for _, w := range waits {
			if err := script.Run(ctx, rdb, []string{key}, at, w).Err(); err != nil {
				t.Fatal(err)
			}
		}
		fields, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(fields) > StatsMaxFields+8*StatsRing {
			t.Fatalf("the stats hash holds %d fields: the clean-up does not keep up", len(fields))
		}
		book.Fold("lock", fields, first+k+1)
	}
	w := book.Windows("lock", first+300)
	if w == nil {
		t.Fatal("no windows")
	}
	// p99 of 380 waits is the 377th: among the 30 of 4000 ms (class "3 s to
	// 10 s", capped by the max).
	want := WaitStats{WindowS: 60, Acquired: 300*3 + 30 + 50, Contended: 300 + 30 + 50, P50MS: 3, P99MS: 4000, MaxMS: 4000}
	if w.Minute != want {
		t.Errorf("minute %+v, want %+v", w.Minute, want)
	}
	// p50 of 105 is the 53rd: a 40 ms wait, in the class up to 100 ms.
	want10 := WaitStats{WindowS: 10, Acquired: 50*3 + 5 + 50, Contended: 50 + 5 + 50, P50MS: 100, P99MS: 4000, MaxMS: 4000}
	if w.TenSeconds != want10 {
		t.Errorf("10 s %+v, want %+v", w.TenSeconds, want10)
	}
	want1 := WaitStats{WindowS: 1, Acquired: 5*3 + 5, Contended: 5 + 5, P50MS: 3, P99MS: 40, MaxMS: 40}
	if w.Second != want1 {
		t.Errorf("1 s %+v, want %+v", w.Second, want1)
	}
	if w.Total.Count != 380 || w.Total.SumMS != 300*2+30*4000+50*40 {
		t.Errorf("totals %+v", w.Total)
	}
	// A minute later without reads the lock is forgotten: its waits are
	// gone even as of the time they were read.
	if book.Windows("lock", first+300+5*60); book.Windows("lock", first+300) != nil {
		t.Error("an idle lock's waits are kept")
	}
}

// The console's sample shows a store lock's contended acquisition with the
// wait the hand-off recorded.
func TestSampleShowsLockWaits(t *testing.T) {
	p, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 20*time.Second)
	holder, waiter := p.NewLock(name, nil), newPair(t, rdb).NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	redistest.Eventually(t, "waiter queued", func() bool {
		return rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() == 1
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	redistest.UnlockAtEnd(t, waiter)
	var total int64
	for k, v := range rdb.HGetAll(ctx, wire.StatsKey(name)).Val() {
		if k[0] == 't' {
			total = stats.Counter(v)
		}
	}
	var got *WaitWindows
	redistest.Eventually(t, "the sample shows the wait", func() bool {
		s, err := p.Sample(ctx, []string{name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = s.Stats[name].Wait
		return got != nil && got.TenSeconds.Contended == 1
	})
	if w := got.TenSeconds; w.Acquired != 2 || w.MaxMS != total || w.P50MS != min(w.MaxMS, bound(total)) {
		t.Fatalf("10 s window %+v, want 2 acquisitions, one contended with max %d ms", w, total)
	}
}

func bound(ms int64) int64 {
	for _, b := range WaitClassBoundsMS {
		if ms <= b {
			return b
		}
	}
	return ms
}
