package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Case 2's application instances are processes of their own: this test
// binary run again as TestBenchLockInstance, one per instance. In one
// process the two instances shared one Go scheduler, which no two
// application instances do: a hand-off from one to the other then waited
// for the receiving instance's goroutine to get a thread of the very
// process that had just released (measured: its message was read about
// 0.1 ms after the releaser's own reply). Every peer runs the same way.

// instanceEnv carries an instance's instanceConfig (JSON) to the process.
const instanceEnv = "LOCKWARDEN_BENCH_LOCK_INSTANCE"

// instanceConfig is what one instance process runs.
type instanceConfig struct {
	Peer string        // a lockPeers name
	Addr string        // the benchmark's redis-server
	Key  string        // the one contended lock
	G    int           // goroutines
	CS   time.Duration // critical section, busy
	D    time.Duration // run length from the start signal
	Out  string        // file for the instanceResult (JSON)
}

// holdEvent is one acquisition in one instance, in unix ns (one host, one
// clock for both processes).
type holdEvent struct {
	Wait int64 // Lock called
	Got  int64 // Lock returned
	Rel  int64 // critical section over, Unlock called
}

// instanceResult is what an instance process reports.
type instanceResult struct {
	Events []holdEvent
	Sent   int64 // commands its client sent
	Passes int64 // store's in-process passes (0 for the peers)
	Err    string
}

// TestBenchLockInstance is one instance of case 2: it sets up its peer,
// prints a ready line, waits for "go" on stdin, then locks, holds and
// unlocks on G goroutines for D and writes its events to Out. Run only by
// contended.
func TestBenchLockInstance(t *testing.T) {
	raw := os.Getenv(instanceEnv)
	if raw == "" {
		t.Skip("run by case 2 of the benchmarks")
	}
	var cfg instanceConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	res := runInstance(t, cfg)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func runInstance(t *testing.T, cfg instanceConfig) instanceResult {
	var p *lockPeer
	for i := range lockPeers {
		if lockPeers[i].name == cfg.Peer {
			p = &lockPeers[i]
		}
	}
	if p == nil {
		return instanceResult{Err: "no peer " + cfg.Peer}
	}
	e := &env{t: t, addr: cfg.Addr}
	c := e.client(cfg.G)
	defer c.Close()
	newPair := p.instance(c, true)
	locks := make([]func(context.Context) error, cfg.G)
	unlocks := make([]func(context.Context) error, cfg.G)
	for g := range locks {
		locks[g], unlocks[g] = newPair(cfg.Key)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		return instanceResult{Err: err.Error()}
	}
	passes := func() int64 {
		if c.lw == nil {
			return 0
		}
		return c.lw.WaitStats().Passes
	}
	sent0, passes0 := c.sent.Load(), passes()
	fmt.Println(helperReady)
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return instanceResult{Err: fmt.Sprintf("no start signal: %q %v", line, err)}
	}
	ctx, cancel := context.WithTimeout(t.Context(), cfg.D)
	defer cancel()
	var mu sync.Mutex
	var res instanceResult
	var wg sync.WaitGroup
	for g := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []holdEvent
			defer func() {
				mu.Lock()
				res.Events = append(res.Events, mine...)
				mu.Unlock()
			}()
			for ctx.Err() == nil { // bounded by D
				ev := holdEvent{Wait: time.Now().UnixNano()}
				if err := locks[g](ctx); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						res.Err = err.Error()
						mu.Unlock()
						cancel()
					}
					return
				}
				ev.Got = time.Now().UnixNano()
				busy(cfg.CS)
				ev.Rel = time.Now().UnixNano()
				mine = append(mine, ev)
				if err := unlocks[g](context.WithoutCancel(ctx)); err != nil {
					mu.Lock()
					res.Err = "unlock: " + err.Error()
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Sent, res.Passes = c.sent.Load()-sent0, passes()-passes0
	return res
}

// runInstances runs n instance processes of p on key and returns their
// results once all have run d from a common start.
func runInstances(ctx context.Context, e *env, p lockPeer, key string, n, perInstance int, cs, d time.Duration) ([]instanceResult, error) {
	hctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel() // kills a process left running by an error below
	procs := make([]*helperProc, n)
	outs := make([]string, n)
	defer func() {
		for _, f := range outs {
			if f != "" {
				os.Remove(f)
			}
		}
	}()
	for i := range procs {
		f, err := os.CreateTemp("", "lockwarden-instance-*.json")
		if err != nil {
			return nil, err
		}
		f.Close()
		outs[i] = f.Name()
		cfg, _ := json.Marshal(instanceConfig{Peer: p.name, Addr: e.addr, Key: key, G: perInstance, CS: cs, D: d, Out: f.Name()})
		if procs[i], err = startHelper(hctx, "TestBenchLockInstance", instanceEnv+"="+string(cfg)); err != nil {
			return nil, fmt.Errorf("%s instance %d: %w", p.name, i, err)
		}
	}
	for _, pr := range procs { // every instance is ready: start them together
		if _, err := io.WriteString(pr.stdin, "go\n"); err != nil {
			return nil, err
		}
		pr.stdin.Close()
	}
	out := make([]instanceResult, n)
	for i, pr := range procs {
		if err := pr.wait(nil); err != nil {
			return nil, fmt.Errorf("%s instance %d: %w", p.name, i, err)
		}
		b, err := os.ReadFile(outs[i])
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("%s instance %d: %w", p.name, i, err)
		}
		if out[i].Err != "" && !strings.Contains(out[i].Err, context.DeadlineExceeded.Error()) {
			return nil, fmt.Errorf("%s instance %d: %s", p.name, i, out[i].Err)
		}
	}
	return out, nil
}

// handoffs are, for each acquisition that waited for the release before
// it (across instances, by time), the time from that release to it.
func handoffs(res []instanceResult) []time.Duration {
	var all []holdEvent
	for _, r := range res {
		all = append(all, r.Events...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Got < all[j].Got })
	var out []time.Duration
	for i := 1; i < len(all); i++ {
		if prev := all[i-1].Rel; prev > all[i].Wait {
			out = append(out, time.Duration(all[i].Got-prev))
		}
	}
	return out
}
