package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// One private redis-server for the whole binary, like every store test. A
// copy of the binary started as case 6's websocket clients (see
// wsclients_test.go) or as a case 2 instance (instances_test.go) needs none.
func TestMain(m *testing.M) {
	if os.Getenv(wsHelperEnv) != "" || os.Getenv(instanceEnv) != "" {
		os.Exit(m.Run())
	}
	redistest.Main(m)
}

// env is what every case runs against.
type env struct {
	t    testing.TB
	addr string
	seq  atomic.Int64 // for unique key prefixes across rounds
}

func newEnv(t testing.TB) *env {
	return &env{t: t, addr: redistest.Shared(t).Addr}
}

// prefix returns a fresh key prefix, so rounds never see each other's keys.
func (e *env) prefix(what string) string {
	return "bench:" + what + ":" + strconv.FormatInt(e.seq.Add(1), 10) + ":"
}

// client is a go-redis client with a pool large enough for conc goroutines
// and a hook counting the commands it sends (a pipeline counts each command).
// It stands for one application instance: the case that makes it closes it
// when it ends (the test's cleanup is only the fallback), since its pool
// and its store.Client's heartbeat would otherwise run on through every
// later case.
type countingClient struct {
	*redis.Client
	sent atomic.Int64
	// opts are the store.Options of its store.Client (nil: defaults).
	opts *store.Options

	mu        sync.Mutex
	lw        *store.Client
	closeOnce sync.Once
	closeErr  error
}

func (e *env) client(conc int) *countingClient {
	c := &countingClient{Client: redis.NewClient(&redis.Options{
		Addr: e.addr, PoolSize: conc + 8, MinIdleConns: min(conc, 64),
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
	})}
	c.AddHook(countHook{&c.sent})
	e.t.Cleanup(func() { c.Close() })
	return c
}

// store returns the instance's store.Client, made on first use: one per
// application instance, shared by all its locks and buckets, as an
// application has it.
func (c *countingClient) store() *store.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lw == nil {
		c.lw = store.New(c.Client, c.opts)
	}
	return c.lw
}

// Close ends the instance: its store.Client first (heartbeat goroutine,
// registry record, idle subscription), then its connections. A second
// call returns the first one's result.
func (c *countingClient) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		lw := c.lw
		c.mu.Unlock()
		if lw != nil {
			c.closeErr = lw.Close()
		}
		if err := c.Client.Close(); c.closeErr == nil {
			c.closeErr = err
		}
	})
	return c.closeErr
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// runFor runs work on conc goroutines until d has passed, each goroutine
// counting its operations; it returns operations per second. work gets the
// goroutine index and returns an error to stop early.
func runFor(ctx context.Context, conc int, d time.Duration, work func(ctx context.Context, g int) error) (float64, error) {
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	stopAt := start.Add(d)
	var wg sync.WaitGroup
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: stops at the deadline or the first error.
			for i := 0; ; i++ {
				if i&15 == 0 && time.Now().After(stopAt) {
					return
				}
				if err := work(ctx, g); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err; cancel() })
					}
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds(), firstErr
}

// busy spins for d: time.Sleep(200µs) sleeps about a millisecond here.
func busy(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

// series is one figure measured once per round.
type series []float64

// seriesOf picks one figure from each round's result.
func seriesOf[T any](rs []T, f func(T) float64) series {
	s := make(series, 0, len(rs))
	for _, r := range rs {
		s = append(s, f(r))
	}
	return s
}

func (s series) sorted() []float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	return c
}

func (s series) median() float64 {
	c := s.sorted()
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func (s series) minmax() (float64, float64) {
	c := s.sorted()
	if len(c) == 0 {
		return 0, 0
	}
	return c[0], c[len(c)-1]
}

// ratios returns a/b per round (rounds where b is 0 are left out).
func ratios(a, b series) series {
	var r series
	for i := range a {
		if i < len(b) && b[i] != 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return r
}

// cell formats "median (min–max)" with the given precision.
func cell(s series, prec int) string {
	lo, hi := s.minmax()
	return fmt.Sprintf("%s (%s–%s)", fnum(s.median(), prec), fnum(lo, prec), fnum(hi, prec))
}

func fnum(v float64, prec int) string {
	if prec == 0 && v >= 1e4 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// percentile of durations (p in 0..100), in milliseconds.
func percentileMS(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	c := append([]time.Duration(nil), d...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(float64(len(c)-1) * p / 100)
	return float64(c[i]) / float64(time.Millisecond)
}

// machine describes where the numbers were taken.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d logical CPUs, %s %s/%s", cpu, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
