package faulttest

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// errTally counts the errors callers saw, by documented or not.
type errTally struct {
	mu      sync.Mutex
	total   int
	byKind  map[string]int // documented errors by the first one they match
	undoc   map[string]int
	samples []string
}

func (e *errTally) saw(op string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if k := documentedKind(err); k != "" {
		if e.byKind == nil {
			e.byKind = map[string]int{}
		}
		e.byKind[op+" "+k]++
		return
	}
	if e.undoc == nil {
		e.undoc = map[string]int{}
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:] // the cause, without names that differ per call
	}
	e.undoc[op+": "+msg]++
}

// kinds lists the documented errors seen, most frequent first.
func (e *errTally) kinds() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var parts []string
	for k, n := range e.byKind {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Slice(parts, func(i, j int) bool {
		return e.byKind[parts[i][:strings.LastIndex(parts[i], " ")]] > e.byKind[parts[j][:strings.LastIndex(parts[j], " ")]]
	})
	return strings.Join(parts, ", ")
}

func (e *errTally) undocumented() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var parts []string
	for m, n := range e.undoc {
		parts = append(parts, fmt.Sprintf("%d× %q", n, m))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// failures collects a case's broken invariants; the case fails with every
// one of them.
type failures struct{ list []string }

func (f *failures) add(format string, args ...any) {
	f.list = append(f.list, fmt.Sprintf(format, args...))
}

func (f *failures) finish(t *testing.T) {
	t.Helper()
	for _, m := range f.list {
		t.Error(m)
	}
}

// TestLocksUnderFaults is the anchor test (16 clients × 100 unguarded
// increments → exactly 1,600) of every lock kind under every fault, with
// the checker proving no double grant, increasing fencing tokens, only
// documented errors, progress once the fault has happened, and no leaks.
// Each kind × fault case has its own redis-server and proxy (runMatrix).
func TestLocksUnderFaults(t *testing.T) {
	runMatrix(t, lockKinds, func(k lockKind) string { return k.name }, runLockCase)
}

type lockRun struct {
	e         *env
	kind      lockKind
	fault     fault
	key       string
	chk       checker
	errs      errTally
	counter   atomic.Int64 // the unguarded counter: Load, sleep, Store
	completed atomic.Int64
	readDirty atomic.Int64 // reads that saw the counter change under a read lock
	restarted sync.Once
	restartEr error
}

func runLockCase(t *testing.T, e *env, kind lockKind, f fault) (failures, string) {
	budget := faultBudget
	if f.isNone() {
		budget = baselineBudget
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	r := &lockRun{e: e, kind: kind, fault: f, key: "faulttest:" + kind.name + ":" + f.name}

	clients, closeClients := e.clients(workers+kind.readers, f.isNone())
	e.proxy.SetFault(f.proxy)
	bgCtx, stopBG := context.WithCancel(ctx)
	var bg sync.WaitGroup
	if f.background != nil {
		bg.Add(1)
		go func() { defer bg.Done(); f.background(bgCtx, e) }()
	}
	// Under a fault the workers stop once the row has run faultRun and
	// made lockProgress increments since the fault happened (or at the
	// budget); without one, once all 1,600 are done.
	prog := &progress{applied: f.applied, e: e, none: f.isNone()}
	if !f.isNone() {
		bg.Add(1)
		go func() {
			defer bg.Done()
			prog.watch(bgCtx, cancel, faultRun, lockProgress, r.completed.Load)
		}()
	}
	var writers, readers sync.WaitGroup
	writersDone := make(chan struct{})
	for i := range workers {
		writers.Add(1)
		c := clients[i]
		if kind.clients > 0 {
			c = clients[i%kind.clients]
		}
		go func() { defer writers.Done(); r.writer(ctx, i, kind.newLock(c, r.key)) }()
	}
	for i := range kind.readers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r.reader(ctx, workers+i, kind.newRead(clients[workers+i], r.key), writersDone)
		}()
	}
	writers.Wait()
	close(writersDone)
	readers.Wait()
	stopBG()
	bg.Wait()
	e.proxy.SetFault(Fault{})
	var passes int64 // in process, between workers of one Client
	for _, c := range clients[:kind.clients] {
		passes += c.WaitStats().Passes
	}
	closeClients()
	e.admin.Do(t.Context(), "CLIENT", "UNPAUSE")

	v := r.chk.check()
	var fl failures
	if len(v.violations) > 0 {
		fl.add("double grant: %d overlaps, first: %s", len(v.violations), v.violations[0])
	}
	if n := r.readDirty.Load(); n > 0 {
		fl.add("double grant: %d reads saw the counter change under a read lock", n)
	}
	// A holder whose lease ran out inside its critical section (a stalled
	// process on a loaded machine; the checker's "lease ran out") may lose
	// the one update it overlapped: that is the lease doing its job, not the
	// lock failing. Any other lost update is.
	if got, done := r.counter.Load(), r.completed.Load(); got > done || done-got > int64(len(v.leaseOut)) {
		fl.add("anchor: counter %d after %d critical sections (lost updates beyond the %d holds whose lease ran out)", got, done, len(v.leaseOut))
	}
	// The fault-free run must complete all 1,600. Under a fault, completing
	// them is liveness within a time bound (with 5 % of replies lost, each
	// uncertain release leaves the lock to its 1 s lease, so a run needs
	// minutes); what every fault row must show is progress once the fault
	// has happened: a lock that fails every call under it fails here.
	if done := r.completed.Load(); f.isNone() && done != workers*increments {
		fl.add("anchor: %d of %d increments within %v", done, workers*increments, budget)
	}
	if !f.isNone() {
		prog.check(&fl, "increments", lockProgress, r.completed.Load())
	}
	if kind.clients > 0 && f.isNone() && passes == 0 {
		fl.add("setup: no release passed the lock in process, so the row tested nothing of it")
	}
	if len(v.tokens) > 0 {
		fl.add("fencing: %d tokens did not increase, first: %s", len(v.tokens), v.tokens[0])
	}
	if u := r.errs.undocumented(); u != "" {
		fl.add("errors: undocumented errors: %s", u)
	}
	if r.restartEr != nil {
		fl.add("setup: restart: %v", r.restartEr)
	}
	if len(v.tokenReset) > 0 {
		fl.add("fencing across restart: %d tokens did not increase, first: %s", len(v.tokenReset), v.tokenReset[0])
	}
	for _, lo := range v.leaseOut {
		t.Logf("lease ran out: %s", lo)
	}
	detail := fmt.Sprintf("%d/%d increments%s, %d grants, %d errors (%s), lease ran out %d, delayed %d, reset %d",
		r.counter.Load(), workers*increments, prog.since(r.completed.Load()), v.grants, r.errs.total, r.errs.kinds(), len(v.leaseOut),
		e.proxy.Delayed.Load(), e.proxy.Reset.Load())
	if kind.clients > 0 {
		detail += fmt.Sprintf(", passed in process %d", passes)
	}
	return fl, detail
}

// writer takes the lock increments times and bumps the unguarded counter
// inside; reentrant kinds take and release a second level first.
func (r *lockRun) writer(ctx context.Context, id int, l locker) {
	holder := fmt.Sprintf("writer-%d", id)
	ls := leaseOf(r.kind.name)
	for done := 0; done < increments && ctx.Err() == nil; {
		called := time.Now()
		if err := r.lock(ctx, l); err != nil {
			continue // not acquired: the worker must not believe it holds
		}
		g := grant{holder: holder, called: called, granted: time.Now(), lease: ls, token: token(l)}
		if r.kind.reentrant {
			if err := r.lock(ctx, l); err == nil {
				r.unlock(ctx, l)
			}
		}
		// The critical section only has to leave room for another holder
		// to interleave: the checker proves exclusion from the grants'
		// intervals, and the unguarded counter is a second witness. A
		// yield does that without a timer per increment.
		v := r.counter.Load()
		runtime.Gosched()
		r.counter.Store(v + 1)
		// Restart while holding, after the increment, once the row has
		// made restartAfter increments (whoever holds then): the holder's
		// lease runs out in the downtime and others take the lock before it
		// releases (the checker's "lease ran out"); its increment is done.
		if r.fault.restart && r.completed.Load() >= restartAfter {
			r.restarted.Do(func() { r.restartEr = r.e.restart(&r.chk) })
		}
		done++
		r.completed.Add(1)
		g.release = time.Now()
		r.chk.record(g)
		r.unlock(ctx, l)
	}
}

// reader takes the read side until the writers are done, and checks the
// counter does not move while it holds it.
func (r *lockRun) reader(ctx context.Context, id int, l locker, writersDone <-chan struct{}) {
	holder := fmt.Sprintf("reader-%d", id)
	ls := leaseOf(r.kind.name)
	for range increments {
		select {
		case <-writersDone:
			return
		default:
		}
		called := time.Now()
		if err := r.lock(ctx, l); err != nil {
			continue
		}
		g := grant{holder: holder, shared: true, called: called, granted: time.Now(), lease: ls}
		before := r.counter.Load()
		time.Sleep(200 * time.Microsecond)
		if r.counter.Load() != before {
			r.readDirty.Add(1)
		}
		g.release = time.Now()
		r.chk.record(g)
		r.unlock(ctx, l)
	}
}

func (r *lockRun) lock(ctx context.Context, l locker) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := l.Lock(ctx)
	if err != nil {
		r.errs.saw("Lock", err)
	}
	return err
}

// unlock's error means "may or may not be released": tallied, never a
// violation.
func (r *lockRun) unlock(ctx context.Context, l locker) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.Unlock(ctx); err != nil {
		r.errs.saw("Unlock", err)
	}
}
