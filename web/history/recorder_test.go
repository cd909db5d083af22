package history_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// freshRecorder is a Recorder opened on the shared Redis without the
// history's shared keys, without a console, closed when t ends.
func freshRecorder(t *testing.T) (redis.UniversalClient, *history.History, *history.Recorder) {
	t.Helper()
	rdb := redistest.Universal(t)
	clean(t, rdb)
	r := history.NewRecorder(nil)
	if err := r.Open(t.Context(), rdb, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.History().Close(context.WithoutCancel(t.Context())) })
	return rdb, r.History(), r
}

// The Recorder hands the history one snapshot per stats bucket: a second
// snapshot of the same bucket, in which a force-unlocked lock is gone,
// would end the hold at the time the history last wrote, and the history
// writes only what ended after that.
func TestRecorderOneSampleABucket(t *testing.T) {
	rdb, h, f := freshRecorder(t)
	name := name(t, "lock")
	holder := holder(1).ID
	at := redistest.NowMS(t, rdb) / inspect.BucketMS * inspect.BucketMS
	held := []inspect.LockInfo{{Name: name, Kind: inspect.KindReentrant, PTTL: time.Minute,
		Holders: []inspect.Holder{{ID: holder, Count: 1}}}}
	snap := func(at int64, locks []inspect.LockInfo) {
		f.Observe(&live.Snapshot{At: at, RedisUp: true, Locks: locks, Stats: map[string]inspect.Summary{}})
		if err := h.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	snap(at-inspect.BucketMS, held)
	snap(at, held)
	if err := h.Ended(t.Context(), name, holder, history.EndForceUnlocked); err != nil {
		t.Fatal(err)
	}
	snap(at, nil) // the same bucket: the lock is gone
	snap(at+inspect.BucketMS, nil)
	snap(at+2*inspect.BucketMS, nil)
	got, err := h.Lock(t.Context(), name, history.SpanHour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Holds) != 1 || got.Holds[0].Ended != history.EndForceUnlocked {
		t.Fatalf("holds = %+v, want w1's, force-unlocked", got.Holds)
	}
}

// The Recorder counts a limiter's stats buckets one by one: a late tick's
// buckets, a repeated tick and buckets from before the console started
// are each counted as they should be, once or not at all. On a loaded
// Cluster run a late tick lost the buckets it skipped, and with them every
// attempt of a short test.
func TestRecorderCountsEveryBucketOnce(t *testing.T) {
	rdb, h, f := freshRecorder(t)
	name := name(t, "lim")
	lims := []inspect.LimiterInfo{{Name: name, Kind: inspect.KindTokenBucket}}
	perBucket := func(b int64) int64 { return 1 + b%3 }
	unread := func(bucket int64) { // an idle limiter's tick: no read, no Recent
		f.Observe(&live.Snapshot{At: bucket * inspect.BucketMS, RedisUp: true, Limiters: lims,
			Stats: map[string]inspect.Summary{name: {Bucket: bucket}}})
	}
	snap := func(bucket int64) {
		st := inspect.Summary{Bucket: bucket, Recent: make([]inspect.Counts, inspect.RecentBuckets)}
		for i := range st.Recent {
			st.Recent[i] = inspect.Counts{Acquired: perBucket(bucket - inspect.RecentBuckets + int64(i))}
		}
		f.Observe(&live.Snapshot{At: bucket * inspect.BucketMS, RedisUp: true, Limiters: lims,
			Stats: map[string]inspect.Summary{name: st}})
	}
	b0 := redistest.NowMS(t, rdb) / inspect.BucketMS
	// A snapshot at bucket n hands on the buckets up to n-2: on a Cluster
	// n-1 may still grow after the ring was read.
	snap(b0)     // the console's first: what came before is not its to count
	snap(b0 + 1) // b0-1
	snap(b0 + 2) // b0
	snap(b0 + 7) // late: b0+1 .. b0+5
	snap(b0 + 7) // the same tick again: nothing
	snap(b0 + 8) // b0+6
	unread(b0 + 9)
	unread(b0 + 12)
	snap(b0 + 13) // the next read: b0+7 .. b0+11
	var want int64
	for b := b0 - 1; b <= b0+11; b++ {
		want += perBucket(b)
	}
	for deadline := time.Now().Add(history.DefaultLease + 10*time.Second); h.Flush(t.Context()) != nil || !h.Stats().Writer; {
		if time.Now().After(deadline) {
			t.Fatal("the Recorder's history never became the writer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, err := h.Limiter(t.Context(), name, history.SpanHour)
	if err != nil {
		t.Fatal(err)
	}
	var acq int64
	for _, p := range got.Points {
		acq += p.Acquired
	}
	if acq != want {
		t.Errorf("the history counted %d acquisitions, want %d (buckets %d..%d once each)", acq, want, b0-1, b0+11)
	}
}

// The Recorder hands the history the difference of each lock's wait totals:
// nothing from the first snapshot (its totals began before the console),
// nothing twice when a snapshot repeats a bucket or leaves the lock out
// between two holds, and totals begun again (store/inspect dropped them
// after a minute idle) from zero.
func TestRecorderWaitTotals(t *testing.T) {
	rdb, h, f := freshRecorder(t)
	name := name(t, "lock")
	listed := []inspect.LockInfo{{Name: name, Kind: inspect.KindReentrant, PTTL: time.Minute,
		Holders: []inspect.Holder{{ID: holder(1).ID, Count: 1}}}}
	// Minute-aligned, so that every snapshot below falls in one minute.
	at := redistest.NowMS(t, rdb)/60_000*60_000 + inspect.BucketMS
	snap := func(locks []inspect.LockInfo, acq, contended int64) {
		stats := map[string]inspect.Summary{}
		if acq > 0 {
			w := &inspect.WaitWindows{Total: inspect.WaitTotals{Acquired: acq, Count: contended, SumMS: 5 * contended}}
			w.Total.Classes[2] = contended // up to 10 ms
			w.Second.MaxMS = 7
			stats[name] = inspect.Summary{Wait: w}
		}
		f.Observe(&live.Snapshot{At: at, RedisUp: true, Locks: locks, Stats: stats})
		at += inspect.BucketMS
	}
	snap(listed, 100, 40) // the baseline
	snap(listed, 103, 41)
	at -= inspect.BucketMS
	snap(listed, 103, 41) // the same bucket again: skipped
	snap(nil, 0, 0)       // nobody holds it: not listed
	snap(listed, 106, 42) // back: 3 and 1 more, not 106 and 42
	snap(listed, 0, 0)    // listed without waits: its totals were dropped
	snap(listed, 2, 1)    // begun again
	if err := h.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := h.Lock(t.Context(), name, history.SpanHour)
	if err != nil {
		t.Fatal(err)
	}
	want := history.WaitPoint{T: (at - 1) / 60_000 * 60, Acquired: 8, Contended: 3, TotalMS: 15, P50MS: 7, P99MS: 7, MaxMS: 7}
	if len(got.Wait) != 1 || got.Wait[0] != want {
		t.Fatalf("waits %+v, want %+v", got.Wait, want)
	}
}
