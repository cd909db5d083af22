package inspect

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// kindGrant packs a grant as Redisson 3.17.0 and later do: struct.pack('Bc0I', len,
// id, permits) — a length byte, the id, a native (little-endian) uint32.
func kindGrant(id string, permits uint32) string {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], permits)
	return string([]byte{byte(len(id))}) + id + string(n[:])
}

// Redisson's fixed window (before 3.13.3), built with the commands its trySetRate and
// tryAcquire send, then inspected and edited both ways.
func TestKindRedissonFixedWindow(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "api"
	rdb.HSetNX(ctx, name, "rate", 10)
	rdb.HSetNX(ctx, name, "interval", 60000)
	rdb.HSetNX(ctx, name, "type", 0)
	value := "{" + name + "}:value"
	rdb.Set(ctx, value, 10, 60*time.Second)
	rdb.DecrBy(ctx, value, 3)

	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Limiters) != 1 {
		t.Fatalf("limiters = %+v", d.Limiters)
	}
	l := d.Limiters[0]
	if l.Kind != KindRedissonLimiter || l.Algorithm != AlgorithmFixedWindow || l.Rate != 10 || l.IntervalMS != 60000 ||
		l.Available != 7 || l.Grants != 3 || !l.GrantsKnown || !l.RejectionsHidden || l.ResetIn <= 0 || l.AvailableUnknown {
		t.Fatalf("limiter = %+v", l)
	}
	keep := LimiterEdit{Rate: 20, IntervalMS: 60000, KeepState: true}
	if desc := l.DescribeEdit(keep); !strings.Contains(desc, "3 permits taken") || !strings.Contains(desc, "17 are available") {
		t.Errorf("keep description = %q", desc)
	}
	info, err := c.ModifyLimiterWith(ctx, name, keep)
	if err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, value).Val(); v != "17" || info.Available != 17 || rdb.PTTL(ctx, value).Val() <= 0 {
		t.Fatalf("keep: value %q available %d pttl %v", v, info.Available, rdb.PTTL(ctx, value).Val())
	}
	if cfg := rdb.HGetAll(ctx, name).Val(); cfg["rate"] != "20" || cfg["interval"] != "60000" || cfg["type"] != "0" || len(cfg) != 3 {
		t.Fatalf("config = %v", cfg)
	}
	if !strings.Contains(l.DescribeEdit(LimiterEdit{Rate: 5, IntervalMS: 1000}), "Resets") {
		t.Error("reset description does not say it resets")
	}
	if _, err := c.ModifyLimiter(ctx, name, 5, 1000); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, value).Val() != 0 {
		t.Fatal("reset kept the value key")
	}
	var ve *store.ValidationError
	if _, err := c.ModifyLimiter(ctx, name, 5, 1.5); !errors.As(err, &ve) || ve.Field != "interval_ms" {
		t.Fatalf("fractional Redisson interval = %v", err)
	}

	// The store handle behaves as Redisson before 3.13.3: the window is the value's life.
	h := c.NewRedissonLimiter(name, &store.LimiterOptions{Mode: store.RedissonFixed})
	for i := 0; i < 5; i++ {
		if r, err := h.TryAcquire(ctx, 1); err != nil || !r.Allowed {
			t.Fatalf("acquire %d = %+v, %v", i, r, err)
		}
	}
	r, err := h.TryAcquire(ctx, 1)
	if err != nil || r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > time.Second {
		t.Fatalf("sixth acquire = %+v, %v, want a rejection with the value's PTTL", r, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if r, err := h.Acquire(wctx, 1); !r.Allowed || err != nil {
		t.Fatalf("Acquire over a window = %v, %v", r, err)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 6 || cnt.Rejected < 1 {
		t.Errorf("stats = %+v", cnt)
	}
	if _, err := c.NewRedissonLimiter(p+"none", nil).TryAcquire(ctx, 1); !errors.Is(err, store.ErrNotConfigured) {
		t.Errorf("acquire on no limiter = %v", err)
	}
}

// Redisson's sliding window (3.13.3 and later): grants in a zset; expired grants return.
func TestKindRedissonSlidingWindow(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "sl"
	rdb.HSet(ctx, name, "rate", 10, "interval", 1000, "type", 0)
	now := redistest.NowMS(t, rdb)
	value, permits := "{"+name+"}:value", "{"+name+"}:permits"
	rdb.Set(ctx, value, 10, 0)
	rdb.ZAdd(ctx, permits, redis.Z{Score: float64(now - 5000), Member: kindGrant("aaaaaaaaaaaaaaaa", 4)}) // expired
	rdb.ZAdd(ctx, permits, redis.Z{Score: float64(now - 100), Member: kindGrant("bbbbbbbbbbbbbbbb", 2)})
	rdb.DecrBy(ctx, value, 6)

	l, err := c.GetLimiter(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if l.Algorithm != AlgorithmSlidingWindow || l.Available != 8 || l.Grants != 2 || l.NextFreeIn <= 0 || l.NextFreeIn > time.Second {
		t.Fatalf("limiter = %+v", l)
	}
	if v := rdb.Get(ctx, value).Val(); v != "4" {
		t.Fatalf("reading moved the value to %q", v)
	}
	desc := l.DescribeEdit(LimiterEdit{Rate: 5, IntervalMS: 1000, KeepState: true})
	if !strings.Contains(desc, "5 minus the permits granted") {
		t.Errorf("keep description = %q", desc)
	}
	if _, err := c.ModifyLimiterWith(ctx, name, LimiterEdit{Rate: 5, IntervalMS: 1000, KeepState: true}); err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, value).Val(); v != "3" || rdb.ZCard(ctx, permits).Val() != 1 {
		t.Fatalf("keep: value %q grants %d, want 3 and the live grant only", v, rdb.ZCard(ctx, permits).Val())
	}

	h := c.NewRedissonLimiter(name, nil)
	for i := 0; i < 3; i++ {
		if r, err := h.TryAcquire(ctx, 1); err != nil || !r.Allowed {
			t.Fatalf("acquire %d = %+v, %v", i, r, err)
		}
	}
	r, err := h.TryAcquire(ctx, 1)
	if err != nil || r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > 1100*time.Millisecond {
		t.Fatalf("fourth = %+v, %v", r, err)
	}
	if n := rdb.ZCard(ctx, permits).Val(); n != 4 {
		t.Fatalf("grants = %d, want 4 (ours packed like Redisson's)", n)
	}
	if _, err := h.Acquire(ctx, 1); err != nil { // waits for the oldest grant
		t.Fatal(err)
	}
	if _, err := c.ModifyLimiter(ctx, name, 10, 1000); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, value, permits).Val() != 0 {
		t.Fatal("reset kept state")
	}
	if ok, err := h.TrySetRate(ctx, store.RateOverall, 99, time.Second); ok || err != nil {
		t.Fatalf("TrySetRate on a configured limiter = %v, %v", ok, err)
	}
}

// Hand-written per-IP INCR counters, listed by pattern with the registered limit.
func TestKindCounter(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	ip := p + "ip:127.0.0.1"
	for i := 0; i < 4; i++ {
		if rdb.Incr(ctx, ip).Val() == 1 {
			rdb.Expire(ctx, ip, 10*time.Second)
		}
	}
	rdb.Set(ctx, p+"ip:bad", "not a number", 0)
	rdb.Set(ctx, p+"other", "4", 0)
	if err := c.SetObjectPatterns(ObjectPatterns{Counters: []CounterRule{{Pattern: p + "ip:*", Limit: 3, Window: 10 * time.Second}}}); err != nil {
		t.Fatal(err)
	}
	d, err := discover(ctx, c.Inspector, "*")
	if err != nil {
		t.Fatal(err)
	}
	var got []LimiterInfo
	for _, l := range d.Limiters {
		if strings.HasPrefix(l.Name, p) {
			got = append(got, l)
		}
	}
	if len(got) != 1 || got[0].Kind != KindCounter || got[0].Count != 4 || got[0].Limit != 3 || !got[0].LimitKnown ||
		got[0].TTL <= 0 || got[0].Available != 0 || got[0].Grants != 3 {
		t.Fatalf("counters = %+v", got)
	}
	if _, err := c.ModifyLimiter(ctx, ip, 5, 1000); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ModifyLimiter on a counter = %v, want a validation error", err)
	}
	if err := c.ResetCounter(ctx, p+"ip:bad"); !errors.Is(err, store.ErrWrongKind) || rdb.Exists(ctx, p+"ip:bad").Val() != 1 {
		t.Fatalf("reset of a non-number = %v", err)
	}
	if err := c.ResetCounter(ctx, ip); err != nil || rdb.Exists(ctx, ip).Val() != 0 {
		t.Fatalf("reset = %v", err)
	}
	k := c.NewCounter(ip, &store.LimiterOptions{Limit: 2, Window: time.Minute})
	for i, want := range []bool{true, true, false} {
		h, err := k.TryAcquire(ctx, 1)
		if err != nil || h.Allowed != want || h.Count != int64(i+1) || h.ResetAfter <= 0 {
			t.Fatalf("hit %d = %+v, %v", i, h, err)
		}
	}
}

// The counter speaks the limiter vocabulary: TryAcquire(n) once, Acquire
// waiting for the next window, n above the limit refused before Redis.
func TestKindCounterAcquire(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	k := c.NewCounter(p+"ip:10.1.1.1", &store.LimiterOptions{Limit: 3, Window: 300 * time.Millisecond})
	if r, err := k.TryAcquire(ctx, 2); err != nil || !r.Allowed || r.Count != 2 || r.Remaining != 1 {
		t.Fatalf("2 hits = %v, %v", r, err)
	}
	if r, err := k.TryAcquire(ctx, 2); err != nil || r.Allowed || r.Count != 4 || r.Remaining != 0 || r.RetryAfter <= 0 {
		t.Fatalf("2 more = %+v, %v, want rejected and counted", r, err)
	}
	var ve *store.ValidationError
	if _, err := k.TryAcquire(ctx, 4); !errors.As(err, &ve) || ve.Field != "permits" || rdb.Get(ctx, p+"ip:10.1.1.1").Val() != "4" {
		t.Fatalf("4 hits on a limit of 3 = %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r, err := k.Acquire(wctx, 3); err != nil || !r.Allowed || r.Count != 3 {
		t.Fatalf("Acquire into the next window = %+v, %v", r, err)
	}
	rdb.PExpire(ctx, p+"ip:10.1.1.1", time.Minute) // the window now ends long after the deadline
	short, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if _, err := k.Acquire(short, 1); !errors.Is(err, store.ErrRateLimited) {
		t.Fatalf("Acquire with too short a deadline = %v, want store.ErrRateLimited", err)
	}
}
