package bench

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestBenchSmoke runs every case for a moment against every peer, so the
// bench code is exercised by `make test` (numbers are not checked here:
// performance is measured by `make bench`, never asserted in tests).
func TestBenchSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newEnv(t)
	for _, p := range lockPeers {
		if rate, err := uncontended(ctx, e, p, 16, 100*time.Millisecond); err != nil || rate <= 0 {
			t.Errorf("case 1 %s: %v pairs/s, %v", p.name, rate, err)
		}
		r, err := contended(ctx, e, p, 8, 200*time.Microsecond, 300*time.Millisecond)
		if err != nil || r.acquisition == 0 || r.jain <= 0 || r.jain > 1 {
			t.Errorf("case 2 %s: %+v, %v", p.name, r, err)
		}
	}
	for _, p := range limiterPeers {
		for _, keys := range []int{1, 1000} {
			if rate, err := decisions(ctx, e, p, keys, 16, 100*time.Millisecond); err != nil || rate <= 0 {
				t.Errorf("case 3 %s %d keys: %v decisions/s, %v", p.name, keys, rate, err)
			}
		}
	}
	// Case 4 needs 5 s before its first steady-state window; the peers run
	// side by side on their own keys.
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
}
