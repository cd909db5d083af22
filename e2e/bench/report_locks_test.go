package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// lockLimiterReport writes cases 1-4 of the report (the locks and limiters
// against their peers); c4 is the length of one case 4 run (12 s in the
// report, seed 001's test).
func lockLimiterReport(ctx context.Context, t *testing.T, e *env, rounds int, c4 time.Duration,
	w func(string, ...any), target func(string, bool, string), chk *caseCheck) {
	// Case 1.
	chk.begin()
	case1Report(ctx, t, e, rounds, w, target)
	chk.end(ctx, "1")

	// Case 2.
	chk.begin()
	w("\n## 2. One contended lock: 2 instances × 8 goroutines, 200 µs critical section (busy-wait)\n\n")
	w("Each instance is a process of its own (this test binary run again), with its own go-redis client, as application instances are. " +
		"Waiting: lockwarden queues and hands off (design below); redislock polls every 1 ms (LinearBackoff); redsync uses its default random 50–250 ms retry delay.\n\n")
	cres := make([][]contendedResult, len(lockPeers))
	for r := 0; r < rounds; r++ {
		for i, p := range lockPeers {
			v, err := contended(ctx, e, p, 8, 200*time.Microsecond, 2*time.Second)
			if err != nil {
				t.Fatalf("case 2 %s: %v", p.name, err)
			}
			cres[i] = append(cres[i], v)
		}
	}
	pick := seriesOf[contendedResult]
	rows := []struct {
		label string
		prec  int
		f     func(contendedResult) float64
	}{
		{"acquisitions/s", 0, func(r contendedResult) float64 { return r.acqPerSec }},
		{"wait p50 (ms)", 2, func(r contendedResult) float64 { return r.waitP50 }},
		{"wait p99 (ms)", 2, func(r contendedResult) float64 { return r.waitP99 }},
		{"wait max (ms)", 1, func(r contendedResult) float64 { return r.waitMax }},
		{"hand-off wait p50 (ms)", 3, func(r contendedResult) float64 { return r.handoffP50 }},
		{"hand-off wait p99 (ms)", 3, func(r contendedResult) float64 { return r.handoffP99 }},
		{"commands sent / acquisition", 2, func(r contendedResult) float64 { return r.sentPerAcq }},
		{"commands executed / acquisition (commandstats, incl. inside scripts)", 1, func(r contendedResult) float64 { return r.execPerAcq }},
		{"share of instance A", 3, func(r contendedResult) float64 { return r.shareA }},
		{"Jain fairness (2 instances)", 3, func(r contendedResult) float64 { return r.jain }},
		{"acquisitions passed in process by a release of the same instance", 3, func(r contendedResult) float64 { return r.passed }},
	}
	w("| figure | lockwarden | bsm/redislock | redsync |\n|---|---|---|---|\n")
	for _, row := range rows {
		w("| %s | %s | %s | %s |\n", row.label, cell(pick(cres[0], row.f), row.prec), cell(pick(cres[1], row.f), row.prec), cell(pick(cres[2], row.f), row.prec))
	}
	acq := func(i int) series { return pick(cres[i], rows[0].f) }
	w("\nacquisitions/s ratio: to redislock %s, to redsync %s.\n\n", cell(ratios(acq(0), acq(1)), 2), cell(ratios(acq(0), acq(2)), 2))
	lw := func(i int) float64 { return pick(cres[0], rows[i].f).median() }
	best := max(acq(1).median(), acq(2).median())
	target("2. acquisitions/s ≥ 1.1× the best peer", acq(0).median() >= 1.1*best, fmt.Sprintf("%.2f× the best peer's median", acq(0).median()/best))
	target("2. Jain fairness ≥ 0.95", lw(9) >= 0.95, fmt.Sprintf("%.3f", lw(9)))
	target("2. wait p99 ≤ 15 ms", lw(2) <= 15, fmt.Sprintf("%.2f ms", lw(2)))
	target("2. ≤ 8 Redis commands per acquisition (sent)", lw(6) <= 8, fmt.Sprintf("%.2f sent, %.1f executed incl. inside scripts", lw(6), lw(7)))
	target("2. ≤ 16 commands executed per contended acquisition (incl. inside scripts)", lw(7) <= 16, fmt.Sprintf("%.1f", lw(7)))
	w("%s\n", handoffDesign)

	chk.end(ctx, "2")

	// Case 3.
	chk.begin()
	w("## 3. Limiter decisions/s (limit 1,000/s per key, burst 1,000, enforced)\n\n")
	w("| keys | C | lockwarden token bucket | redis_rate (GCRA) | ratio |\n|---|---|---|---|---|\n")
	for _, keys := range []int{1, 1000} {
		for _, conc := range []int{1, 16, 64} {
			res := decisionRounds(ctx, t, e, keys, conc, rounds)
			rr := ratios(res[0], res[1]).median()
			target(fmt.Sprintf("3. decisions/s ≥ 1.2× redis_rate, %d keys, C=%d", keys, conc), rr >= 1.2, fmt.Sprintf("%.2f×", rr))
			w("| %d | %d | %s | %s | %s |\n", keys, conc, cell(res[0], 0), cell(res[1], 0), cell(ratios(res[0], res[1]), 2))
		}
	}

	chk.end(ctx, "3")

	chk.begin()
	// Case 4: the peers run side by side on their own keys, 3 rounds of 12 s,
	// once per way of spacing the requests.
	w("\n## 4. Limiter accuracy (seed 001's test: 500/s bucket, 20 workers every 30 ms, 12 s)\n\n")
	w("Admitted per rolling 1 s window (5 × 200 ms buckets, stepping by 200 ms), windows from 4 s on (the full initial bucket drains for about 3 s). Target: mean within ±0.5 %% of 500, never above capacity + refill (1,000). Each implementation runs under two arrival patterns.\n\n")
	w("| arrivals | implementation | mean | error | lowest window | highest window |\n|---|---|---|---|---|---|\n")
	peers := append([]limiterPeer{seed001Peer()}, limiterPeers...)
	for _, how := range []arrivals{inPhase, seedLoop} {
		acc := make([][]accuracyResult, len(peers))
		for r := 0; r < 3; r++ {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i, p := range peers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v, err := accuracy(ctx, e, p, c4, how)
					if err != nil {
						t.Errorf("case 4 %s: %v", p.name, err)
						return
					}
					mu.Lock()
					acc[i] = append(acc[i], v)
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		for i, p := range peers {
			f := func(g func(accuracyResult) float64) series {
				var s series
				for _, a := range acc[i] {
					s = append(s, g(a))
				}
				return s
			}
			if p.name == "lockwarden" && len(acc[i]) > 0 {
				em := f(func(a accuracyResult) float64 { return a.errPct }).median()
				_, top := f(func(a accuracyResult) float64 { return a.max }).minmax()
				target(fmt.Sprintf("4. steady-state mean within ±0.5 %% of 500, no window above 1,000 (arrivals %s)", how.short()),
					em >= -0.5 && em <= 0.5 && top <= 1000, fmt.Sprintf("%+.2f %%, highest window %.0f", em, top))
			}
			w("| %s | %s | %s | %s %% | %s | %s |\n", how.short(), p.name, cell(f(func(a accuracyResult) float64 { return a.mean }), 1),
				cell(f(func(a accuracyResult) float64 { return a.errPct }), 2),
				cell(f(func(a accuracyResult) float64 { return a.min }), 0), cell(f(func(a accuracyResult) float64 { return a.max }), 0))
		}
	}
	w("\n- %s\n- %s\n\n%s\n", inPhase, seedLoop, seedLossNote)
	w("\n%s\n", speedGaps)
	chk.end(ctx, "4")
}

// case1Report writes case 1: lock + unlock pairs on the shared server, and
// in the same rounds on a master with one replica attached.
func case1Report(ctx context.Context, t *testing.T, e *env, rounds int, w func(string, ...any), target func(string, bool, string)) {
	pair, err := startReplicaPair(ctx, e)
	if err != nil {
		t.Fatalf("case 1: %v", err)
	}
	defer pair.stop()
	w("## 1. Uncontended lock + unlock pairs/s (own key per goroutine)\n\n")
	w("lockwarden with its defaults: reentrant hash, 30 s lease with the watchdog, every attempt counted in the stats ring.\n\n")
	w("The last column is the noise floor: in each round lockwarden runs a second time after the peers, and its first run is divided by that one, a ratio that would be 1.00 on a quiet machine.\n\n")
	w("| C | lockwarden | bsm/redislock | redsync | ratio to redislock | ratio to redsync | lockwarden ÷ its second run |\n|---|---|---|---|---|---|---|\n")
	var replicaRows, splitRows []string
	for _, conc := range []int{1, 16, 64} {
		res := make([]series, len(lockPeers))
		acked := make([]series, len(replicaPeers))
		// CPU split of lockwarden and redislock: Redis µs, application µs,
		// idle cores, commands executed and inside scripts per pair.
		var split [2][5]series
		var redisRatio series // lockwarden's Redis µs per pair ÷ redislock's, per round
		var waits, noise series
		for r := 0; r < rounds; r++ {
			for i, p := range lockPeers {
				v, cs, err := measuredPairs(ctx, e, p, conc, time.Second)
				if err != nil {
					t.Fatalf("case 1 %s C=%d: %v", p.name, conc, err)
				}
				res[i] = append(res[i], v)
				if i < len(split) {
					split[i][0] = append(split[i][0], cs.redisUS)
					split[i][1] = append(split[i][1], cs.appUS)
					split[i][2] = append(split[i][2], cs.idleCores)
					split[i][3] = append(split[i][3], cs.executed)
					split[i][4] = append(split[i][4], cs.inside)
				}
			}
			redisRatio = append(redisRatio, split[0][0][r]/split[1][0][r])
			again, err := uncontended(ctx, e, lockPeers[0], conc, time.Second)
			if err != nil || again == 0 {
				t.Fatalf("case 1 %s C=%d, second run: %v (%v pairs/s)", lockPeers[0].name, conc, err, again)
			}
			noise = append(noise, res[0][r]/again)
			for i, p := range replicaPeers {
				v, err := uncontendedAcked(ctx, pair, p, conc, time.Second)
				if err != nil {
					t.Fatalf("case 1 with a replica, C=%d: %v", conc, err)
				}
				acked[i] = append(acked[i], v.rate)
				if p.acked {
					waits = append(waits, v.waitsPerPair)
				}
			}
		}
		rr, floor := ratios(res[0], res[1]).median(), noise.median()
		if conc > 1 {
			target(fmt.Sprintf("1. pairs/s ≥ 1.05× redislock at C=%d", conc), rr >= 1.05, fmt.Sprintf("%.2f× (noise floor %.2f)", rr, floor))
		} else {
			target("1. pairs/s ≥ 1.0× redislock at C=1", rr >= 1.0, fmt.Sprintf("%.2f× (noise floor %.2f)", rr, floor))
			inside := split[0][4].median()
			target("1. an uncontended pair runs ≤ 7 commands inside Redis's scripts", inside <= 7.05, fmt.Sprintf("%.2f (redislock %.2f)", inside, split[1][4].median()))
			cpu := redisRatio.median()
			target("1. Redis CPU per pair ≤ 1.1× redislock's at C=1", cpu <= 1.1, fmt.Sprintf("%.2f× (%.1f vs %.1f µs)", cpu, split[0][0].median(), split[1][0].median()))
		}
		w("| %d | %s | %s | %s | %s | %s | %s |\n", conc, cell(res[0], 0), cell(res[1], 0), cell(res[2], 0),
			cell(ratios(res[0], res[1]), 2), cell(ratios(res[0], res[2]), 2), cell(noise, 2))
		splitRows = append(splitRows, fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", conc,
			cell(split[0][0], 1), cell(split[1][0], 1), cell(redisRatio, 2), cell(split[0][1], 1), cell(split[1][1], 1),
			cell(split[0][2], 2), cell(split[1][2], 2),
			cell(split[0][3], 2), cell(split[1][3], 2), cell(split[0][4], 2), cell(split[1][4], 2)))
		replicaRows = append(replicaRows, fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %s |\n", conc,
			cell(acked[0], 0), cell(acked[1], 0), cell(acked[2], 0), cell(acked[3], 0),
			cell(ratios(acked[0], acked[1]), 2), cell(ratios(acked[0], acked[2]), 2), cell(waits, 2)))
	}
	w("\nWhere the CPU went in those runs, per pair: Redis's (`used_cpu_sys` + `used_cpu_user`), the application's " +
		"(this process, which runs every instance of case 1: getrusage), and the machine's idle CPUs over the run " +
		"(/proc/stat). An implementation that leaves CPUs idle while Redis stays under one core is waiting " +
		"on round trips rather than on CPU. Commands are INFO commandstats over the run, per pair: every command Redis executed (the calls " +
		"themselves included), and those the scripts ran.\n\n")
	w("| C | Redis µs/pair, lockwarden | Redis µs/pair, redislock | Redis µs ratio | app µs/pair, lockwarden | app µs/pair, redislock | idle CPUs, lockwarden | idle CPUs, redislock | commands/pair, lockwarden | commands/pair, redislock | inside scripts, lockwarden | inside scripts, redislock |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range splitRows {
		w("%s", row)
	}
	w("\nWith one replica attached (a second private master with one replica online, measured in the same rounds): " +
		"lockwarden's defaults pipeline a `WAIT 1` with each grant and renewal, not with releases (one per batch when calls from several goroutines go out together) and report a grant no replica confirmed as not obtained " +
		"(store/replica_ack.go), `ReplicaAcks: -1` turns that off, and redislock and redsync send no WAIT, so their grants are not known to be on the replica.\n\n")
	w("| C | lockwarden, acks on (defaults) | lockwarden, `ReplicaAcks: -1` | bsm/redislock | redsync | acks on / off | acks on / redislock | WAITs executed per pair (acks on) |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range replicaRows {
		w("%s", row)
	}
}

// decisionRounds is case 3 at one keyspace and concurrency: each peer's
// decisions/s for one second, the peers one after the other in each round.
func decisionRounds(ctx context.Context, t testing.TB, e *env, keys, conc, rounds int) []series {
	t.Helper()
	res := make([]series, len(limiterPeers))
	for r := 0; r < rounds; r++ {
		for i, p := range limiterPeers {
			v, err := decisions(ctx, e, p, keys, conc, time.Second)
			if err != nil {
				t.Fatalf("case 3 %s: %v", p.name, err)
			}
			res[i] = append(res[i], v)
		}
	}
	return res
}
