package redistest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// NowMS is Redis's own clock in Unix milliseconds, the time every script
// reads with TIME.
func NowMS(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	tm, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

// CommandCalls reads INFO commandstats of the server behind rdb: calls
// per command name, scripts' own calls included.
func CommandCalls(t testing.TB, rdb *redis.Client) map[string]int64 {
	t.Helper()
	txt, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(txt, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, stats, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				out[name], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

// BucketFields reads a token bucket's five fields, the four
// numbers parsed and app as stored; any other field count fails t.
func BucketFields(t testing.TB, rdb redis.UniversalClient, name string) (last, stored, maxPermits, interval float64, app string) {
	t.Helper()
	m, err := rdb.HGetAll(t.Context(), name).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 5 {
		t.Fatalf("bucket %s has fields %v, want exactly the five of the layout", name, m)
	}
	num := func(f string) float64 {
		v, err := strconv.ParseFloat(m[f], 64)
		if err != nil {
			t.Fatalf("field %s = %q is not a number", f, m[f])
		}
		return v
	}
	return num("last_mill_second"), num("stored_permits"), num("max_permits"), num("interval"), m["app"]
}

// Outcomes are the attempts a stats ring recorded, by outcome.
type Outcomes struct {
	Acquired, Rejected, Errors int64
}

// StatsTotal adds up every counter of the stats ring hash at key (fields
// "<a|r|e><bucket>" → count, written by the lock and limiter scripts;
// the wait fields and late-release records beside them are skipped); any
// other field fails t. Tests give each object a fresh name, so the whole
// ring is the test's own attempts however long the test took: a sum over a
// window of recent buckets would lose attempts on a slow machine.
func StatsTotal(t testing.TB, rdb redis.Cmdable, key string) Outcomes {
	t.Helper()
	fields, err := rdb.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum Outcomes
	for k, v := range fields {
		if strings.HasPrefix(k, wire.LateFieldPrefix) {
			continue // a release or renewal after its hold ended (wire.LateField)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(k) < 2 {
			t.Fatalf("stats field %q = %q: not <outcome><bucket> = count", k, v)
		}
		switch k[0] {
		case 'a':
			sum.Acquired += n
		case 'r':
			sum.Rejected += n
		case 'e':
			sum.Errors += n
		case 't', 'm': // a wait's total and max (layout above wire.BucketMS)
		default:
			if !strings.ContainsRune(wire.WaitClassLetters, rune(k[0])) {
				t.Fatalf("stats field %q: unknown outcome", k)
			}
		}
	}
	return sum
}
