package history_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// The goal's scale: 1,000 limiters and 10,000 locks, every limiter busy
// every second and every lock changing holder every sample.
const (
	scaleLimiters = 1000
	scaleLocks    = 10000
	goalBytes     = 16 << 20
)

type scale struct {
	lims, locks []string
	holders     [][]history.Holder // per lock, two holders to alternate
}

func newScale() *scale {
	s := &scale{}
	for i := range scaleLimiters {
		s.lims = append(s.lims, fmt.Sprintf("rl:api:tenant-%04d", i))
	}
	for i := range scaleLocks {
		s.locks = append(s.locks, fmt.Sprintf("lock:orders:%05d", i))
		s.holders = append(s.holders, []history.Holder{holder(2 * i), holder(2*i + 1)})
	}
	return s
}

// sample i: limiter j counted j%50+1 attempts, and every lock is held by
// the other of its two holders, which waited for it.
func (s *scale) sample(at time.Time, i int) history.Sample {
	out := history.Sample{At: at, Limiters: make([]history.LimiterSample, len(s.lims)),
		Locks: make([]history.LockSample, len(s.locks))}
	for j, n := range s.lims {
		out.Limiters[j] = history.LimiterSample{Name: n, Kind: "token-bucket", Acquired: int64(j%50 + 1), Rejected: int64(j % 5)}
	}
	for j, n := range s.locks {
		out.Locks[j] = history.LockSample{Name: n, Kind: "reentrant", PTTL: 30 * time.Second,
			Holders: []history.Holder{s.holders[j][i%2]},
			Wait:    history.WaitSample{Acquired: 1, Contended: 1, TotalMS: 40, MaxMS: 40, Classes: [10]int64{4: 1}}}
	}
	return out
}

func usedMemory(t testing.TB, rdb *redis.Client) int64 {
	return int64(infoSum(t, rdb, "memory", "used_memory"))
}

// infoSum adds up the named fields of one INFO section.
func infoSum(t testing.TB, rdb *redis.Client, section string, fields ...string) float64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if slices.Contains(fields, k) {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", k, v)
			}
			sum += x
		}
	}
	return sum
}

// keysUsage sums MEMORY USAGE over the history's keys (and the writer lock's).
func keysUsage(t testing.TB, rdb *redis.Client) (keys int, bytes int64) {
	t.Helper()
	iter := rdb.Scan(t.Context(), 0, "lw:*", 1000).Iterator()
	for iter.Next(t.Context()) {
		n, err := rdb.MemoryUsage(t.Context(), iter.Val(), 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		keys++
		bytes += n
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys, bytes
}

// With the defaults the history of 1,000 busy limiters and 10,000 busy
// locks stays within 16 MB of Redis memory: rings at full length, every
// kept lock's hold list full and its wait ring written.
func TestMemoryAtGoalScale(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redistest.NewClient(t, srv)
	before := usedMemory(t, rdb)
	s := newScale()
	h := open(t, rdb, nil)
	start := base(t, rdb)
	for i := 1; i <= history.DefaultHoldsPerLock+2; i++ {
		feed(t, []*history.History{h}, s.sample(start.Add(time.Duration(i)*time.Second), i))
	}
	after := usedMemory(t, rdb)
	keys, usage := keysUsage(t, rdb)
	st := h.Stats()
	t.Logf("history at %d limiters, %d locks (defaults, top %d): %d keys, MEMORY USAGE %.2f MB, used_memory +%.2f MB, estimate %.2f MB; kept %d+%d, omitted %d+%d",
		scaleLimiters, scaleLocks, history.DefaultTop, keys, mb(usage), mb(after-before), mb(st.BytesEstimate),
		st.LimitersKept, st.LocksKept, st.LimitersOmitted, st.LocksOmitted)
	if st.LimitersKept != history.DefaultTop || st.LocksKept != history.DefaultTop {
		t.Fatalf("kept %d limiters and %d locks, want the top %d of each", st.LimitersKept, st.LocksKept, history.DefaultTop)
	}
	if after-before > goalBytes || usage > goalBytes {
		t.Fatalf("history uses %d bytes (MEMORY USAGE %d), over the %d goal", after-before, usage, goalBytes)
	}
	if est := st.BytesEstimate; est < usage*8/10 || est > usage*12/10 {
		t.Fatalf("Stats estimate %d bytes, measured %d: more than 20%% apart", est, usage)
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// One flush at the goal's scale: a 10 s step of 1,000 limiters and 10,000
// locks (all changing holder) observed, then written.
func BenchmarkFlush(b *testing.B) {
	srv := redistest.StartT(b)
	rdb := redistest.NewClient(b, srv)
	s := newScale()
	h := open(b, rdb, nil)
	start := base(b, rdb)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * history.FineStep) }
	feed(b, []*history.History{h}, s.sample(at(0), 0)) // the first term's allocations
	calls0 := totalCalls(b, rdb)
	cpu0 := redisCPU(b, rdb)
	var cmds, bytes int64
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		b.StopTimer()
		sample := s.sample(at(i), i)
		b.StartTimer()
		h.Observe(b.Context(), sample)
		if err := h.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		st := h.Stats()
		cmds += int64(st.FlushCommands)
		bytes += st.FlushBytes
	}
	b.StopTimer()
	b.ReportMetric(float64(cmds)/float64(b.N), "cmds/flush")
	b.ReportMetric(float64(bytes)/float64(b.N), "req-bytes/flush")
	b.ReportMetric(float64(totalCalls(b, rdb)-calls0)/float64(b.N), "redis-calls/flush")
	b.ReportMetric((redisCPU(b, rdb)-cpu0)*1e6/float64(b.N), "redis-cpu-µs/flush")
	_, usage := keysUsage(b, rdb)
	b.ReportMetric(mb(usage), "history-MB")
}

// totalCalls is every command Redis ran, scripts' own calls included.
func totalCalls(t testing.TB, rdb *redis.Client) int64 {
	var n int64
	for _, c := range redistest.CommandCalls(t, rdb) {
		n += c
	}
	return n
}

// redisCPU is the server's used_cpu_user + used_cpu_sys, seconds.
func redisCPU(t testing.TB, rdb *redis.Client) float64 {
	return infoSum(t, rdb, "cpu", "used_cpu_user", "used_cpu_sys")
}
