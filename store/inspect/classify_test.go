package inspect

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

const clsUUID = "3f2a6c1e-8b4d-4e2f-9a1b-0c5d7e9f1a2b"

func TestClassifyLock(t *testing.T) {
	lease := 30 * time.Second
	cases := []struct {
		desc   string
		name   string
		fields map[string]string
		pttl   time.Duration
		want   bool
	}{
		{"redisson holder", "orders", map[string]string{clsUUID + ":1": "1"}, lease, true},
		{"reentered three times", "orders", map[string]string{clsUUID + ":57": "3"}, lease, true},
		{"owner with colons and unicode", "锁", map[string]string{clsUUID + ":worker:7:线程": "2"}, time.Millisecond, true},
		{"upper-case uuid", "x", map[string]string{"3F2A6C1E-8B4D-4E2F-9A1B-0C5D7E9F1A2B:9": "1"}, lease, true},
		{"lockwarden holder with its hold record", "orders", map[string]string{clsUUID + ":ab": "1", wire.HoldField(clsUUID + ":ab"): "100 200"}, lease, true},
		{"hold record with a hand-off mark, waiters queued", "orders",
			map[string]string{clsUUID + ":ab": "2", wire.HoldField(clsUUID + ":ab"): "100 200 g.t", wire.QueuedField: "1"}, lease, true},
		{"queued mark and no holder", "orders", map[string]string{wire.QueuedField: "1"}, lease, false},
		{"hold record of another holder", "orders", map[string]string{clsUUID + ":ab": "1", wire.HoldField(clsUUID + ":cd"): "100 200"}, lease, false},
		{"hold record and no holder", "orders", map[string]string{wire.HoldField(clsUUID + ":ab"): "100 200"}, lease, false},

		{"no ttl (application counter)", "orders", map[string]string{clsUUID + ":1": "1"}, -1, false},
		{"missing key pttl", "orders", map[string]string{clsUUID + ":1": "1"}, -2, false},
		{"zero pttl", "orders", map[string]string{clsUUID + ":1": "1"}, 0, false},
		{"empty owner", "orders", map[string]string{clsUUID + ":": "1"}, lease, false},
		{"no owner part", "orders", map[string]string{clsUUID: "1"}, lease, false},
		{"colon field not uuid", "cart", map[string]string{"user:42": "3"}, lease, false},
		{"uuid without dashes", "c", map[string]string{"3f2a6c1e8b4d4e2f9a1b0c5d7e9f1a2b0000:1": "1"}, lease, false},
		{"dash in wrong place", "c", map[string]string{"3f2a6c1-e8b4d-4e2f-9a1b-0c5d7e9f1a2b:1": "1"}, lease, false},
		{"non-hex in uuid", "c", map[string]string{"3f2a6c1e-8b4d-4e2f-9a1b-0c5d7e9f1a2g:1": "1"}, lease, false},
		{"zero count", "c", map[string]string{clsUUID + ":1": "0"}, lease, false},
		{"negative count", "c", map[string]string{clsUUID + ":1": "-1"}, lease, false},
		{"count with plus", "c", map[string]string{clsUUID + ":1": "+1"}, lease, false},
		{"count with leading zero", "c", map[string]string{clsUUID + ":1": "01"}, lease, false},
		{"fractional count", "c", map[string]string{clsUUID + ":1": "1.0"}, lease, false},
		{"text value", "c", map[string]string{clsUUID + ":1": "yes"}, lease, false},
		{"two holders", "c", map[string]string{clsUUID + ":1": "1", clsUUID + ":2": "1"}, lease, false},
		{"holder plus mode (rwlock, not this kind)", "c", map[string]string{clsUUID + ":1": "1", "mode": "read"}, lease, false},
		{"empty hash", "c", map[string]string{}, lease, false},
		{"internal stats key", wire.StatsKey("orders"), map[string]string{clsUUID + ":1": "1"}, lease, false},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := parseLock(tc.name, tc.fields, tc.pttl)
			if ok != tc.want {
				t.Fatalf("parseLock(%q, %v, %v) ok = %v, want %v", tc.name, tc.fields, tc.pttl, ok, tc.want)
			}
			// classifyLock may find another kind (here a read-write lock).
			if other, ok2 := classifyLock(tc.name, tc.fields, tc.pttl); ok2 != ok && other.Kind == KindReentrant {
				t.Errorf("classifyLock disagrees with parseLock: %v vs %v", ok2, ok)
			}
			if !ok {
				return
			}
			if got.Name != tc.name || got.Kind != KindReentrant || got.PTTL != tc.pttl || len(got.Holders) != 1 {
				t.Fatalf("parseLock = %+v", got)
			}
			for f, v := range tc.fields {
				if wire.IsLockwardenField(f) {
					continue
				}
				if got.Holders[0].ID != f || v != clsItoa(got.Holders[0].Count) {
					t.Errorf("holder = %+v, want %s=%s", got.Holders[0], f, v)
				}
			}
			// The hold record, when there is one, is the holder's times.
			if _, ok := tc.fields[wire.HoldField(got.Holders[0].ID)]; ok && (got.Holders[0].AcquiredMS != 100 || got.Holders[0].RenewedMS != 200) {
				t.Errorf("holder %+v, want acquired 100 and renewed 200 from its hold record", got.Holders[0])
			}
		})
	}
}

func clsItoa(n int64) string { return strconv.FormatInt(n, 10) }

func clsBucketFields(last, stored, max, interval, app string) map[string]string {
	return map[string]string{
		"last_mill_second": last, "stored_permits": stored, "max_permits": max,
		"interval": interval, "app": app,
	}
}

func TestClassifyTokenBucket(t *testing.T) {
	const now = int64(1_700_000_000_000)
	last := clsItoa(now - 10) // 10 ms ago
	cases := []struct {
		desc      string
		fields    map[string]string
		nowMS     int64
		want      bool
		rate      int64
		interval  float64
		perSecond float64
		available int64
	}{
		{"client-script bucket, 5 refills capped", clsBucketFields(last, "498", "500", "2.0", "ratelimit:test"), now, true, 500, 2, 500, 500},
		{"refill not yet capped", clsBucketFields(last, "100", "500", "2", "x"), now, true, 500, 2, 500, 105},
		{"partial interval adds nothing", clsBucketFields(last, "3", "10", "4", "x"), now, true, 10, 4, 250, 5},
		{"clock behind last refill", clsBucketFields(clsItoa(now+1000), "7", "10", "100", "x"), now, true, 10, 100, 10, 7},
		{"empty bucket long idle", clsBucketFields("0", "0", "20", "1000", "a"), now, true, 20, 1000, 1, 20},
		{"fractional stored floors", clsBucketFields(clsItoa(now), "2.7", "10", "1000", "a"), now, true, 10, 1000, 1, 2},
		{"negative stored reads as zero", clsBucketFields(clsItoa(now), "-3", "10", "1000", "a"), now, true, 10, 1000, 1, 0},
		{"exponent notation", clsBucketFields(clsItoa(now), "0", "1e3", "0.5", "a"), now, true, 1000, 0.5, 2000, 0},

		{"max below one", clsBucketFields(last, "0", "0", "2", "x"), now, false, 0, 0, 0, 0},
		{"zero interval", clsBucketFields(last, "0", "10", "0", "x"), now, false, 0, 0, 0, 0},
		{"negative interval", clsBucketFields(last, "0", "10", "-1", "x"), now, false, 0, 0, 0, 0},
		{"empty app", clsBucketFields(last, "0", "10", "2", ""), now, false, 0, 0, 0, 0},
		{"text stored", clsBucketFields(last, "lots", "10", "2", "x"), now, false, 0, 0, 0, 0},
		{"NaN interval", clsBucketFields(last, "0", "10", "NaN", "x"), now, false, 0, 0, 0, 0},
		{"inf max", clsBucketFields(last, "0", "Inf", "2", "x"), now, false, 0, 0, 0, 0},
		{"hex max", clsBucketFields(last, "0", "0x10", "2", "x"), now, false, 0, 0, 0, 0},
		{"blank last", clsBucketFields("", "0", "10", "2", "x"), now, false, 0, 0, 0, 0},
		{"padded number", clsBucketFields(last, " 1", "10", "2", "x"), now, false, 0, 0, 0, 0},
		{"four fields", map[string]string{"last_mill_second": last, "stored_permits": "1", "max_permits": "10", "interval": "2"}, now, false, 0, 0, 0, 0},
		{"six fields", func() map[string]string {
			f := clsBucketFields(last, "1", "10", "2", "x")
			f["owner"] = "me"
			return f
		}(), now, false, 0, 0, 0, 0},
		{"five other fields", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, now, false, 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := parseTokenBucket("rl", tc.fields, tc.nowMS)
			if ok != tc.want {
				t.Fatalf("parseTokenBucket(%v) ok = %v, want %v (%+v)", tc.fields, ok, tc.want, got)
			}
			if _, ok2 := classifyLimiter("rl", tc.fields, tc.nowMS); ok2 != ok {
				t.Errorf("classifyLimiter disagrees with parseTokenBucket")
			}
			if !ok {
				return
			}
			if got.Name != "rl" || got.Kind != KindTokenBucket || got.App != tc.fields["app"] {
				t.Errorf("identity = %+v", got)
			}
			if got.Rate != tc.rate || got.IntervalMS != tc.interval || math.Abs(got.PerSecond-tc.perSecond) > 1e-9 || got.Available != tc.available {
				t.Errorf("got rate=%d interval=%v perSecond=%v available=%d, want %d %v %v %d",
					got.Rate, got.IntervalMS, got.PerSecond, got.Available, tc.rate, tc.interval, tc.perSecond, tc.available)
			}
		})
	}
}

// A hash is one kind or none: a bucket is never a lock and the reverse.
func TestClassifyKindsExclusive(t *testing.T) {
	bucket := clsBucketFields("0", "1", "10", "2", "x")
	if _, ok := parseLock("b", bucket, time.Minute); ok {
		t.Error("a token bucket classified as a lock")
	}
	if _, ok := parseTokenBucket("l", map[string]string{clsUUID + ":1": "1"}, 0); ok {
		t.Error("a lock classified as a token bucket")
	}
	if _, ok := parseTokenBucket(wire.StatsKey("b"), bucket, 0); ok {
		t.Error("an internal key classified as a token bucket")
	}
}

func TestClassifyHugeNumbersDoNotOverflow(t *testing.T) {
	got, ok := parseTokenBucket("rl", clsBucketFields("0", "1e300", "1e300", "1", "x"), 1)
	if !ok || got.Rate != math.MaxInt64 || got.Available != math.MaxInt64 {
		t.Fatalf("got %+v ok=%v, want Rate and Available clamped to MaxInt64", got, ok)
	}
	// An interval so small that 1000/interval overflows: the rate per
	// second is the largest finite number, so the limiter still encodes as
	// JSON (+Inf made every list that held it a 500).
	got, ok = parseTokenBucket("rl", clsBucketFields("0", "1", "10", "1e-310", "x"), 1)
	if _, err := json.Marshal(got); !ok || got.PerSecond != math.MaxFloat64 || err != nil {
		t.Fatalf("got %+v ok=%v (JSON: %v), want PerSecond clamped to MaxFloat64", got, ok, err)
	}
}
