package store

import (
	"context"
	"errors"
	"math"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// tbNewBucket returns a client on the shared test server and a bucket name
// unique to the test.
func tbNewBucket(t *testing.T) (*Client, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	return New(rdb, nil), rdb, redistest.Prefix(t) + "ratelimit:b"
}

// tbClientScript runs testdata/ratelimit_client.lua, the token-bucket client
// script, passing Redis time as the client time the way that client does.
func tbClientScript(t *testing.T, rdb *redis.Client, name, method string, args ...any) int64 {
	t.Helper()
	src, err := os.ReadFile("testdata/ratelimit_client.lua")
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]any{method, redistest.NowMS(t, rdb)}, args...)
	code, err := redis.NewScript(string(src)).Run(context.Background(), rdb, []string{name}, argv...).Int64()
	if err != nil {
		t.Fatalf("client script %s: %v", method, err)
	}
	return code
}

func TestTokenBucketSeedInitWorksWithOurScripts(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	// A long interval keeps refills out of the picture.
	if code := tbClientScript(t, rdb, name, "init", 3, 5, "60000.0", "b"); code != 1 {
		t.Fatalf("seed init = %d", code)
	}
	b := c.NewTokenBucket(name, nil)
	res, err := b.TryAcquire(ctx, 2)
	if err != nil || !res.Allowed || res.Remaining != 1 || res.Code != BucketSuccess {
		t.Fatalf("Acquire(2) on a seed bucket with 3 = %+v, %v; want allowed, 1 left", res, err)
	}
	if res.Limit != (Limit{Capacity: 5, IntervalMS: 60000}) {
		t.Errorf("Limit = %+v, want 5 per 60000 ms", res.Limit)
	}
	res, err = b.TryAcquire(ctx, 2)
	if err != nil || res.Allowed || res.Code != BucketAcquireFail {
		t.Fatalf("Acquire(2) with 1 left = %+v, %v; want rejected", res, err)
	}
	if res.RetryAfter <= 0 || res.RetryAfter > 60*time.Second {
		t.Errorf("RetryAfter = %v, want within one interval", res.RetryAfter)
	}
	if err := b.Modify(ctx, 10, 0.5); err != nil {
		t.Fatalf("Modify of a seed bucket: %v", err)
	}
	_, stored, maxPermits, interval, app := redistest.BucketFields(t, rdb, name)
	if maxPermits != 10 || interval != 0.5 || app != "b" {
		t.Errorf("after Modify: max %v interval %v app %q, want 10, 0.5, b", maxPermits, interval, app)
	}
	if stored < 1 || stored > 10 {
		t.Errorf("after Modify: stored %v, want the 1 left plus refill, at most 10", stored)
	}
	// The client script's own acquire still reads the bucket our scripts rewrote.
	if code := tbClientScript(t, rdb, name, "acquire", 1); code != 1 {
		t.Errorf("seed acquire after our modify = %d, want 1", code)
	}
}

func TestTokenBucketOurInitWorksWithSeedScript(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 60000, Initial: 2}); err != nil {
		t.Fatal(err)
	}
	last, stored, maxPermits, interval, app := redistest.BucketFields(t, rdb, name)
	if stored != 2 || maxPermits != 5 || interval != 60000 || app == "" || last <= 0 {
		t.Fatalf("Init wrote last %v stored %v max %v interval %v app %q", last, stored, maxPermits, interval, app)
	}
	for i, want := range []int64{1, 1, -1} {
		if code := tbClientScript(t, rdb, name, "acquire", 1); code != want {
			t.Errorf("seed acquire #%d = %d, want %d", i+1, code, want)
		}
	}
	if code := tbClientScript(t, rdb, name, "modify", 7, "1000.0"); code != 1 {
		t.Fatalf("seed modify = %d", code)
	}
	res, err := b.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != (Limit{Capacity: 7, IntervalMS: 1000}) {
		t.Errorf("our acquire sees %+v after seed modify, want 7 per 1000 ms", res.Limit)
	}
	if code := tbClientScript(t, rdb, name, "delete"); code != 1 {
		t.Fatalf("seed delete = %d", code)
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("seed delete left our bucket behind")
	}
}

func TestTokenBucketModifyMissing(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	err := c.NewTokenBucket(name, nil).Modify(context.Background(), 10, 2)
	if !errors.Is(err, ErrModify) {
		t.Fatalf("Modify of a missing bucket = %v, want ErrModify", err)
	}
	if n := rdb.Exists(context.Background(), name).Val(); n != 0 {
		t.Errorf("Modify of a missing bucket created the key")
	}
}

func TestTokenBucketAcquireUnconfigured(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	res, err := c.NewTokenBucket(name, nil).TryAcquire(context.Background(), 1)
	if !errors.Is(err, ErrNotConfigured) || res.Code != BucketNoLimit || res.Allowed {
		t.Fatalf("Acquire unconfigured = %+v, %v; want NoLimit, ErrNotConfigured", res, err)
	}
	if n := rdb.Exists(context.Background(), name, wire.StatsKey(name)).Val(); n != 0 {
		t.Errorf("Acquire on an unconfigured key created %d keys", n)
	}
}

func TestTokenBucketDelete(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 3, IntervalMS: 10, Initial: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, name, wire.StatsKey(name)).Val(); n != 2 {
		t.Fatalf("before Delete %d of bucket and stats exist, want 2", n)
	}
	if err := b.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, name, wire.StatsKey(name)).Val(); n != 0 {
		t.Errorf("after Delete %d of bucket and stats exist, want 0", n)
	}
	if err := b.Delete(ctx); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	other := c.NewTokenBucket(name+":str", nil)
	rdb.Set(ctx, other.Name(), "app data", 0)
	if err := other.Delete(ctx); !errors.Is(err, ErrWrongKind) {
		t.Errorf("Delete of a string key = %v, want ErrWrongKind", err)
	}
	if v := rdb.Get(ctx, other.Name()).Val(); v != "app data" {
		t.Errorf("Delete of a string key changed it to %q", v)
	}
}

func TestTokenBucketInitTwiceKeepsFirst(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 2, Initial: 1, App: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 9, IntervalMS: 7, Initial: 9, App: "second"}); err != nil {
		t.Fatal(err)
	}
	_, _, maxPermits, interval, app := redistest.BucketFields(t, rdb, name)
	if maxPermits != 5 || interval != 2 || app != "first" {
		t.Errorf("after two Inits: max %v interval %v app %q, want the first config", maxPermits, interval, app)
	}
}

func TestTokenBucketInitLeavesForeignKeys(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	rdb.HSet(ctx, name, "user", "42")
	err := c.NewTokenBucket(name, nil).Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 2})
	if !errors.Is(err, ErrWrongKind) {
		t.Errorf("Init over an application hash = %v, want ErrWrongKind", err)
	}
	if m := rdb.HGetAll(ctx, name).Val(); len(m) != 1 {
		t.Errorf("Init over an application hash changed it: %v", m)
	}
	rdb.Set(ctx, name+":s", "x", 0)
	if _, err := c.NewTokenBucket(name+":s", nil).TryAcquire(ctx, 1); !errors.Is(err, ErrWrongKind) {
		t.Errorf("Acquire on a string key = %v, want ErrWrongKind", err)
	}
}

func TestTokenBucketRefillKeepsRemainder(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	for _, interval := range []float64{400, 2.5} {
		start := float64(redistest.NowMS(t, rdb) - 1000)
		rdb.HSet(ctx, name, "last_mill_second", strconv.FormatFloat(start, 'f', -1, 64),
			"stored_permits", 0, "max_permits", 1000, "interval", interval, "app", "x")
		res, err := c.NewTokenBucket(name, nil).TryAcquire(ctx, 1)
		if err != nil || !res.Allowed {
			t.Fatalf("interval %v: Acquire = %+v, %v", interval, res, err)
		}
		now := float64(res.At.UnixMilli())
		k := math.Floor((now - start) / interval)
		last, stored, _, _, _ := redistest.BucketFields(t, rdb, name)
		if stored != k-1 || res.Remaining != int64(k-1) {
			t.Errorf("interval %v: stored %v, remaining %d, want %v refills minus one", interval, stored, res.Remaining, k)
		}
		if last != start+k*interval {
			t.Errorf("interval %v: last_mill_second %v, want %v (whole intervals only, remainder %v kept)",
				interval, last, start+k*interval, now-start-k*interval)
		}
	}
}

func TestTokenBucketFullBucketDoesNotBankTime(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	rdb.HSet(ctx, name, "last_mill_second", redistest.NowMS(t, rdb)-100000,
		"stored_permits", 0, "max_permits", 5, "interval", 10, "app", "x")
	res, err := c.NewTokenBucket(name, nil).TryAcquire(ctx, 1)
	if err != nil || !res.Allowed || res.Remaining != 4 {
		t.Fatalf("Acquire = %+v, %v; want allowed with 4 of 5 left", res, err)
	}
	last, stored, _, _, _ := redistest.BucketFields(t, rdb, name)
	if stored != 4 || last != float64(res.At.UnixMilli()) {
		t.Errorf("stored %v last %v, want 4 and the decision time %d", stored, last, res.At.UnixMilli())
	}
}

func TestTokenBucketModifySettlesAtOldRate(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	t0 := redistest.NowMS(t, rdb)
	start := t0 - 1000
	rdb.HSet(ctx, name, "last_mill_second", start, "stored_permits", 0,
		"max_permits", 1000, "interval", 100, "app", "x")
	b := c.NewTokenBucket(name, nil)
	if err := b.Modify(ctx, 1000, 1); err != nil {
		t.Fatal(err)
	}
	t1 := redistest.NowMS(t, rdb)
	last, stored, maxPermits, interval, _ := redistest.BucketFields(t, rdb, name)
	// At the old rate one second is 10 permits; at the new one it would be 1000.
	lo, hi := float64((t0-start)/100), float64((t1-start)/100)
	if stored < lo || stored > hi {
		t.Errorf("stored after Modify = %v, want %v..%v (elapsed time at the old rate)", stored, lo, hi)
	}
	if last != float64(start)+stored*100 || maxPermits != 1000 || interval != 1 {
		t.Errorf("after Modify: last %v max %v interval %v", last, maxPermits, interval)
	}
	if err := b.Modify(ctx, 3, 0.5); err != nil {
		t.Fatal(err)
	}
	_, stored, maxPermits, interval, _ = redistest.BucketFields(t, rdb, name)
	if stored != 3 || maxPermits != 3 || interval != 0.5 {
		t.Errorf("after shrinking: stored %v max %v interval %v, want 3, 3, 0.5", stored, maxPermits, interval)
	}
}

func TestTokenBucketCorruptCountsAsError(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	for i, bad := range []string{"abc", "0", "-2", "nan", "inf"} {
		rdb.HSet(ctx, name, "last_mill_second", redistest.NowMS(t, rdb), "stored_permits", 1,
			"max_permits", 5, "interval", bad, "app", "x")
		if _, err := b.TryAcquire(ctx, 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("interval %q: Acquire = %v, want ErrCorrupt", bad, err)
		}
		if got := redistest.StatsTotal(t, rdb, wire.StatsKey(name)); got != (redistest.Outcomes{Errors: int64(i + 1)}) {
			t.Errorf("interval %q: stats %+v, want %d errors", bad, got, i+1)
		}
	}
	// A modify repairs the bucket.
	if err := b.Modify(ctx, 5, 1000); err != nil {
		t.Fatal(err)
	}
	if res, err := b.TryAcquire(ctx, 1); err != nil || !res.Allowed {
		t.Errorf("Acquire after repairing Modify = %+v, %v", res, err)
	}
}

func TestTokenBucketStats(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 4, IntervalMS: 3600e3, Initial: 4}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		res, err := b.TryAcquire(ctx, 1)
		if err != nil || res.Allowed != (i < 4) {
			t.Fatalf("Acquire #%d = %+v, %v", i+1, res, err)
		}
	}
	if _, err := b.TryAcquire(ctx, 5); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Acquire(5) of capacity 4 = %v, want a validation error", err)
	}
	if got, want := redistest.StatsTotal(t, rdb, wire.StatsKey(name)), (redistest.Outcomes{Acquired: 4, Rejected: 3, Errors: 1}); got != want {
		t.Errorf("stats ring = %+v, want %+v", got, want)
	}
	if ttl := rdb.PTTL(ctx, wire.StatsKey(name)).Val(); ttl <= 0 || ttl > wire.StatsTTLMS*time.Millisecond {
		t.Errorf("stats PTTL = %v, want 0..%dms", ttl, wire.StatsTTLMS)
	}
}

// TestTokenBucketAdmissionBound hammers a bucket from several goroutines and
// checks, on Redis time, that no window admits more than the capacity plus
// the refill of its length, and that the whole run admits the configured
// rate. The fractional interval makes the client script's refill (last = now) admit
// only 2.5/3 of the rate, which the lower bound would catch.
func TestTokenBucketAdmissionBound(t *testing.T) {
	c, _, name := tbNewBucket(t)
	ctx := context.Background()
	const capacity, interval = 50, 2.5
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: capacity, IntervalMS: interval, Initial: capacity}); err != nil {
		t.Fatal(err)
	}
	// A full bucket must not bank this time for a burst later.
	time.Sleep(200 * time.Millisecond)

	var (
		mu        sync.Mutex
		admitted  []int64 // Redis ms of each success
		decided   []int64 // Redis ms of every decision
		runErr    error
		wg        sync.WaitGroup
		stopAfter = time.Now().Add(1500 * time.Millisecond)
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000 && time.Now().Before(stopAfter); i++ {
				res, err := b.TryAcquire(ctx, 1)
				mu.Lock()
				if err != nil {
					runErr = err
					mu.Unlock()
					return
				}
				ms := res.At.UnixMilli()
				decided = append(decided, ms)
				if res.Allowed {
					admitted = append(admitted, ms)
				}
				mu.Unlock()
				if !res.Allowed {
					time.Sleep(min(res.RetryAfter, 5*time.Millisecond))
				}
			}
		}()
	}
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	// Any window [t_i, t_j] may hold what was stored at t_i (<= capacity),
	// the refills up to t_j, plus one interval's remainder carried into it.
	for i := 0; i < len(admitted); {
		for j := i; j < len(admitted); j++ {
			if j+1 < len(admitted) && admitted[j+1] == admitted[j] {
				continue
			}
			span := float64(admitted[j] - admitted[i])
			if n := j - i + 1; float64(n) > capacity+math.Floor(span/interval)+1 {
				t.Fatalf("%d admitted in %v ms [%d, %d], bound %v", n, span, admitted[i], admitted[j],
					capacity+math.Floor(span/interval)+1)
			}
		}
		k := i
		for k < len(admitted) && admitted[k] == admitted[i] {
			k++
		}
		i = k
	}
	// The lower bound: replaying every decision's Redis time through the
	// bucket's rule (tokenbucket_acquire.lua: whole intervals refill, a
	// full bucket does not bank time) must admit exactly as many. The
	// decisions' times come from Redis, so how the goroutines were
	// scheduled changes the times, never the count the rule gives them.
	sort.Slice(decided, func(i, j int) bool { return decided[i] < decided[j] })
	if len(decided) == 0 {
		t.Fatal("no decisions were made")
	}
	want := replayBucket(decided, capacity, interval)
	if len(admitted) != want {
		t.Fatalf("admitted %d of %d decisions over %d ms; the bucket's rule admits %d at those times",
			len(admitted), len(decided), decided[len(decided)-1]-decided[0], want)
	}
	t.Logf("admitted %d of %d decisions over %d ms, as the rule does", len(admitted), len(decided), decided[len(decided)-1]-decided[0])
}

// replayBucket runs the token bucket's rule over decisions (Redis ms, in
// order), each asking for one permit of a bucket that is full at the
// first, and returns how many it admits.
func replayBucket(decided []int64, capacity, interval float64) int {
	stored, last := capacity, float64(decided[0])
	n := 0
	for _, ms := range decided {
		now := float64(ms)
		if elapsed := now - last; elapsed > 0 {
			k := math.Floor(elapsed / interval)
			if stored+k >= capacity {
				stored, last = capacity, now
			} else if k > 0 {
				stored, last = stored+k, last+k*interval
			}
		}
		if stored >= 1 {
			stored--
			n++
		}
	}
	return n
}

func TestTokenBucketAcquireWaits(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 1, IntervalMS: 300}); err != nil {
		t.Fatal(err)
	}
	created, _, _, _, _ := redistest.BucketFields(t, rdb, name)
	res, err := b.TryAcquire(ctx, 1)
	if err != nil || res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > 300*time.Millisecond {
		t.Fatalf("first Acquire of an empty bucket = %+v, %v; want a rejection with a retry within 300ms", res, err)
	}
	start := time.Now()
	res, err = b.Acquire(wctx(t, ctx, 5*time.Second), 1)
	if err != nil || !res.Allowed {
		t.Fatalf("TryAcquire = %+v, %v; want the permit that arrives 300ms after creation", res, err)
	}
	if at := float64(res.At.UnixMilli()); at < created+300 {
		t.Errorf("admitted at %v, before the permit existed at %v", at, created+300)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("TryAcquire took %v", d)
	}
}

func TestTokenBucketAcquireGivesUp(t *testing.T) {
	c, _, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 1, IntervalMS: 60000}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := b.Acquire(wctx(t, ctx, 300*time.Millisecond), 1)
	if !errors.Is(err, ErrRateLimited) || !errors.Is(err, context.DeadlineExceeded) || res.Allowed || res.RetryAfter < 300*time.Millisecond {
		t.Errorf("Acquire with a permit a minute away = %+v, %v; want not allowed, ErrRateLimited", res, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("TryAcquire took %v for a 300ms timeout", d)
	}

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := b.Modify(ctx, 1, 1000); err != nil {
		t.Fatal(err)
	}
	_, _ = b.TryAcquire(ctx, 1) // empty it, whatever the refill
	if _, err := b.Acquire(cctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryAcquire after ctx ended = %v, want context.DeadlineExceeded", err)
	}
}

func TestTokenBucketValidationSendsNothing(t *testing.T) {
	// Nothing listens on port 1: any command would fail with a dial error.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { dead.Close() })
	c := New(dead, nil)
	ctx := context.Background()
	b := c.NewTokenBucket("ratelimit:v", nil)
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		field string
		call  func() error
	}{
		{"name", func() error { _, err := c.NewTokenBucket("", nil).TryAcquire(ctx, 1); return err }},
		{"permits", func() error { _, err := b.TryAcquire(ctx, 0); return err }},
		{"permits", func() error { _, err := b.Acquire(ctx, -1); return err }},
		{"rate", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 0, IntervalMS: 2}) }},
		{"interval_ms", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 0}) }},
		{"interval_ms", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: nan}) }},
		{"interval_ms", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: inf}) }},
		{"initial", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 2, Initial: -1}) }},
		{"initial", func() error { return b.Init(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 2, Initial: 6}) }},
		{"rate", func() error { return b.Modify(ctx, -3, 2) }},
		{"interval_ms", func() error { return b.Modify(ctx, 5, -1) }},
	}
	for i, tc := range cases {
		var ve *ValidationError
		err := tc.call()
		if !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: error %v, want a *ValidationError for %q", i, err, tc.field)
		}
	}
}

func TestTokenBucketPermitsAboveCapacity(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	if err := b.Init(ctx, TokenBucketConfig{Capacity: 3, IntervalMS: 60000, Initial: 3}); err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if _, err := b.TryAcquire(ctx, 4); !errors.As(err, &ve) || ve.Field != "permits" {
		t.Errorf("Acquire(4) of capacity 3 = %v, want a *ValidationError for permits", err)
	}
	if _, stored, _, _, _ := redistest.BucketFields(t, rdb, name); stored != 3 {
		t.Errorf("a rejected argument changed stored_permits to %v", stored)
	}
}

func TestTokenBucketLimitString(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want string
	}{
		{Limit{500, 2}, "500 per 1s (1 per 2ms)"},
		{Limit{10, 0.5}, "10 per 5ms (1 per 500µs)"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.l, got, tc.want)
		}
	}
	if got := (Limit{500, 2}).PerSecond(); got != 500 {
		t.Errorf("PerSecond = %v, want 500", got)
	}
}

// wctx bounds an Acquire's wait.
func wctx(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// The interval comes back as the number the script reads, whatever its
// spelling: a whole one as an integer, a plain decimal fraction as its
// text, any other spelling formatted by the script.
func TestTokenBucketIntervalAnySpelling(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	b := c.NewTokenBucket(name, nil)
	for _, tc := range []struct {
		stored string
		want   float64
	}{
		{"2", 2}, {"2.000", 2}, {" 3", 3}, {"0x10", 16}, {"1e3", 1000}, {"2.5", 2.5}, {"0.1", 0.1},
		{"2.5e0", 2.5}, {" 0.25", 0.25}, {"4000000000000000", 4e15}, {"1000000000000000.5", 1000000000000000.5},
	} {
		rdb.HSet(ctx, name, "last_mill_second", redistest.NowMS(t, rdb), "stored_permits", 1,
			"max_permits", 5, "interval", tc.stored, "app", "x")
		res, err := b.TryAcquire(ctx, 1)
		if err != nil || !res.Allowed || res.Limit.IntervalMS != tc.want {
			t.Errorf("interval %q: TryAcquire = %+v, %v; want allowed, interval %v", tc.stored, res, err, tc.want)
		}
	}
}
