package faulttest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limiterRun is how long a limiter row runs at the least (see faultRun).
const limiterRun = 3 * time.Second

// TestLimitersUnderFaults: no 1 s window admits more than capacity +
// refill, and once the fault has happened the limiter admits at least its
// floor, whatever the faults; only documented errors; no leaks. Each kind
// × fault case has its own redis-server and proxy (runMatrix).
func TestLimitersUnderFaults(t *testing.T) {
	runMatrix(t, limiterKinds, func(k limiterKind) string { return k.name }, runLimiterCase)
}

func runLimiterCase(t *testing.T, e *env, kind limiterKind, f fault) (failures, string) {
	ctx, cancel := context.WithTimeout(t.Context(), faultBudget)
	defer cancel()
	key := "faulttest:" + kind.name + ":" + f.name
	if err := kind.setup(ctx, storeClient(e), key); err != nil {
		t.Fatalf("setup: %v", err)
	}
	clients, closeClients := e.clients(workers, false)
	defer closeClients()
	e.proxy.SetFault(f.proxy)
	// The run ends once it has lasted limiterRun and the limiter has
	// admitted its floor since the fault happened, or at the budget.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu       sync.Mutex
		adms     []admission
		admitted atomic.Int64
		errs     errTally
		wg       sync.WaitGroup
		bg       sync.WaitGroup
	)
	prog := &progress{applied: f.applied, e: e, none: f.isNone()}
	bg.Add(1)
	go func() { defer bg.Done(); prog.watch(runCtx, stop, limiterRun, int64(kind.floor), admitted.Load) }()
	var restartErr error
	if f.background != nil || f.restart {
		bg.Add(1)
		go func() {
			defer bg.Done()
			if !f.restart {
				f.background(runCtx, e)
				return
			}
			select {
			case <-runCtx.Done():
				return
			case <-time.After(500 * time.Millisecond): // mid-run: the limiter has state to lose
			}
			if restartErr = e.restart(nil); restartErr == nil {
				restartErr = kind.setup(ctx, storeClient(e), key) // the limiter went with the data
			}
		}()
	}
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := kind.open(clients[i], key)
			for runCtx.Err() == nil {
				start := time.Now()
				ok, err := l.admit(runCtx)
				end := time.Now()
				if err != nil {
					errs.saw("admit", err)
				}
				if ok {
					mu.Lock()
					adms = append(adms, admission{start: start, end: end})
					mu.Unlock()
					admitted.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	stop()
	bg.Wait()
	e.proxy.SetFault(Fault{})
	e.admin.Do(t.Context(), "CLIENT", "UNPAUSE")

	var fl failures
	if ex := windowExcess(adms, kind.bound); ex != "" {
		fl.add("over limit: %s", ex)
	}
	prog.check(&fl, "admissions", int64(kind.floor), admitted.Load())
	if u := errs.undocumented(); u != "" {
		fl.add("errors: undocumented errors: %s", u)
	}
	if restartErr != nil {
		fl.add("setup: restart: %v", restartErr)
	}
	detail := fmt.Sprintf("%d admitted%s (floor %d), bound %d per second, %d errors, delayed %d, reset %d",
		len(adms), prog.since(admitted.Load()), kind.floor, kind.bound, errs.total, e.proxy.Delayed.Load(), e.proxy.Reset.Load())
	return fl, detail
}
