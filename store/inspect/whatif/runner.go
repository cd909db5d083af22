package whatif

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// ErrBusy: every replay slot of a Runner is taken and as many requests as
// it lets wait are waiting. Runner.Replay returns it inside a CodeLimited
// *inspect.Error that asks to retry after busyRetry.
var ErrBusy = errors.New("whatif: every replay slot is taken")

// busyRetry is how long a refused what-if is asked to wait: a replay of
// a fitted hour takes well under a millisecond, a fit a few.
const busyRetry = time.Second

// busy is the error of a refused request.
func busy() error {
	return &inspect.Error{Code: inspect.CodeLimited, Message: "too many what-ifs at once; try again in a moment",
		RetryAfter: busyRetry, Err: ErrBusy}
}

// Key names the demand a what-if replays: a limiter as the console read it,
// and the flush time its history ends at (web/history's meta "through").
// The demand of one key never changes, so one fit serves every proposal
// asked with it, and one replay every request for the same proposal.
type Key struct {
	Name    string
	Through int64
	Limiter Limiter
}

// Demand reads the demand of a key: the history steps, and the finer
// buckets the console still holds (Request.Fine).
type Demand func(ctx context.Context) (demand, fine Series, err error)

// Runner answers what-ifs for a console: each key's demand is read and
// fitted once, each proposal replayed once per key, and at most Slots fits
// or replays run at once, with at most Queue more requests waiting for a
// slot; any more get ErrBusy at once, as do those that waited MaxWait.
// A flood of viewers so costs at most Slots cores, and never the tick's.
// The zero value is ready to use.
type Runner struct {
	// Slots is how many fits and replays run at once (0: 1).
	Slots int
	// Queue is how many more requests may wait for a slot (0: 8).
	Queue int
	// MaxWait bounds a request's wait for a slot (0: 2 s).
	MaxWait time.Duration

	once    sync.Once
	slots   chan struct{}
	waiting atomic.Int64
	flights singleflight.Group

	mu      sync.Mutex
	fits    map[Key]*cached[*Fitted]
	results map[resultKey]*cached[*Result]

	stats struct {
		fits, replays, busy, running, maxRunning atomic.Int64
	}
	// hook, when set (tests), runs inside every replay's slot.
	hook func()
}

type resultKey struct {
	Key
	Proposed Settings
}

type cached[V any] struct {
	val  V
	used int64 // wall ms of the last request it served
}

// Cache bounds: a fit holds a step per 10 s of the hour and per 200 ms
// bucket still held (a few thousand); a result its minutes.
const (
	maxFits    = 32
	maxResults = 512
)

// RunnerStats are what a Runner did: fits and replays computed (not served
// from its cache), requests refused with ErrBusy, slots taken now and at
// most at once.
type RunnerStats struct {
	Fits, Replays, Busy, Running, MaxRunning int64
}

// Stats is a snapshot of the counters.
func (r *Runner) Stats() RunnerStats {
	return RunnerStats{Fits: r.stats.fits.Load(), Replays: r.stats.replays.Load(), Busy: r.stats.busy.Load(),
		Running: r.stats.running.Load(), MaxRunning: r.stats.maxRunning.Load()}
}

func (r *Runner) init() {
	r.once.Do(func() {
		r.slots = make(chan struct{}, max(r.Slots, 1))
		r.fits = map[Key]*cached[*Fitted]{}
		r.results = map[resultKey]*cached[*Result]{}
	})
}

// Replay answers the what-if of key's demand at proposed: from the cache,
// or computed once for all the requests asking at the same time. A
// proposal the limiter would refuse is refused before any work (as by
// Replay).
func (r *Runner) Replay(ctx context.Context, key Key, proposed Settings, demand Demand) (*Result, error) {
	r.init()
	if _, err := key.Limiter.model(proposed, true); err != nil {
		return nil, err
	}
	return compute(ctx, r, r.results, resultKey{key, proposed}, maxResults, &r.stats.replays,
		func(ctx context.Context) (func() (*Result, error), error) {
			fitted, err := r.fitted(ctx, key, demand)
			if err != nil {
				return nil, err
			}
			return func() (*Result, error) { return fitted.Replay(proposed, 0) }, nil
		})
}

// fitted is key's demand read and fitted, once per key.
func (r *Runner) fitted(ctx context.Context, key Key, demand Demand) (*Fitted, error) {
	return compute(ctx, r, r.fits, key, maxFits, &r.stats.fits,
		func(ctx context.Context) (func() (*Fitted, error), error) {
			d, fine, err := demand(ctx)
			if err != nil {
				return nil, err
			}
			return func() (*Fitted, error) { return Fit(key.Limiter, d, fine) }, nil
		})
}

// compute is m's value at k: from the cache, or made once for every
// request asking at the same time. prepare does what needs no slot (reads)
// and returns the work that does, run in a slot and counted in done.
func compute[K interface {
	comparable
	key() Key
}, V any](ctx context.Context, r *Runner, m map[K]*cached[V], k K, capacity int, done *atomic.Int64,
	prepare func(context.Context) (func() (V, error), error)) (V, error) {
	var zero V
	if v, ok := lookup(r, m, k); ok {
		return v, nil
	}
	v, err := r.flight(ctx, fmt.Sprintf("%T\x00%v", k, k), func(ctx context.Context) (any, error) {
		if v, ok := lookup(r, m, k); ok {
			return v, nil
		}
		work, err := prepare(ctx)
		if err != nil {
			return nil, err
		}
		release, err := r.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		done.Add(1)
		v, err := work()
		if err != nil {
			return nil, err
		}
		keep(r, m, k, v, capacity)
		return v, nil
	})
	if err != nil {
		return zero, err
	}
	return v.(V), nil
}

// flightTimeout bounds one shared computation: it runs on after the
// request that started it is gone, for the others waiting on it.
const flightTimeout = 10 * time.Second

// flight runs do once for every request asking under name at once; each
// waits until it ends or its own ctx does.
func (r *Runner) flight(ctx context.Context, name string, do func(context.Context) (any, error)) (any, error) {
	ch := r.flights.DoChan(name, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flightTimeout)
		defer cancel()
		return do(fctx)
	})
	select {
	case res := <-ch:
		return res.Val, res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// acquire takes a slot, waiting at most MaxWait when Queue allows it.
func (r *Runner) acquire(ctx context.Context) (release func(), err error) {
	took := func() func() {
		if n := r.stats.running.Add(1); n > r.stats.maxRunning.Load() {
			for cur := r.stats.maxRunning.Load(); n > cur && !r.stats.maxRunning.CompareAndSwap(cur, n); cur = r.stats.maxRunning.Load() {
			}
		}
		if r.hook != nil {
			r.hook()
		}
		return func() {
			r.stats.running.Add(-1)
			<-r.slots
		}
	}
	select {
	case r.slots <- struct{}{}:
		return took(), nil
	default:
	}
	queue := int64(r.Queue)
	if queue == 0 {
		queue = 8
	}
	if r.waiting.Add(1) > queue {
		r.waiting.Add(-1)
		r.stats.busy.Add(1)
		return nil, busy()
	}
	defer r.waiting.Add(-1)
	wait := r.MaxWait
	if wait == 0 {
		wait = 2 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r.slots <- struct{}{}:
		return took(), nil
	case <-timer.C:
	case <-ctx.Done():
	}
	r.stats.busy.Add(1)
	return nil, busy()
}

// Waiting is how many requests wait for a slot now.
func (r *Runner) Waiting() int64 { return r.waiting.Load() }

func lookup[K comparable, V any](r *Runner, m map[K]*cached[V], k K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := m[k]
	if e == nil {
		var zero V
		return zero, false
	}
	e.used = time.Now().UnixMilli()
	return e.val, true
}

// keep stores v under k. Entries of the same limiter at an older flush
// time are dropped (no request asks for them again); at capacity the
// entry asked for least recently goes.
func keep[K interface {
	comparable
	key() Key
}, V any](r *Runner, m map[K]*cached[V], k K, v V, capacity int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest, lru := int64(math.MaxInt64), k
	for old, e := range m {
		if ok := old.key(); ok.Name == k.key().Name && ok.Through < k.key().Through {
			delete(m, old)
			continue
		}
		if e.used < oldest {
			oldest, lru = e.used, old
		}
	}
	if _, ok := m[k]; !ok && len(m) >= capacity {
		delete(m, lru)
	}
	m[k] = &cached[V]{val: v, used: time.Now().UnixMilli()}
}

func (k Key) key() Key       { return k }
func (k resultKey) key() Key { return k.Key }
