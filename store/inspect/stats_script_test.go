package inspect

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// statsRecordBlock returns the record function of a script: from
// "local function record(outcome)" to the first unindented "end".
func statsRecordBlock(src string) (string, bool) {
	i := strings.Index(src, "local function record(outcome)")
	if i < 0 {
		return "", false
	}
	j := strings.Index(src[i:], "\nend\n")
	if j < 0 {
		return "", false
	}
	return src[i : i+j+4], true
}

// statsRecordAt runs the scripts' record function with now (ms) passed in,
// so a test controls the clock; it returns HLEN after the call.
func statsRecordAt(t *testing.T) *redis.Script {
	t.Helper()
	block, ok := statsRecordBlock(luascripts.Source("tokenbucket_acquire"))
	if !ok {
		t.Fatal("no record function in tokenbucket_acquire")
	}
	return redis.NewScript("local stats, now = KEYS[1], tonumber(ARGV[1])\n" + block +
		"\nrecord(ARGV[2])\nreturn redis.call('HLEN', stats)\n")
}

// scratchStatsKey is the stats hash of a test's object, deleted at its end.
func scratchStatsKey(t *testing.T, object string) (*redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	key := wire.StatsKey(redistest.Prefix(t) + object)
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	return rdb, key
}

// A hash written by the scripts' own record function in real Redis reads
// back to the right window, across many buckets.
func TestStatsRingFromRedis(t *testing.T) {
	ctx := context.Background()
	rdb, key := scratchStatsKey(t, "limiter")
	script := statsRecordAt(t)

	const base = int64(1_700_000_000_000) // bucket 8_500_000_000
	record := func(ms int64, outcome string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := script.Run(ctx, rdb, []string{key}, ms, outcome).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(base, "a", 9)
	record(base+BucketMS*3, "r", 9)
	for k := int64(16); k <= 21; k++ {
		record(base+BucketMS*k+57, "a", int(k))
		record(base+BucketMS*k+199, "r", 1)
	}
	record(base+BucketMS*21+10, "e", 2)

	fields, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	now := BucketOf(time.UnixMilli(base)) + 21
	got := summarizeFields(fields, now)
	want := Summary{
		Bucket: now,
		Window: Counts{Acquired: 16 + 17 + 18 + 19 + 20, Rejected: 5},
		Newest: Counts{Acquired: 21, Rejected: 1, Errors: 2},
	}
	if !sameWindows(got, want) {
		t.Fatalf("summary = %+v, want %+v\nfields %v", got, want, fields)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > StatsTTLMS*time.Millisecond {
		t.Errorf("stats PTTL = %v, want (0, %dms]", ttl, StatsTTLMS)
	}
}

// Memory stays bounded whatever the traffic: dense (every outcome in every
// bucket), sporadic (one write every 3 s keeps the hash alive while its
// fields age), and a mix; and the clean-up never loses a count of the
// StatsRing newest buckets.
func TestStatsFieldsBounded(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	script := statsRecordAt(t)
	const base = int64(1_700_000_000_000)
	patterns := map[string]func(i int) (bucketStep int64, outcome string){
		"dense":    func(i int) (int64, string) { return int64(i / 3), string("are"[i%3]) },
		"sporadic": func(i int) (int64, string) { return int64(i) * 15, "a" },
		"mixed": func(i int) (int64, string) {
			return int64(i) * int64(1+i%4), string("are"[(i/2)%3])
		},
	}
	for name, pattern := range patterns {
		t.Run(name, func(t *testing.T) {
			key := wire.StatsKey(redistest.Prefix(t) + "obj")
			t.Cleanup(func() { rdb.Del(context.Background(), key) })
			want := map[int64]Counts{}
			rng := rand.New(rand.NewSource(7))
			var last int64
			for i := 0; i < 600; i++ {
				step, outcome := pattern(i)
				bucket := BucketOf(time.UnixMilli(base)) + step
				ms := bucket*BucketMS + int64(rng.Intn(BucketMS))
				n, err := script.Run(ctx, rdb, []string{key}, ms, outcome).Int64()
				if err != nil {
					t.Fatal(err)
				}
				if n > StatsMaxFields {
					t.Fatalf("write %d: %d fields, want at most %d", i, n, StatsMaxFields)
				}
				c := want[bucket]
				switch outcome {
				case "a":
					c.Acquired++
				case "r":
					c.Rejected++
				case "e":
					c.Errors++
				}
				want[bucket] = c
				last = bucket
			}
			got := ReadStatsRing(rdb.HGetAll(ctx, key).Val())
			for b := last - StatsRing + 1; b <= last; b++ {
				if got[b] != want[b] {
					t.Errorf("bucket %d = %+v, want %+v", b, got[b], want[b])
				}
			}
		})
	}
}

// The hot path is one HINCRBY: a count that is not the first of its field
// in the bucket sends nothing else. A private server, so that nothing else
// moves its command counters.
func TestStatsOneCommandPerCount(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	script := statsRecordAt(t)
	key := wire.StatsKey("obj")
	ms := int64(1_700_000_000_000)
	if err := script.Run(ctx, rdb, []string{key}, ms, "a").Err(); err != nil {
		t.Fatal(err)
	}
	before := redistest.CommandCalls(t, rdb)
	for i := 0; i < 100; i++ {
		if err := script.Run(ctx, rdb, []string{key}, ms+int64(i%BucketMS), "a").Err(); err != nil {
			t.Fatal(err)
		}
	}
	after := redistest.CommandCalls(t, rdb)
	// The test script adds one HLEN per call of its own.
	for cmd, want := range map[string]int64{"hincrby": 100, "pexpire": 0, "hkeys": 0, "hdel": 0, "hlen": 100} {
		if got := after[cmd] - before[cmd]; got != want {
			t.Errorf("%s ran %d times for 100 counts, want %d", cmd, got, want)
		}
	}
}
