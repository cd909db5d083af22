package walk

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// samplingCostEnv runs TestSamplingCostIdleObjects: its value is the
// measured window (e.g. "30s"). The test takes a private redis-server and
// most of a minute, so it is off by default.
const samplingCostEnv = "LOCKWARDEN_SAMPLING_COST"

// TestSamplingCostIdleObjects prints what sampling alone costs Redis with
// 10,000 idle Redisson-layout locks and 1,000 idle token buckets: the
// main thread's CPU over the window (net of an idle window of a third of
// its length before it) and INFO commandstats calls. It asserts nothing
// about time: the figure is for the report. LOCKWARDEN_SAMPLING_FILL adds
// that many filler keys (DEBUG POPULATE) so the keyspace is production-sized.
func TestSamplingCostIdleObjects(t *testing.T) {
	window, err := time.ParseDuration(os.Getenv(samplingCostEnv))
	if err != nil || window <= 0 {
		t.Skipf("set %s to a duration (e.g. 30s) to measure sampling cost", samplingCostEnv)
	}
	const nLocks, nBuckets = 10000, 1000
	srv := redistest.StartT(t, "--enable-debug-command", "yes")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	if fill, _ := strconv.Atoi(os.Getenv("LOCKWARDEN_SAMPLING_FILL")); fill > 0 {
		if err := rdb.Do(ctx, "DEBUG", "POPULATE", fill, "fill").Err(); err != nil {
			t.Fatal(err)
		}
	}
	now := redistest.NowMS(t, rdb)
	var locks, lims []string
	pipe := rdb.Pipeline()
	for i := range nLocks {
		name := fmt.Sprintf("idle:lock:%d", i)
		pipe.HSet(ctx, name, fmt.Sprintf("%s:%d", inspecttest.HolderUUID, 40+i%20), 1)
		pipe.PExpire(ctx, name, time.Hour)
		locks = append(locks, name)
	}
	for i := range nBuckets {
		name := fmt.Sprintf("idle:bucket:%d", i)
		pipe.HSet(ctx, name, "last_mill_second", now, "stored_permits", 10, "max_permits", 10,
			"interval", "1000", "app", "measure")
		lims = append(lims, name)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	w, err := New(inspect.New(rdb, nil), "*", &Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	const tick = 200 * time.Millisecond
	for range idleAfter + 2 { // every object read unchanged: now idle
		if _, err := w.Tick(ctx, locks, lims); err != nil {
			t.Fatal(err)
		}
	}
	var usec1 map[string]float64
	cost := func() (redisCost, map[string]int64) {
		info, err := rdb.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		usec := map[string]float64{}
		for line := range strings.SplitSeq(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
				name, fields, _ := strings.Cut(rest, ":")
				usec[name] = statField(fields, "usec=")
			}
		}
		if usec1 == nil {
			usec1 = usec
		} else {
			for name, v := range usec {
				usec1[name] = v - usec1[name]
			}
		}
		return parseRedisCost(info), redistest.CommandCalls(t, rdb)
	}
	idleFor := window / 3
	c0, _ := cost()
	time.Sleep(idleFor)
	c1, calls1 := cost()
	usec1 = nil
	cost()
	next := time.Now()
	for end := next.Add(window); next.Before(end); {
		if _, err := w.Tick(ctx, locks, lims); err != nil {
			t.Fatal(err)
		}
		next = next.Add(tick)
		time.Sleep(time.Until(next))
	}
	c2, calls2 := cost()
	idleShare := (c1.cpuUsec - c0.cpuUsec) / float64(idleFor.Microseconds())
	share := (c2.cpuUsec - c1.cpuUsec) / float64(window.Microseconds())
	var names []string
	var total int64
	for name, n := range calls2 {
		if d := n - calls1[name]; d > 0 && name != "info" {
			names = append(names, fmt.Sprintf("%s %d (%.2f µs each)", strings.ToUpper(name), d, usec1[name]/float64(d)))
			total += d
		}
	}
	sort.Strings(names)
	t.Logf("%d idle locks + %d idle buckets, walk off, %v of ticks every %v (idle every %d ticks):",
		nLocks, nBuckets, window, tick, DefaultIdleEvery)
	t.Logf("Redis main thread: %.2f %% of a core while sampling, %.2f %% idle, %.2f %% net",
		100*share, 100*idleShare, 100*(share-idleShare))
	t.Logf("time in commands (commandstats usec): %.2f %% of a core", 100*(c2.allUsec-c1.allUsec)/float64(window.Microseconds()))
	t.Logf("commands over the window: %d (%s); %.1f per idle object read",
		total, strings.Join(names, ", "), float64(total)/(float64(nLocks+nBuckets)*float64(window/tick)/DefaultIdleEvery))
	t.Logf("status: %+v", w.Status())
}
