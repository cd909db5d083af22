package faulttest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// limiterCalls bounds each caller's calls in one case; limiterRun bounds
// the case's time.
const (
	limiterCalls = 400
	limiterRun   = 3 * time.Second
)

// TestLimitersUnderFaults: no 1 s window admits more than capacity +
// refill, whatever the faults; only documented errors; no leaks.
func TestLimitersUnderFaults(t *testing.T) {
	m := &matrix{}
	t.Cleanup(func() { t.Log(m) })
	goroutines := runtime.NumGoroutine()
	t.Run("kinds", func(t *testing.T) {
		for _, kind := range limiterKinds {
			t.Run(kind.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				subs := e.subscriptions(t.Context())
				for _, f := range faults {
					t.Run(f.name, func(t *testing.T) { runLimiterCase(t, e, kind, f, m) })
				}
				t.Run("subscriptions", func(t *testing.T) { checkSubscriptions(t, e, subs, kind.name, m) })
			})
		}
	})
	t.Run("goroutines", func(t *testing.T) { checkGoroutines(t, goroutines) })
}

func runLimiterCase(t *testing.T, e *env, kind limiterKind, f fault, m *matrix) {
	ctx, cancel := context.WithTimeout(t.Context(), caseBudget)
	defer cancel()
	key := "faulttest:" + kind.name + ":" + f.name
	if err := kind.setup(ctx, storeClient(e), key); err != nil {
		t.Fatalf("setup: %v", err)
	}
	delayed0, reset0 := e.proxy.Delayed.Load(), e.proxy.Reset.Load()
	clients, closeClients := e.clients(workers, false)
	defer closeClients()
	e.proxy.SetFault(f.proxy)
	runCtx, stop := context.WithTimeout(ctx, limiterRun)
	defer stop()
	var bg sync.WaitGroup
	var restartErr error
	if f.background != nil || f.restart {
		bg.Add(1)
		go func() {
			defer bg.Done()
			if !f.restart {
				f.background(runCtx, e)
				return
			}
			time.Sleep(500 * time.Millisecond)
			if restartErr = e.restart(nil); restartErr == nil {
				restartErr = kind.setup(ctx, storeClient(e), key) // the limiter went with the data
			}
		}()
	}
	var (
		mu   sync.Mutex
		adms []admission
		errs errTally
		wg   sync.WaitGroup
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := kind.open(clients[i], key)
			for range limiterCalls {
				if runCtx.Err() != nil {
					return
				}
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
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	stop()
	bg.Wait()
	e.proxy.SetFault(Fault{})
	e.admin.Do(ctx, "CLIENT", "UNPAUSE")

	var fl failures
	if ex := windowExcess(adms, kind.bound); ex != "" {
		fl.add("over limit: %s", ex)
	}
	if u := errs.undocumented(); u != "" {
		fl.add("errors: undocumented errors: %s", u)
	}
	if restartErr != nil {
		fl.add("setup: restart: %v", restartErr)
	}
	detail := fmt.Sprintf("%d admitted (bound %d per second), %d errors, delayed %d, reset %d",
		len(adms), kind.bound, errs.total, e.proxy.Delayed.Load()-delayed0, e.proxy.Reset.Load()-reset0)
	held := "yes"
	if len(fl.list) > 0 {
		held = "NO"
		var heads []string
		for _, s := range fl.list {
			heads = append(heads, s[:strings.Index(s, ":")])
		}
		detail = strings.Join(heads, "+") + "; " + detail
	}
	m.add(kind.name, f.name, held, detail)
	fl.finish(t)
}
