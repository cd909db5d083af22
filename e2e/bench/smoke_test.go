package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBenchSmoke runs every case for a moment against every peer, so the
// bench code is exercised by `make test` (numbers are not checked here:
// performance is measured by `make bench`, never asserted in tests). Like
// the report, it checks after each case that the case stopped everything
// it started.
func TestBenchSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newEnv(t)
	admin := e.client(1)
	chk := newCaseCheck(t, admin.Client)
	chk.begin()
	for _, p := range lockPeers {
		if rate, err := uncontended(ctx, e, p, 16, 100*time.Millisecond); err != nil || rate <= 0 {
			t.Errorf("case 1 %s: %v pairs/s, %v", p.name, rate, err)
		}
		r, err := contended(ctx, e, p, 8, 200*time.Microsecond, 300*time.Millisecond)
		if err != nil || r.acquisition == 0 || r.jain <= 0 || r.jain > 1 {
			t.Errorf("case 2 %s: %+v, %v", p.name, r, err)
		}
	}
	// Case 1 with a replica: lockwarden's acknowledged and unacknowledged
	// rows only (the peers' are the rows above, on another server); the
	// pair is stopped before the check.
	if pair, err := startReplicaPair(ctx, e); err != nil {
		t.Errorf("case 1 with a replica: %v", err)
	} else {
		for _, p := range replicaPeers[:2] {
			if r, err := uncontendedAcked(ctx, pair, p, 16, 100*time.Millisecond); err != nil || r.rate <= 0 {
				t.Errorf("case 1 with a replica, %s: %+v, %v", p.name, r, err)
			}
		}
		pair.stop()
	}
	chk.end(ctx, "1-2")
	chk.begin()
	for _, p := range limiterPeers {
		for _, keys := range []int{1, 1000} {
			if rate, err := decisions(ctx, e, p, keys, 16, 100*time.Millisecond); err != nil || rate <= 0 {
				t.Errorf("case 3 %s %d keys: %v decisions/s, %v", p.name, keys, rate, err)
			}
		}
	}
	chk.end(ctx, "3")
	// Case 4 needs 5 s before its first steady-state window; the peers run
	// side by side on their own keys.
	chk.begin()
	peers := append([]limiterPeer{seed001Peer()}, limiterPeers...)
	var wg sync.WaitGroup
	for _, p := range peers {
		for _, how := range []arrivals{inPhase, seedLoop} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := accuracy(ctx, e, p, 5200*time.Millisecond, how)
				if err != nil || r.mean <= 0 {
					t.Errorf("case 4 %s, %v: %+v, %v", p.name, how, r, err)
				}
			}()
		}
	}
	wg.Wait()
	chk.end(ctx, "4")
}

// TestBenchSmokeConsole is cases 5-8 in miniature: 50 limiters, 20
// viewers, 100 events, 20,000 other keys, and case 8's history rows with
// 8 busy locks and 50 busy limiters.
func TestBenchSmokeConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newEnv(t)
	only, withDisc, noEval, err := samplerRounds(ctx, e, 50, 1, 600*time.Millisecond)
	if err != nil || len(only) != 1 || len(withDisc) != 1 || len(noEval) != 1 || only[0].roundTrips <= 0 || only[0].cmds < 100 {
		t.Errorf("case 5: %+v %+v %+v, %v", only, withDisc, noEval, err)
	}
	t.Logf("case 5: %+v %+v %+v", only, withDisc, noEval)
	prefix, cleanup, err := fanoutObjects(ctx, e, 10)
	defer cleanup()
	if err != nil {
		t.Fatalf("case 6 setup: %v", err)
	}
	r6, err := fanout(ctx, e, prefix, 20, time.Second)
	if err != nil || r6.perViewer <= 0.5 || r6.p99 <= 0 || r6.closed != 0 {
		t.Errorf("case 6: %+v, %v", r6, err)
	}
	r7, err := eventLatency(ctx, e, 200, 500*time.Millisecond)
	if err != nil || r7.lost != 0 || r7.p99 <= 0 {
		t.Errorf("case 7: %+v, %v", r7, err)
	}
	t.Logf("case 6: %+v; case 7: %+v", r6, r7)
	k := discoveryKeys{other: 20000, locks: 200, limiters: 50}
	rdb, err := discoveryServer(ctx, t, k)
	if err != nil {
		t.Fatalf("case 8 setup: %v", err)
	}
	r8, err := discoverOnce(ctx, rdb, k, 200*time.Millisecond)
	if err != nil || r8.probes == 0 {
		t.Errorf("case 8: %+v, %v", r8, err)
	}
	t.Logf("case 8: %+v", r8)
	hl := historyLoad{hotLocks: 8, holders: 4, hold: 300 * time.Millisecond, perSec: 50,
		rounds: 1, window: 500 * time.Millisecond, ready: listed, flushes: 2}
	hc, err := historyCost(ctx, rdb, k, hl)
	if err != nil || len(hc.rounds) != 1 || hc.mem.limiters == 0 || hc.mem.locks == 0 || hc.mem.bytes == 0 ||
		hc.status.LimitersKept == 0 || hc.status.Flushes == 0 || hc.histCmds == 0 {
		t.Errorf("case 8, history: %+v, %v", hc, err)
	}
	var rows strings.Builder
	rs := []*case8Size{{keys: k.other + k.locks + k.limiters, history: hc}}
	historyRows(func(format string, args ...any) { fmt.Fprintf(&rows, format, args...) }, rs)
	historyTargets(func(what string, _ bool, got string) { fmt.Fprintf(&rows, "\n%s: %s", what, got) }, rs[0])
	if !strings.Contains(rows.String(), "history memory") {
		t.Errorf("case 8's history rows and targets:\n%s", rows.String())
	}
	t.Logf("case 8, history:\n%s", rows.String())
}
