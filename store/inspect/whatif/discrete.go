package whatif

import (
	"fmt"
	"math"
	"slices"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// model is one limiter algorithm's state, decided attempt by attempt
// (discrete, this file) or as a fluid (fluid.go). begin sets the time the
// demand begins (the limiter idle until then); admit decides a run of
// arrivals in order and returns how many it admits; copy is an independent
// copy, so the fit can try several arrivals from one state.
type model interface {
	begin(ms int64)
	admit(a arrivals) float64
	copy() model
}

// model validates s as the limiter's own edit path would (the same rules
// and fields, as a CodeInvalid *inspect.Error) and returns the algorithm
// that replays it, attempt by attempt when discrete, else as a fluid.
func (l Limiter) model(s Settings, discrete bool) (model, error) {
	if err := l.supported(); err != nil {
		return nil, err
	}
	switch l.Kind {
	case inspect.KindTokenBucket:
		// store.Limit.Validate is what TokenBucket.SetRate checks before
		// tokenbucket_modify.lua.
		if err := (store.Limit{Capacity: s.Rate, IntervalMS: s.IntervalMS}).Validate(); err != nil {
			return nil, inspect.ErrorOf(err)
		}
		if discrete {
			return &tokenBucket{max: float64(s.Rate), interval: s.IntervalMS}, nil
		}
		return &fluidBucket{max: float64(s.Rate), rate: 1 / s.IntervalMS}, nil
	case inspect.KindCounter:
		if err := checkCounter(s); err != nil {
			return nil, err
		}
	case inspect.KindRedissonLimiter:
		if field, msg := wire.CheckRedissonRate(s.Rate, s.IntervalMS); field != "" {
			return nil, inspect.Invalid(field, field+" "+msg)
		}
		if l.Algorithm != inspect.AlgorithmFixedWindow {
			if discrete {
				return &slidingWindow{rate: s.Rate, window: int64(s.IntervalMS)}, nil
			}
			return &fluidSliding{rate: float64(s.Rate), window: s.IntervalMS}, nil
		}
	}
	if discrete {
		return &fixedWindow{limit: s.Rate, window: int64(s.IntervalMS)}, nil
	}
	return &fluidWindow{fixedWindow{limit: s.Rate, window: int64(s.IntervalMS)}}, nil
}

// supported says why l cannot be replayed at any settings: a
// CodeUnsupported *inspect.Error matching ErrUnsupported.
func (l Limiter) supported() error {
	switch {
	case l.Kind == inspect.KindRedissonLimiter && l.PerClient:
		return &inspect.Error{Code: inspect.CodeUnsupported,
			Message: "this limiter cannot be replayed: a per-client limiter's demand is not recorded per client",
			Err:     fmt.Errorf("%w: a per-client Redisson limiter keeps a window per client, and its demand is recorded for all clients together", ErrUnsupported)}
	case l.Kind != inspect.KindTokenBucket && l.Kind != inspect.KindCounter && l.Kind != inspect.KindRedissonLimiter:
		return &inspect.Error{Code: inspect.CodeUnsupported, Message: fmt.Sprintf("%q is not a limiter kind: only limiters can be replayed", l.Kind),
			Err: ErrUnsupported}
	}
	return nil
}

// checkCounter applies store.Counter's rules (limit at least 1, a window of
// at least 1 ms) in the whole milliseconds counter_hit.lua's PEXPIRE
// takes; the limit is compared as a Lua number, so it stays below 2^53.
func checkCounter(s Settings) error {
	if s.Rate < 1 || s.Rate > store.MaxBucketCapacity {
		return inspect.Invalid("rate", fmt.Sprintf("rate must be between 1 and %d, got %d", int64(store.MaxBucketCapacity), s.Rate))
	}
	if math.IsNaN(s.IntervalMS) || s.IntervalMS < 1 || s.IntervalMS > store.MaxBucketCapacity || s.IntervalMS != math.Trunc(s.IntervalMS) {
		return inspect.Invalid("interval_ms", fmt.Sprintf("interval_ms must be a whole number of milliseconds of at least 1, got %g", s.IntervalMS))
	}
	return nil
}

// arrivals are the n attempts of one step [start, start+width) spread
// evenly: attempt j comes at start + floor((2j+1)·width / 2n) ms. Series
// bounds (MaxStepMS, MaxPointAttempts) keep 2·n·width below 2^61.
type arrivals struct{ start, width, n int64 }

func (a arrivals) at(j int64) int64 { return a.start + (2*j+1)*a.width/(2*a.n) }

// from is the index of the first attempt at or after t, n if none:
// floor(x) >= m for a whole m exactly when x >= m, so at(j) >= t when
// (2j+1)·width >= 2n·(t-start).
func (a arrivals) from(t int64) int64 {
	m := t - a.start
	if m <= 0 {
		return 0
	}
	if m > a.width {
		return a.n
	}
	num := 2*a.n*m - a.width
	if num <= 0 {
		return 0
	}
	return min(a.n, (num+2*a.width-1)/(2*a.width))
}

// tokenBucket is luascripts/tokenbucket_acquire.lua's bucket, one permit
// per attempt, in the script's float64 arithmetic.
type tokenBucket struct {
	max, interval float64 // max_permits, interval
	stored, last  float64 // stored_permits, last_mill_second
}

func (b *tokenBucket) begin(ms int64) { b.stored, b.last = b.max, float64(ms) }

func (b *tokenBucket) copy() model { c := *b; return &c }

func (b *tokenBucket) admit(a arrivals) float64 { return float64(b.step(a)) }

// refill is the script's: whole intervals since last, a full bucket
// restarting the clock at now.
func (b *tokenBucket) refill(now float64) {
	if elapsed := now - b.last; elapsed > 0 {
		k := math.Floor(elapsed / b.interval)
		if b.stored+k >= b.max {
			b.stored, b.last = b.max, now
		} else if k > 0 {
			b.stored += k
			b.last += k * b.interval
		}
	}
	b.stored = min(b.stored, b.max)
}

// ready is the first whole millisecond at which refill adds a permit. The
// ceiling is corrected with the script's own test, so a rounding of
// last + interval cannot make the replay disagree with it.
func (b *tokenBucket) ready() int64 {
	adds := func(t int64) bool { return math.Floor((float64(t)-b.last)/b.interval) >= 1 }
	t := int64(math.Ceil(b.last + b.interval))
	for !adds(t) {
		t++
	}
	for adds(t - 1) {
		t--
	}
	return t
}

func (b *tokenBucket) step(a arrivals) int64 {
	var admitted int64
	for j := int64(0); j < a.n; {
		now := a.at(j)
		b.refill(float64(now))
		if b.stored >= 1 {
			// Attempts in the same millisecond see the same refill.
			k := min(a.from(now+1)-j, int64(b.stored))
			b.stored -= float64(k)
			admitted += k
			j += k
			if b.stored == b.max-1 && j < a.n && math.Floor(float64(a.width/a.n)/b.interval) >= 1 {
				// One short of full, and the attempts are at least an
				// interval apart: each refill from here on reaches the
				// cap, moving last_mill_second to the attempt, and each
				// attempt takes one permit of it. All are admitted.
				admitted += a.n - j
				b.last = float64(a.at(a.n - 1))
				j = a.n
			}
			continue
		}
		// Empty: every attempt is rejected, and writes nothing, until a
		// whole interval has passed since last_mill_second.
		j = max(j+1, a.from(b.ready()))
	}
	return admitted
}

// fixedWindow is counter_hit.lua's window (and redisson_limiter_acquire's
// "fixed" branch): opened by the first attempt after the last one ended,
// admitting the first limit attempts, alive while now <= its start + window.
type fixedWindow struct {
	limit, window int64
	open          bool
	end           int64 // last millisecond of the open window
	count         int64 // attempts in it, at most limit
}

func (w *fixedWindow) begin(int64) { w.open = false }

func (w *fixedWindow) copy() model { c := *w; return &c }

func (w *fixedWindow) admit(a arrivals) float64 { return float64(w.step(a)) }

func (w *fixedWindow) step(a arrivals) int64 {
	var admitted int64
	for j := int64(0); j < a.n; {
		if now := a.at(j); !w.open || now > w.end {
			w.open, w.end, w.count = true, now+w.window, 0
		}
		k := a.from(w.end+1) - j
		took := min(k, w.limit-w.count)
		admitted += took
		w.count += took
		j += k
	}
	return admitted
}

// slidingWindow is redisson_limiter_acquire's "sliding" branch: grants in a
// queue by time, a grant at t returned once now >= t + window, an attempt
// admitted while fewer than rate permits are out.
type slidingWindow struct {
	rate, window int64
	grants       []grants // by time; grants[head:] are out
	head         int
	out          int64 // permits in grants[head:]
}

// grants are a run of one step's attempts, a.at(from) to a.at(to-1), each
// granted one permit.
type grants struct {
	a        arrivals
	from, to int64
}

func (w *slidingWindow) begin(int64) { w.grants, w.head, w.out = w.grants[:0], 0, 0 }

func (w *slidingWindow) copy() model {
	c := *w
	c.grants, c.head = slices.Clone(w.grants[w.head:]), 0
	return &c
}

func (w *slidingWindow) admit(a arrivals) float64 { return float64(w.step(a)) }

// expire returns the permits granted at or before now - window.
func (w *slidingWindow) expire(now int64) {
	for w.head < len(w.grants) {
		g := &w.grants[w.head]
		cut := min(g.to, g.a.from(now-w.window+1))
		if cut <= g.from {
			break
		}
		w.out -= cut - g.from
		if g.from = cut; g.from < g.to {
			break
		}
		w.head++
	}
	if w.head > 64 && w.head > len(w.grants)/2 {
		w.grants = w.grants[:copy(w.grants, w.grants[w.head:])]
		w.head = 0
	}
}

func (w *slidingWindow) step(a arrivals) int64 {
	var admitted int64
	for j := int64(0); j < a.n; {
		now := a.at(j)
		w.expire(now)
		if w.out < w.rate {
			// Attempts in the same millisecond find the same grants out.
			k := min(a.from(now+1)-j, w.rate-w.out)
			// The rest of the step is admitted when it fits in what is
			// free (returns only add to it), or when every grant out is
			// this step's and fewer than rate of its attempts fit in a
			// window: attempts at least gap apart, at most (window-1)/gap
			// before any one within the window.
			gap := a.width / a.n
			own := w.head == len(w.grants) || w.grants[w.head].a == a
			if w.out+a.n-j <= w.rate || gap > 0 && own && (w.window-1)/gap < w.rate {
				k = a.n - j
			}
			if last := len(w.grants) - 1; last >= w.head && w.grants[last].a == a && w.grants[last].to == j {
				w.grants[last].to += k
			} else {
				w.grants = append(w.grants, grants{a: a, from: j, to: j + k})
			}
			w.out += k
			admitted += k
			j += k
			continue
		}
		// Full: rejected until the oldest grant returns.
		oldest := w.grants[w.head]
		j = max(j+1, a.from(oldest.a.at(oldest.from)+w.window))
	}
	return admitted
}
