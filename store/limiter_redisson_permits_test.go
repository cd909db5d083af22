package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// redissonLayouts are the grant layouts of each Redisson version with
// sliding windows, and the mode emulating it.
var redissonLayouts = []struct {
	format string
	mode   RedissonMode
}{
	{wire.RedissonPermitFI, RedissonSliding3133},
	{wire.RedissonPermitLc0I, RedissonSliding3164},
	{wire.RedissonPermitBc0I, RedissonSliding},
}

// packGrant has Redis's own struct.pack build a member the way the Redisson
// version with that format does: "fI" packs a random long as a float,
// "Lc0I" and "Bc0I" the length and bytes of 8 random bytes.
func packGrant(t *testing.T, rdb *redis.Client, format string, permits uint32) string {
	t.Helper()
	const src = `if ARGV[1] == 'fI' then
  return struct.pack('fI', tonumber(ARGV[2]), tonumber(ARGV[4]))
end
return struct.pack(ARGV[1], string.len(ARGV[3]), ARGV[3], tonumber(ARGV[4]))`
	m, err := rdb.Eval(t.Context(), src, nil, format, "7311893545683254129", "\x8a\x01rnd\x00\xffz", permits).Text()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRedissonModeForVersion(t *testing.T) {
	for v, want := range map[string]RedissonMode{
		"3.10.7": RedissonFixed, "3.13.2": RedissonFixed, "3.13.3": RedissonSliding3133,
		"3.16.3": RedissonSliding3133, "3.16.4": RedissonSliding3164, "3.17.0": RedissonSliding,
		"3.33.0": RedissonSliding, "3.34.1": RedissonSliding, "4.0": RedissonSliding,
	} {
		if got, err := RedissonModeFor(v); err != nil || got != want {
			t.Errorf("RedissonModeFor(%q) = %v, %v, want %v", v, got, err, want)
		}
	}
	if _, err := RedissonModeFor("latest"); !errors.Is(err, ErrInvalid) {
		t.Errorf("RedissonModeFor(latest) = %v", err)
	}
}

// redissonWindow writes a sliding-window limiter of rate 10 per second with
// an expired grant of 3 and a live grant of 4 (value 3), members in format.
func redissonWindow(t *testing.T, ctx context.Context, rdb *redis.Client, name, format string) (value, permits string) {
	t.Helper()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := float64(now.UnixMilli())
	value, permits = wire.RedissonValueKey(name, ""), wire.RedissonPermitsKey(name, "")
	rdb.HSet(ctx, name, "rate", 10, "interval", 1000, "type", 0)
	rdb.Set(ctx, value, 3, 0)
	rdb.ZAdd(ctx, permits,
		redis.Z{Score: ms - 5000, Member: packGrant(t, rdb, format, 3)},
		redis.Z{Score: ms - 100, Member: packGrant(t, rdb, format, 4)})
	return value, permits
}

// Before: the acquire script read every member as "Bc0I", so "fI" members
// failed the script and "Lc0I" ones were read as hundreds of millions of
// permits, leaving the window rejecting everything.
func TestRedissonAcquireReadsEveryLayout(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	for _, l := range redissonLayouts {
		name := p + "layout-" + l.format
		value, permits := redissonWindow(t, ctx, rdb, name, l.format)
		r, err := c.NewRedissonLimiter(name, &LimiterOptions{Mode: l.mode}).TryAcquire(ctx, 1)
		if err != nil || !r.Allowed || r.Remaining != 5 {
			t.Errorf("%s: acquire = %v, %v, want allowed with 5 left (3 returned from the expired grant)", l.format, r, err)
			continue
		}
		if v := rdb.Get(ctx, value).Val(); v != "5" {
			t.Errorf("%s: value %q, want 5", l.format, v)
		}
		// The grant written is in the mode's layout, as Redisson reads it.
		members := rdb.ZRange(ctx, permits, 0, -1).Val()
		if len(members) != 2 {
			t.Fatalf("%s: %d grants, want 2", l.format, len(members))
		}
		for _, m := range members {
			n, err := rdb.Eval(ctx, "local _, n = struct.unpack(ARGV[1], ARGV[2]); return n", nil, l.format, m).Int64()
			if err != nil || (n != 1 && n != 4) {
				t.Errorf("%s: Redisson's unpack of our window reads %d, %v", l.format, n, err)
			}
		}
	}
}

// Before: the console's state read decoded only "Bc0I", so an expired "fI"
// grant was skipped and an "Lc0I" one counted as 959,924,552-like values.
func TestRedissonStateReadsEveryLayout(t *testing.T) {
	ctx, _, rdb, p := handleSetup(t)
	state := redis.NewScript(luascripts.Source("redisson_limiter_state"))
	for _, l := range redissonLayouts {
		name := p + "state-" + l.format
		value, permits := redissonWindow(t, ctx, rdb, name, l.format)
		res, err := state.Run(ctx, rdb, []string{name, value, permits}, 100).Int64Slice()
		if err != nil {
			t.Fatalf("%s: %v", l.format, err)
		}
		if res[1] != 6 || res[4] != 4 {
			t.Errorf("%s: state value %d used %d, want 6 and 4", l.format, res[1], res[4])
		}
	}
}

// Before: keep-state SetRate decoded only "Bc0I" (a script error on "fI").
func TestRedissonKeepStateReadsEveryLayout(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	for _, l := range redissonLayouts {
		name := p + "keep-" + l.format
		value, _ := redissonWindow(t, ctx, rdb, name, l.format)
		h := c.NewRedissonLimiter(name, &LimiterOptions{Mode: l.mode})
		if err := h.SetRate(ctx, RateOverall, 6, time.Second, true); err != nil {
			t.Fatalf("%s: %v", l.format, err)
		}
		if v := rdb.Get(ctx, value).Val(); v != "2" {
			t.Errorf("%s: value after keep %q, want 2 (6 minus the live grant of 4)", l.format, v)
		}
	}
}

// Before: SetRate passed only the new type's keys, so the old type's value
// and grants stayed behind, orphaned.
func TestRedissonSetRateTypeChangeRemovesOldState(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "retype"
	h := c.NewRedissonLimiter(name, &LimiterOptions{ClientID: "me"})
	overall := []string{wire.RedissonValueKey(name, ""), wire.RedissonPermitsKey(name, "")}
	mine := []string{wire.RedissonValueKey(name, "me"), wire.RedissonPermitsKey(name, "me")}
	if err := h.SetRate(ctx, RateOverall, 5, time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.TryAcquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, overall...).Val(); n != 2 {
		t.Fatalf("overall state keys = %d, want 2", n)
	}
	if err := h.SetRate(ctx, RatePerClient, 5, time.Minute, true); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, overall...).Val(); n != 0 {
		t.Fatalf("overall -> per client left %d overall keys", n)
	}
	if _, err := h.TryAcquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Same type, keep: the per-client window stays.
	if err := h.SetRate(ctx, RatePerClient, 4, time.Minute, true); err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, mine[0]).Val(); v != "2" {
		t.Fatalf("keep within the type: value %q, want 2", v)
	}
	if err := h.SetRate(ctx, RateOverall, 5, time.Minute, true); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, mine...).Val(); n != 0 {
		t.Fatalf("per client -> overall left %d of this client's keys", n)
	}
}

// Before: a fixed-window handle on a limiter a sliding-window Redisson keeps
// (value key without expiry) waited an interval and tried again forever.
func TestRedissonFixedModeRefusesSlidingState(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fixed-on-sliding"
	value, _ := redissonWindow(t, ctx, rdb, name, wire.RedissonPermitBc0I)
	rdb.Set(ctx, value, 0, 0)
	h := c.NewRedissonLimiter(name, &LimiterOptions{Mode: RedissonFixed})
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := h.Acquire(wctx, 1); !errors.Is(err, ErrRedissonMode) {
		t.Fatalf("fixed-window Acquire on sliding state = %v, want ErrRedissonMode", err)
	}
	if v := rdb.Get(ctx, value).Val(); v != "0" {
		t.Fatalf("value changed to %q", v)
	}
}
