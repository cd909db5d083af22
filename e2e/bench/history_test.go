package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/web"
	"github.com/lockwarden/lockwarden/web/history"
)

// Case 8's history rows: what the console's history (web/history) costs
// Redis, in memory and in CPU, over case 8's keyspace. Case 8's own
// objects are idle, and an idle lock only scores once (its holder
// appearing), so an application keeps more limiters and locks busy than
// --history-top keeps: the memory measured is then the bound's, and the
// writer has steps and holds to write at every flush. On the same server,
// with the same traffic, each round measures a window with no console,
// one with the defaults console and its history off (HistoryTop < 0), and
// one with it on, the two consoles in alternating order.

// historyLoad is the application traffic and the measuring plan.
type historyLoad struct {
	hotLocks int           // lock names taken in turn, a multiple of holders
	holders  int           // goroutines, each holding one lock at a time
	hold     time.Duration // how long each hold lasts
	perSec   float64       // token-bucket attempts a second, spread over every limiter
	rounds   int
	window   time.Duration
	// ready waits for a new console to have run its first pass (settle,
	// or listed for the smoke test); flushes is how many history writes
	// the history-on console makes before its window (the first writes
	// every kept object's rings in full).
	ready   func(context.Context, *consoleRig) error
	flushes int64
}

// case8HistoryLoad is the report's: 500 lock names held 1 s each by 50
// holders (each name every 10 s), 200 attempts a second over the 1,000
// limiters (each every 5 s); 20 s windows, two history writes each.
func case8HistoryLoad() historyLoad {
	return historyLoad{hotLocks: 500, holders: 50, hold: time.Second, perSec: 200,
		rounds: 2, window: 20 * time.Second, ready: settle, flushes: 2}
}

// historyWindow is one window: Redis CPU, SETRANGE executed by Redis a
// second (commandstats: only the history sends it) and the history's
// commands the console's client sent a second by name (the hook).
type historyWindow struct {
	cpuPct, setrange float64
	sent             map[string]float64
}

type historyRound struct{ none, off, on historyWindow }

// historyMemory is what the history's keys hold in Redis after the last
// window: MEMORY USAGE (SAMPLES 0) summed over the index's objects' keys
// and the keys that span objects.
type historyMemory struct {
	keys            int
	bytes           int64
	limiters, locks int // objects in the index key
}

type historyCase struct {
	load   historyLoad
	keys   discoveryKeys
	rounds []historyRound
	mem    historyMemory
	status history.Stats // the history-on console's /api/status at its last window's end
	// histCmds is how many history commands the hook saw from the last
	// history-on console, over its life.
	histCmds int64
}

// historyCost runs the traffic and the rounds on rdb's server, whose
// limiters are k's (case 8's api:limit:<i>).
func historyCost(ctx context.Context, rdb *redis.Client, k discoveryKeys, l historyLoad) (*historyCase, error) {
	out := &historyCase{load: l, keys: k}
	stop := historyTraffic(ctx, rdb.Options().Addr, k.limiters, l)
	err := out.measure(ctx, rdb)
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("traffic: %w", serr)
	}
	return out, err
}

func (hc *historyCase) measure(ctx context.Context, rdb *redis.Client) error {
	l := hc.load
	for r := 0; r < l.rounds; r++ {
		var rd historyRound
		var err error
		if rd.none, err = measureHistory(ctx, rdb, nil, l.window); err != nil {
			return err
		}
		order := []bool{false, true}
		if r%2 == 1 {
			order = []bool{true, false}
		}
		for _, on := range order {
			w, st, n, err := historyConsoleWindow(ctx, rdb, l, on)
			if err != nil {
				return fmt.Errorf("history on %v: %w", on, err)
			}
			if on {
				rd.on, hc.status, hc.histCmds = w, st, n
			} else {
				rd.off = w
			}
		}
		hc.rounds = append(hc.rounds, rd)
	}
	var err error
	hc.mem, err = historyMemoryOf(ctx, rdb)
	return err
}

// historyConsoleWindow starts a defaults console, history on or off,
// waits for it and measures one window. It returns the console's history
// status and how many history commands its client sent in all.
func historyConsoleWindow(ctx context.Context, rdb *redis.Client, l historyLoad, on bool) (w historyWindow, st history.Stats, n int64, err error) {
	rig, err := startConsoleWith(ctx, rdb.Options().Addr, func(c *web.Config) {
		if !on {
			c.HistoryTop = -1
		}
	})
	if err != nil {
		return w, st, 0, err
	}
	defer rig.close()
	if err := l.ready(ctx, rig); err != nil {
		return w, st, 0, err
	}
	if on {
		if err := waitFlushes(ctx, rig, l.flushes); err != nil {
			return w, st, 0, err
		}
	}
	if w, err = measureHistory(ctx, rdb, rig, l.window); err != nil || !on {
		return w, st, 0, err
	}
	s, err := getStatus(ctx, rig)
	if err == nil && s.History != nil {
		st = *s.History
	}
	for _, v := range rig.hook.historySent() {
		n += v
	}
	return w, st, n, err
}

// waitFlushes waits until rig's history is the writer and has written n
// times, bounded (a write comes at every 10 s step).
func waitFlushes(ctx context.Context, rig *consoleRig, n int64) error {
	var last *history.Stats
	for i := 0; i < 600; i++ { // 60 s at most
		st, err := getStatus(ctx, rig)
		if err != nil {
			return err
		}
		if last = st.History; last != nil && last.Writer && last.Flushes >= n {
			return nil
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("the history did not write %d times in 60 s: %+v", n, last)
}

// measureHistory measures one window; rig nil: no console runs.
func measureHistory(ctx context.Context, rdb *redis.Client, rig *consoleRig, d time.Duration) (historyWindow, error) {
	var w historyWindow
	u0, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return w, err
	}
	var s0 map[string]int64
	if rig != nil {
		s0 = rig.hook.historySent()
	}
	t0 := time.Now()
	if !sleepCtx(ctx, d) {
		return w, ctx.Err()
	}
	u1, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return w, err
	}
	secs := time.Since(t0).Seconds()
	w.cpuPct = 100 * (u1.cpu - u0.cpu) / secs
	w.setrange = float64(u1.callsOf(u0, "setrange")) / secs
	if rig != nil {
		w.sent = perSecond(rig.hook.historySent(), s0, secs)
	}
	return w, nil
}

func perSecond(now, before map[string]int64, secs float64) map[string]float64 {
	out := make(map[string]float64, len(now))
	for k, v := range now {
		out[k] = float64(v-before[k]) / secs
	}
	return out
}

// historyTraffic starts the application: holders goroutines taking the
// hot lock names in turn (goroutine g only the names ≡ g mod holders, so
// they never wait for each other) and paced attempts over every limiter.
// stop ends it and returns its first error.
func historyTraffic(ctx context.Context, addr string, limiters int, l historyLoad) (stop func() error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: l.holders + 8, ReadTimeout: 10 * time.Second})
	app := store.New(rdb, &store.Options{App: "bench-case-8-history"})
	buckets := make([]*store.TokenBucket, limiters)
	for i := range buckets {
		buckets[i] = app.NewTokenBucket(fmt.Sprintf("api:limit:%d", i), nil)
	}
	stopLim := paced(ctx, 2, l.perSec, func(ctx context.Context, g, i int) error {
		_, err := buckets[(2*i+g)%len(buckets)].TryAcquire(ctx, 1)
		return err
	})
	ctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, l.holders)
	var wg sync.WaitGroup
	for g := 0; g < l.holders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ctx.Err() == nil; i += l.holders { // bounded by stop
				lk := app.NewLock(fmt.Sprintf("orders:hot:%d", i%l.hotLocks), &store.LockOptions{Lease: time.Minute})
				if err := lk.TryLock(ctx); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("lock: %w", err)
					}
					return
				}
				sleepCtx(ctx, l.hold)
				if err := lk.Unlock(context.WithoutCancel(ctx)); err != nil {
					errs <- fmt.Errorf("unlock: %w", err)
					return
				}
			}
		}()
	}
	return func() error {
		_, err := stopLim()
		cancel()
		wg.Wait()
		close(errs)
		if e := <-errs; err == nil {
			err = e
		}
		if e := app.Close(); err == nil {
			err = e
		}
		rdb.Close()
		return err
	}
}

// historyMemoryOf sums MEMORY USAGE over the history's keys: the three
// that span objects and each indexed object's (web/history's key builders).
func historyMemoryOf(ctx context.Context, rdb *redis.Client) (historyMemory, error) {
	var m historyMemory
	members, err := rdb.ZRange(ctx, history.IndexKey, 0, -1).Result()
	if err != nil {
		return m, err
	}
	keys := []string{history.MetaKey, history.IndexKey, history.WriterLock}
	for _, mem := range members {
		if name, ok := strings.CutPrefix(mem, "limiter:"); ok {
			m.limiters++
			keys = append(keys, history.FineKey(name), history.CoarseKey(name))
		} else if name, ok := strings.CutPrefix(mem, "lock:"); ok {
			m.locks++
			keys = append(keys, history.HoldsKey(name), history.OpenKey(name), history.WaitKey(name))
		}
	}
	p := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = p.MemoryUsage(ctx, k, 0)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return m, err
	}
	for _, c := range cmds {
		n, err := c.Result()
		switch {
		case err == nil:
			m.keys++
			m.bytes += n
		case !errors.Is(err, redis.Nil): // redis.Nil: no such key (a ring not written yet)
			return m, err
		}
	}
	return m, nil
}

// onShare is, per round, the console's share of Redis CPU with history
// on (on less no console); offShare with it off; historyShare the
// history's own (on less off).
func (hc *historyCase) onShare() series {
	return seriesOf(hc.rounds, func(r historyRound) float64 { return r.on.cpuPct - r.none.cpuPct })
}

func (hc *historyCase) offShare() series {
	return seriesOf(hc.rounds, func(r historyRound) float64 { return r.off.cpuPct - r.none.cpuPct })
}

func (hc *historyCase) historyShare() series {
	return seriesOf(hc.rounds, func(r historyRound) float64 { return r.on.cpuPct - r.off.cpuPct })
}

// historyCommands is, per command name, the median over rounds of the
// history's commands a second in the history-on window.
func (hc *historyCase) historyCommands() string {
	names := map[string]bool{}
	for _, r := range hc.rounds {
		for k := range r.on.sent {
			names[k] = true
		}
	}
	var out []string
	for k := range names {
		if d := seriesOf(hc.rounds, func(r historyRound) float64 { return r.on.sent[k] }).median(); d >= 0.05 {
			out = append(out, fmt.Sprintf("%s %.1f", strings.ToUpper(k), d))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

const mb = 1e6

// historyRows writes case 8's history tables for the sizes that measured
// it, beside what the defaults console's history kept with no traffic.
func historyRows(w func(string, ...any), rs []*case8Size) {
	for _, r := range rs {
		hc := r.history
		if hc == nil {
			continue
		}
		l := hc.load
		w("\n### 8. The history at %d keys (%d limiters, %d locks)\n\n", r.keys, hc.keys.limiters, hc.keys.locks)
		w("The defaults console keeps the history of the %d busiest limiters and locks (--history-top). Case 8's objects are idle, so an application (a store.Client) keeps more busy: "+
			"%d lock names (`orders:hot:<i>`, besides the %d idle locks) held %v each by %d holders in turn, and %.0f token-bucket attempts a second spread over every `api:limit:<i>`. "+
			"Each of %d rounds measures %v windows on the same server with the same traffic: no console, the defaults console with its history off (HistoryTop < 0) and with it on, the two in alternating order; "+
			"each console's window starts once it has settled (as above) and, history on, once its history has written %d times (the first write fills every kept ring). "+
			"Memory is MEMORY USAGE (SAMPLES 0) summed over the history's keys after the last round; the estimate is the history-on console's /api/status.\n\n",
			history.DefaultTop, l.hotLocks, hc.keys.locks, l.hold, l.holders, l.perSec, l.rounds, l.window, l.flushes)
		st := hc.status
		w("| kept: limiters / locks (left out) | keys in Redis | Redis memory, MEMORY USAGE (MB) | /api/status: keys, estimate (MB) | with no traffic (the defaults console above): kept limiters / locks, estimate (MB) |\n|---|---|---|---|---|\n")
		idle := "–"
		if h := r.final.History; h != nil {
			idle = fmt.Sprintf("%d / %d, %.2f", h.LimitersKept, h.LocksKept, float64(h.BytesEstimate)/mb)
		}
		w("| %d / %d (%d / %d) | %d | %.2f | %d, %.2f | %s |\n", hc.mem.limiters, hc.mem.locks, st.LimitersOmitted, st.LocksOmitted,
			hc.mem.keys, float64(hc.mem.bytes)/mb, st.Keys, float64(st.BytesEstimate)/mb, idle)
		w("\n| console | Redis CPU, %% of one core | its share (less no console), %% |\n|---|---|---|\n")
		w("| none (the traffic alone) | %s | – |\n", cell(seriesOf(hc.rounds, func(r historyRound) float64 { return r.none.cpuPct }), 2))
		w("| defaults, history off | %s | %s |\n", cell(seriesOf(hc.rounds, func(r historyRound) float64 { return r.off.cpuPct }), 2), cell(hc.offShare(), 2))
		w("| defaults, history on | %s | %s |\n", cell(seriesOf(hc.rounds, func(r historyRound) float64 { return r.on.cpuPct }), 2), cell(hc.onShare(), 2))
		w("| the history's own (on less off) | – | %s |\n", cell(hc.historyShare(), 2))
		w("\nThe history's commands a second (median), as the console's client sent them (a hook: its write pipelines, which end with the meta key's HSET, and its writer lock's renewals): %s; "+
			"SETRANGE executed by Redis (commandstats; only the history sends it): %s; EVALSHA is `history_hold_write.lua`, one per lock whose holds changed, and the writer lock's renewal. "+
			"Its last write: %d commands, %d bytes; samples dropped %d; last error %q.\n",
			hc.historyCommands(), cell(seriesOf(hc.rounds, func(r historyRound) float64 { return r.on.setrange }), 1),
			st.FlushCommands, st.FlushBytes, st.Dropped, st.LastError)
	}
}

// historyTargets judges issue 21's two: the history's memory at case 8's
// 1,000 limiters and 10,000 locks, and the console's share of a Redis
// core with its history on.
func historyTargets(target func(string, bool, string), r *case8Size) {
	hc := r.history
	if hc == nil {
		return
	}
	target(fmt.Sprintf("8. history memory ≤ 16 MB at %d limiters and %d locks (MEMORY USAGE of its keys)", hc.keys.limiters, hc.keys.locks), float64(hc.mem.bytes) <= 16*mb,
		fmt.Sprintf("%.2f MB in %d keys, %d limiters and %d locks kept (estimate %.2f MB)", float64(hc.mem.bytes)/mb, hc.mem.keys, hc.mem.limiters, hc.mem.locks, float64(hc.status.BytesEstimate)/mb))
	share := hc.onShare().median()
	target(fmt.Sprintf("8. the console's share ≤ 5 %% of a Redis core at %d keys with its history on (busy objects)", r.keys), share <= 5,
		fmt.Sprintf("%.2f %% (history off %.2f %%, the history's own %.2f %%)", share, hc.offShare().median(), hc.historyShare().median()))
}
