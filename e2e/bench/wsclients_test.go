package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Case 6: websocket fan-out. The viewers run in a second process (this test
// binary started again as TestBenchWSHelper), so the console's CPU time is
// this process's own getrusage, with none of the clients' work in it.

const wsHelperEnv = "LOCKWARDEN_BENCH_WS_HELPER" // the console's ws URL

// receipt is one stats frame arriving at one viewer.
type receipt struct {
	frame uint64 // hash of the frame: every viewer gets the same bytes
	at    int64  // unix ns
}

// TestBenchWSHelper is the viewers' process: it connects LW_WS_N clients,
// prints a ready line, records every stats frame for LW_WS_FOR, and writes
// the receipts to LW_WS_OUT. Run only by case 6.
func TestBenchWSHelper(t *testing.T) {
	url := os.Getenv(wsHelperEnv)
	if url == "" {
		t.Skip("run by case 6 of the benchmarks")
	}
	n, _ := strconv.Atoi(os.Getenv("LW_WS_N"))
	d, _ := time.ParseDuration(os.Getenv("LW_WS_FOR"))
	ctx, cancel := context.WithTimeout(t.Context(), d+2*time.Minute)
	defer cancel()

	var recording atomic.Bool
	seed := maphash.MakeSeed() // one process hashes every receipt
	var closed atomic.Int64
	recs := make([][]receipt, n)
	fcs := make([]*frameCounter, n)
	// settled counts the viewers that have had settleFrames stats frames.
	var settled atomic.Int64
	allSettled := make(chan struct{})
	// Dial with a few goroutines: the console admits viewers one by one anyway.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				conn, err := dialWS(ctx, url)
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				fc := &frameCounter{conn: conn, done: make(chan struct{})}
				fcs[i] = fc
				go func() {
					defer close(fc.done)
					got := 0
					for { // ends when the connection is closed
						_, msg, err := conn.ReadMessage()
						if err != nil {
							if !recording.Load() {
								return
							}
							closed.Add(1)
							return
						}
						if !bytes.HasPrefix(msg, statsPrefix) {
							continue
						}
						if recording.Load() {
							recs[i] = append(recs[i], receipt{maphash.Bytes(seed, msg), time.Now().UnixNano()})
						} else if got++; got == settleFrames && settled.Add(1) == int64(n) {
							close(allSettled)
						}
					}
				}()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// The window is the steady state: it starts once every viewer has had
	// its first (full) stats frame and the deltas after it, not at the last
	// dial, while the console is still writing the full frames (every
	// limiter's kind and settings, to each viewer) and this process reading
	// them: windows that began there put that burst into the first ticks'
	// receipts, a p99 of 200-500 ms from ticks whose first receipt came
	// within a few ms.
	select {
	case <-allSettled:
	case <-ctx.Done():
		t.Fatal("the viewers did not all get their first stats frames")
	}
	recording.Store(true)
	fmt.Println(helperReady)
	cpu0, t0 := processCPU(), time.Now()
	time.Sleep(d)
	recording.Store(false)
	cpu := (processCPU() - cpu0).Seconds() / time.Since(t0).Seconds()
	for _, fc := range fcs {
		fc.conn.Close()
	}
	for _, fc := range fcs {
		<-fc.done
	}
	f, err := os.Create(os.Getenv("LW_WS_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var buf [16]byte
	for _, rs := range recs {
		for _, r := range rs {
			binary.LittleEndian.PutUint64(buf[:8], r.frame)
			binary.LittleEndian.PutUint64(buf[8:], uint64(r.at))
			w.Write(buf[:])
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fmt.Printf("LWBENCH-DONE closed=%d cpu=%f\n", closed.Load(), cpu)
}

// settleFrames is how many stats frames every viewer gets before case 6's
// window starts: the full first one, then deltas.
const settleFrames = 3

// fanoutResult is one window of case 6.
type fanoutResult struct {
	clients     int
	consoleCPU  float64 // % of one core, the console's process
	viewersCPU  float64 // % of one core, the viewers' process
	p50, p99    float64 // ms from tick start to receipt
	max         float64
	perViewer   float64 // stats frames per viewer per tick (1 = every frame)
	cmds        float64 // Redis commands per tick (hook)
	roundTrips  float64 // per tick
	redisCPUPct float64 // Redis CPU in the window (nothing else runs)
	frameKB     float64
	closed      int64 // viewers the console dropped
}

// fanoutObjects sets up what case 6's console shows: nLim token buckets
// and one lock held for 10 minutes, whose lease makes every frame's bytes
// unique (pttl_ms changes every tick), so a frame identifies its tick.
func fanoutObjects(ctx context.Context, e *env, nLim int) (prefix string, cleanup func(), err error) {
	admin := e.client(1)
	prefix = e.prefix("c6")
	cleanup = func() {
		deleteByPrefix(ctx, admin.Client, prefix)
		admin.Close()
	}
	st := admin.store()
	if _, err := makeBuckets(ctx, st, prefix, nLim); err != nil {
		return prefix, cleanup, err
	}
	l := st.NewLock(prefix+"held", &store.LockOptions{Lease: 10 * time.Minute, NoWatchdog: true})
	return prefix, cleanup, l.TryLock(ctx)
}

// fanout runs one window of d with n viewers in the helper process.
func fanout(ctx context.Context, e *env, prefix string, n int, d time.Duration) (fanoutResult, error) {
	res := fanoutResult{clients: n}
	admin := e.client(1)
	defer admin.Close()
	c, err := startConsole(ctx, e.addr, consoleOpts{match: prefix + "*", discoverEvery: time.Hour, maxWS: n + 16})
	if err != nil {
		return res, err
	}
	defer c.close()
	// One frame first, so the discovery pass is behind us.
	fc, err := newFrameCounter(ctx, c.ws, nil)
	if err != nil {
		return res, err
	}
	if err := fc.waitFrames(ctx, 1, 30*time.Second); err != nil {
		fc.close()
		return res, err
	}
	// A viewer's first frame is the full one (kinds, holders, first seen);
	// later ones carry those only when they change. Report a steady frame.
	// (Stats frames after the first are deltas: only changed numbers.)
	// fc.bytes holds the size of the newest frame.
	if err := fc.waitFrames(ctx, 3, 30*time.Second); err != nil {
		fc.close()
		return res, err
	}
	res.frameKB = float64(fc.bytes.Load()) / 1024
	fc.close()

	out, err := os.CreateTemp("", "lockwarden-ws-*.bin")
	if err != nil {
		return res, err
	}
	out.Close()
	defer os.Remove(out.Name())
	hctx, cancel := context.WithTimeout(ctx, d+90*time.Second)
	defer cancel()
	viewers, err := startHelper(hctx, "TestBenchWSHelper", wsHelperEnv+"="+c.ws, "LW_WS_N="+strconv.Itoa(n), "LW_WS_FOR="+d.String(), "LW_WS_OUT="+out.Name())
	if err != nil {
		return res, fmt.Errorf("viewers' process: %w", err)
	}

	c.hook.record(true)
	h0, cpu0 := c.hook.snap(), processCPU()
	u0, err := readRedisUsage(ctx, admin.Client)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	sleepCtx(ctx, d)
	u1, err := readRedisUsage(ctx, admin.Client)
	if err != nil {
		return res, err
	}
	wall := time.Since(t0).Seconds()
	cpu := processCPU() - cpu0
	h := c.hook.snap().minus(h0)
	starts := c.hook.record(false)

	err = viewers.wait(func(line string) {
		if v, ok := strings.CutPrefix(line, "LWBENCH-DONE "); ok {
			var cpu float64
			fmt.Sscanf(v, "closed=%d cpu=%f", &res.closed, &cpu)
			res.viewersCPU = 100 * cpu
		}
	})
	if err != nil {
		return res, fmt.Errorf("viewers' process: %w", err)
	}
	recs, err := readReceipts(out.Name())
	if err != nil {
		return res, err
	}
	delays, frames := tickDelays(recs, starts)
	ticks := float64(len(starts))
	if ticks == 0 || len(delays) == 0 {
		return res, errors.New("no tick measured")
	}
	res.consoleCPU = 100 * cpu.Seconds() / wall
	res.p50, res.p99 = percentileMS(delays, 50), percentileMS(delays, 99)
	res.max = percentileMS(delays, 100)
	res.perViewer = float64(len(delays)) / float64(n) / float64(frames)
	// The history's election and writes (rtHook.countHistory) come on a
	// 10 s schedule of their own: a 5 s window held its first one or none,
	// 1.20 round trips a tick or 1.00.
	res.cmds = float64(h.cmds-h.histCmds) / ticks
	res.roundTrips = float64(h.pipes+h.calls-h.histPipes-h.histCalls) / ticks
	res.redisCPUPct = 100 * (u1.cpu - u0.cpu) / wall
	return res, nil
}

func readReceipts(path string) ([]receipt, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	recs := make([]receipt, len(b)/16)
	for i := range recs {
		recs[i] = receipt{binary.LittleEndian.Uint64(b[16*i:]), int64(binary.LittleEndian.Uint64(b[16*i+8:]))}
	}
	return recs, nil
}

// tickDelays matches receipts to ticks and returns each receipt's delay
// from the start of its tick, and how many frames were matched. Every
// viewer gets the frames in tick order, so the frames ordered by their
// first receipt anywhere are the ticks in order: frame j is tick j+k. The
// shift k is the largest that starts no tick after its frame was first
// received, which also holds when the first receipt of some frames comes
// later than the next tick. Frames without a recorded tick are left out.
func tickDelays(recs []receipt, starts []int64) ([]time.Duration, int) {
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	first := map[uint64]int64{}
	for _, r := range recs {
		if f, ok := first[r.frame]; !ok || r.at < f {
			first[r.frame] = r.at
		}
	}
	frames := make([]uint64, 0, len(first))
	for f := range first {
		frames = append(frames, f)
	}
	sort.Slice(frames, func(i, j int) bool { return first[frames[i]] < first[frames[j]] })
	fits := func(k int) bool {
		for j, f := range frames {
			if i := j + k; i >= 0 && i < len(starts) && starts[i] > first[f] {
				return false
			}
		}
		return true
	}
	k := len(starts) - 1
	for k > -len(frames) && !fits(k) {
		k--
	}
	tick := map[uint64]int64{}
	for j, f := range frames {
		if i := j + k; i >= 0 && i < len(starts) {
			tick[f] = starts[i]
		}
	}
	var delays []time.Duration
	for _, r := range recs {
		if s, ok := tick[r.frame]; ok {
			delays = append(delays, time.Duration(r.at-s))
		}
	}
	return delays, len(tick)
}

// The matching must survive a frame whose first receipt comes after the
// next tick started, and drop frames from before the first recorded tick.
func TestBenchTickDelays(t *testing.T) {
	recs := []receipt{{9, 90}, {1, 150}, {1, 180}, {2, 520}, {3, 600}, {3, 640}}
	delays, frames := tickDelays(recs, []int64{500, 100, 300})
	want := []time.Duration{50, 80, 220, 100, 140}
	if frames != 3 || fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Errorf("delays %v over %d frames, want %v over 3", delays, frames, want)
	}
}
