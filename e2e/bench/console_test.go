package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web"
	"github.com/lockwarden/lockwarden/web/feed"
	"github.com/lockwarden/lockwarden/web/history"
)

// The console cases (5-8) run the real web.Server on its own go-redis
// client. A hook on that client sees every command the console sends, so
// its Redis work is counted exactly, apart from whatever applications do.

// consoleRig is one running console.
type consoleRig struct {
	srv  *web.Server
	rdb  *redis.Client
	hook *rtHook
	ws   string // ws://127.0.0.1:port/ws
}

type consoleOpts struct {
	match string
	// discoverEvery is the discovery pass duration; 0 keeps the console's
	// default (a paced 60 s pass). An hour means: a walk so slow that it
	// is all but off.
	discoverEvery time.Duration
	maxWS         int // 0: the console's default cap
	// keyEvents is the console's --keyspace-events ("" is auto).
	keyEvents walk.KeyEventsMode
}

func startConsole(ctx context.Context, addr string, o consoleOpts) (*consoleRig, error) {
	h := &rtHook{}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	rdb.AddHook(h)
	// Every viewer of a benchmark connects from loopback: one address may
	// hold as many as the console admits in all, and as many connections
	// (one address's share of MaxConns is a 16th, web/connlimit).
	perSource := cmp.Or(o.maxWS, feed.DefaultMaxClients)
	srv := web.New(web.Config{
		Inspector: inspect.New(rdb, nil), Listen: "127.0.0.1:0", Match: o.match,
		MaxWSClients: o.maxWS, MaxWSPerSource: perSource, DiscoverInterval: o.discoverEvery, KeyspaceEvents: o.keyEvents,
		MaxConns: 16 * (perSource + 64),
	})
	if err := srv.Open(ctx); err != nil {
		rdb.Close()
		return nil, err
	}
	return &consoleRig{srv: srv, rdb: rdb, hook: h, ws: "ws" + strings.TrimPrefix(srv.URL(), "http") + "/ws"}, nil
}

func (c *consoleRig) close() {
	c.srv.Close()
	c.rdb.Close()
}

// rtHook counts round trips: single calls (Process) and pipelines apart, the
// commands in them, the time spent in pipelines, and (while recording) when
// each sampling pipeline started, which case 6 takes as the start of a tick.
type rtHook struct {
	calls, pipes, cmds, pipeNanos atomic.Int64
	// histCalls and histPipes are the round trips among calls and pipes
	// that are the history's (see countHistory): writes on its own
	// schedule, not reads of a tick.
	histCalls, histPipes, histCmds atomic.Int64

	mu        sync.Mutex
	recording bool
	starts    []int64 // unix ns
	// histByName counts, by name, the commands of the console's history
	// (web/history): its writes, one pipeline ending with the HSET of
	// the meta key, and its writer lock's calls (case 8's history rows).
	histByName map[string]int64
}

type rtCount struct {
	calls, pipes, cmds, pipeNanos  int64
	histCalls, histPipes, histCmds int64 // the history's among them
}

func (h *rtHook) snap() rtCount {
	return rtCount{h.calls.Load(), h.pipes.Load(), h.cmds.Load(), h.pipeNanos.Load(),
		h.histCalls.Load(), h.histPipes.Load(), h.histCmds.Load()}
}

func (a rtCount) minus(b rtCount) rtCount {
	return rtCount{a.calls - b.calls, a.pipes - b.pipes, a.cmds - b.cmds, a.pipeNanos - b.pipeNanos,
		a.histCalls - b.histCalls, a.histPipes - b.histPipes, a.histCmds - b.histCmds}
}

// historySent returns how many history commands of each name were sent
// so far.
func (h *rtHook) historySent() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.histByName)
}

// countHistory adds cmds to histByName and says so when they are the
// history's: the first or the last names one of its keys that span
// objects (its writes end with the meta key's HSET, its takeover reads
// begin with its HGET, its writer lock's calls name the lock), or it is
// the INFO server replication that the writer lock's store.Client sends
// now and then to learn the master's replicas (store/replica_ack.go; the
// console's own INFO rides in the tick's pipeline and asks commandstats).
// Two more single calls are the history's, once each, when its writer
// starts: the bare INFO its store.Client reads before its first lock call
// (store/sharded.go; the history's is the console's only store.Client),
// and the SCRIPT LOAD of its scripts (luascripts/history_*.lua). A 5 s
// window that holds that start counted them as two round trips of the
// ticks, 1.08 a tick against 1.00.
// Only the first and last are looked at, so a sampling pipeline costs two
// commands' arguments. h.mu is held.
func (h *rtHook) countHistory(cmds []redis.Cmder) bool {
	spans := func(c redis.Cmder) bool {
		return slices.ContainsFunc(c.Args(), func(a any) bool {
			return a == history.MetaKey || a == history.WriterLock
		})
	}
	if len(cmds) == 0 {
		return false
	}
	args := cmds[0].Args()
	single := len(cmds) == 1
	replicaCheck := single && cmds[0].Name() == "info" && slices.Contains(args, any("replication"))
	topology := single && cmds[0].Name() == "info" && len(args) == 1
	src, _ := argAt(args, 2).(string)
	scriptLoad := single && cmds[0].Name() == "script" && argAt(args, 1) == "load" && historyScripts[src]
	if !spans(cmds[len(cmds)-1]) && !spans(cmds[0]) && !replicaCheck && !topology && !scriptLoad {
		return false
	}
	if h.histByName == nil {
		h.histByName = map[string]int64{}
	}
	for _, c := range cmds {
		h.histByName[c.Name()]++
	}
	return true
}

// historyScripts are the texts of the scripts the history's writer loads.
var historyScripts = map[string]bool{
	luascripts.Source("history_hold_write"): true,
	luascripts.Source("history_hold_mark"):  true,
}

// argAt is args[i], or nil past the end.
func argAt(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// record turns start recording on or off and returns what was recorded.
func (h *rtHook) record(on bool) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recording = on
	s := h.starts
	if on {
		h.starts = nil
	}
	return s
}

func (*rtHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *rtHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.calls.Add(1)
		h.cmds.Add(1)
		h.mu.Lock()
		if h.countHistory([]redis.Cmder{cmd}) {
			h.histCalls.Add(1)
			h.histCmds.Add(1)
		}
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *rtHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		h.pipes.Add(1)
		h.cmds.Add(int64(len(cmds)))
		h.mu.Lock()
		// A tick's sample opens with TIME; the registry read (once a
		// second, HGETALL then TIME) and others are not tick starts.
		if h.recording && len(cmds) > 0 && cmds[0].Name() == "time" {
			h.starts = append(h.starts, start.UnixNano())
		}
		if h.countHistory(cmds) {
			h.histPipes.Add(1)
			h.histCmds.Add(int64(len(cmds)))
		}
		h.mu.Unlock()
		err := next(ctx, cmds)
		h.pipeNanos.Add(int64(time.Since(start)))
		return err
	}
}

// redisUsage is what INFO says about the server's work: CPU seconds and,
// per command, calls and microseconds spent executing it.
type redisUsage struct {
	cpu   float64
	calls map[string]int64
	usec  map[string]int64
}

func readRedisUsage(ctx context.Context, rdb *redis.Client) (redisUsage, error) {
	u := redisUsage{calls: map[string]int64{}, usec: map[string]int64{}}
	txt, err := rdb.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(txt, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, _ := strings.Cut(rest, ":")
			for _, kv := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(kv, "=")
				var n int64
				fmt.Sscan(v, &n)
				switch k {
				case "calls":
					u.calls[name] = n
				case "usec":
					u.usec[name] = n
				}
			}
			continue
		}
		if strings.HasPrefix(line, "used_cpu_sys:") || strings.HasPrefix(line, "used_cpu_user:") {
			_, v, _ := strings.Cut(line, ":")
			var f float64
			fmt.Sscan(v, &f)
			u.cpu += f
		}
	}
	return u, nil
}

// consoleOnly are the commands the console sends and applications' scripts
// do not (they use TIME, HMGET, HINCRBY, HLEN ...), so their commandstats
// belong to the console alone.
var consoleOnly = []string{"hgetall", "pttl", "scan"}

// callsOf and usecOf sum names' deltas since before.
func (u redisUsage) callsOf(before redisUsage, names ...string) int64 {
	var n int64
	for _, k := range names {
		n += u.calls[k] - before.calls[k]
	}
	return n
}

func (u redisUsage) usecOf(before redisUsage, names ...string) int64 {
	var n int64
	for _, k := range names {
		n += u.usec[k] - before.usec[k]
	}
	return n
}

// totalCalls is every command executed between two readings but INFO.
func totalCalls(u1, u0 redisUsage) int64 {
	var n int64
	for k, v := range u1.calls {
		if k != "info" {
			n += v - u0.calls[k]
		}
	}
	return n
}

// processCPU is this process's CPU time (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// frameCounter is one in-process websocket viewer that counts stats frames
// and hands other frames to onOther.
type frameCounter struct {
	conn    *websocket.Conn
	stats   atomic.Int64
	bytes   atomic.Int64 // size of the last stats frame
	done    chan struct{}
	onOther func(msg []byte, at time.Time)
}

var statsPrefix = []byte(`{"type":"stats"`)

func dialWS(ctx context.Context, url string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10}
	c, _, err := d.DialContext(ctx, url, nil)
	return c, err
}

func newFrameCounter(ctx context.Context, url string, onOther func([]byte, time.Time)) (*frameCounter, error) {
	conn, err := dialWS(ctx, url)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(256 << 20)
	f := &frameCounter{conn: conn, done: make(chan struct{}), onOther: onOther}
	go func() {
		defer close(f.done)
		for { // ends when the connection is closed
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			now := time.Now()
			if bytes.HasPrefix(msg, statsPrefix) {
				f.stats.Add(1)
				f.bytes.Store(int64(len(msg)))
			} else if f.onOther != nil {
				f.onOther(msg, now)
			}
		}
	}()
	return f, nil
}

func (f *frameCounter) close() {
	f.conn.Close()
	<-f.done
}

// waitFrames waits until n more stats frames than now arrived, or d passed.
func (f *frameCounter) waitFrames(ctx context.Context, n int64, d time.Duration) error {
	want := f.stats.Load() + n
	end := time.Now().Add(d)
	for f.stats.Load() < want {
		if time.Now().After(end) || ctx.Err() != nil {
			return fmt.Errorf("no stats frame from the console within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// paced calls fn about perSec times a second in total, on conc goroutines,
// until stop is called; stop returns the calls made and the first error.
// A goroutine that falls behind skips ahead rather than bursting.
func paced(ctx context.Context, conc int, perSec float64, fn func(ctx context.Context, g, i int) error) (stop func() (int64, error)) {
	ctx, cancel := context.WithCancel(ctx)
	var n atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	every := time.Duration(float64(conc) / perSec * float64(time.Second))
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(every * time.Duration(g) / time.Duration(conc))
			for i := 0; ctx.Err() == nil; i++ { // bounded by stop
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				} else if d < -100*time.Millisecond {
					next = time.Now()
				}
				next = next.Add(every)
				if err := fn(ctx, g, i); err != nil {
					if ctx.Err() == nil {
						firstErr.CompareAndSwap(nil, err)
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	return func() (int64, error) {
		cancel()
		wg.Wait()
		err, _ := firstErr.Load().(error)
		return n.Load(), err
	}
}

// deleteByPrefix removes what a case wrote, so later cases scan a small
// keyspace.
func deleteByPrefix(ctx context.Context, rdb *redis.Client, prefix string) error {
	var cursor uint64
	for i := 0; i < 1_000_000; i++ { // bounded: a SCAN pass ends
		keys, next, err := rdb.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
	return errors.New("scan did not end")
}

// makeBuckets creates n token buckets named prefix+"lim:<i>" with 16
// goroutines and returns them.
func makeBuckets(ctx context.Context, st *store.Client, prefix string, n int) ([]*store.TokenBucket, error) {
	bs := make([]*store.TokenBucket, n)
	for i := range bs {
		bs[i] = st.NewTokenBucket(fmt.Sprintf("%slim:%05d", prefix, i), nil)
	}
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				if err := bs[i].TrySetRate(ctx, store.TokenBucketConfig{Capacity: 100, IntervalMS: 10, Initial: 100}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return bs, <-errs
}

// The history's one-time calls count as its own, a tick's reads do not:
// a window that held the writer's start otherwise read 1.08 round trips a
// tick against 1.00.
func TestCountHistoryKnowsTheWritersStart(t *testing.T) {
	ctx := context.Background()
	one := func(args ...any) []redis.Cmder { return []redis.Cmder{redis.NewCmd(ctx, args...)} }
	for _, c := range []struct {
		what string
		cmds []redis.Cmder
		want bool
	}{
		{"its store.Client's INFO before the first lock call", one("info"), true},
		{"its SCRIPT LOAD", one("script", "load", luascripts.Source("history_hold_write")), true},
		{"its replica check", one("info", "server", "replication"), true},
		{"the sampler's SCRIPT LOAD", one("script", "load", luascripts.Source("redisson_limiter_state")), false},
		{"a tick's INFO", one("info", "commandstats", "cpu"), false},
		{"a tick", []redis.Cmder{redis.NewCmd(ctx, "time"), redis.NewCmd(ctx, "hgetall", "lock")}, false},
	} {
		var h rtHook
		if got := h.countHistory(c.cmds); got != c.want {
			t.Errorf("%s: counted as the history's = %v, want %v", c.what, got, c.want)
		}
	}
}
