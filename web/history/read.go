package history

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Limiter reads a limiter's attempts over span ("1h": 10 s steps, "24h":
// 1 min steps), ending at the newest step the writer flushed, so every
// replica answers the same. One round trip: the meta key and one ring.
func (h *History) Limiter(ctx context.Context, name, span string) (LimiterHistory, error) {
	step, n, err := h.opt.spanStep(span)
	if err != nil {
		return LimiterHistory{}, err
	}
	key := FineKey(name)
	if step == CoarseStep {
		key = CoarseKey(name)
	}
	pipe := h.rdb.Pipeline()
	through := pipe.HGet(ctx, MetaKey, "through")
	ring := pipe.Get(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return LimiterHistory{}, err
	}
	out := LimiterHistory{StepS: int64(step / time.Second), Points: []Point{}}
	t, _ := through.Int64()
	if t <= 0 {
		return out, nil
	}
	buf, _ := ring.Bytes()
	out.Kept = len(buf) > 0
	last := (t - 1) / step.Milliseconds()
	out.Points = make([]Point, 0, n)
	for e := last - int64(n) + 1; e <= last; e++ {
		c, _ := ringAt(buf, e)
		out.Points = append(out.Points, Point{T: e * int64(step/time.Second), Acquired: c.acq, Rejected: c.rej, Errors: c.errs})
	}
	return out, nil
}

// Lock reads a lock's holds that overlap span ("1h" or "24h") before the
// newest flushed sample: running holds first (by start, then holder), then
// ended ones newest first, and its waits per minute over the span (the
// 1 min ring, whichever span). One round trip: the meta key, the two hold keys
// and the wait ring.
func (h *History) Lock(ctx context.Context, name, span string) (LockHistory, error) {
	step, n, err := h.opt.spanStep(span)
	if err != nil {
		return LockHistory{}, err
	}
	length := time.Duration(n) * step
	pipe := h.rdb.Pipeline()
	through := pipe.HGet(ctx, MetaKey, "through")
	ended := pipe.LRange(ctx, HoldsKey(name), 0, -1)
	running := pipe.HGetAll(ctx, OpenKey(name))
	waits := pipe.Get(ctx, WaitKey(name))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return LockHistory{}, err
	}
	out := LockHistory{Holds: []Hold{}, Wait: []WaitPoint{}}
	t, _ := through.Int64()
	if t <= 0 {
		return out, nil
	}
	since := msTime(t - length.Milliseconds())
	var open []Hold
	for holder, v := range running.Val() {
		if strings.HasPrefix(holder, "x:") {
			continue
		}
		if hd, ok := decodeOpen(holder, v); ok {
			open = append(open, hd)
		}
	}
	slices.SortFunc(open, func(a, b Hold) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return strings.Compare(a.Holder, b.Holder)
	})
	out.Holds = append(out.Holds, open...)
	for _, e := range ended.Val() {
		if hd, ok := decodeClosed(e); ok && !hd.To.Before(since) {
			out.Holds = append(out.Holds, hd)
		}
	}
	buf, _ := waits.Bytes()
	out.Kept = len(running.Val()) > 0 || len(ended.Val()) > 0 || len(buf) > 0
	out.Wait = waitsIn(buf, t, length)
	return out, nil
}

// LockWaits is a lock's waits per minute over a span, and their contended
// sum.
type LockWaits struct {
	Name      string
	Contended int64
	Wait      []WaitPoint
}

// MostContended returns up to n kept locks with the most contended
// acquisitions over span, most first (ties by name), leaving out those
// with none. The candidates are the 3n kept locks of highest score (in
// the index key; contended acquisitions raise it): two round trips,
// whatever the number of locks.
func (h *History) MostContended(ctx context.Context, n int, span string) ([]LockWaits, error) {
	step, steps, err := h.opt.spanStep(span)
	if err != nil || n <= 0 {
		return nil, err
	}
	// The index holds at most Top limiters and Top locks.
	members, err := h.rdb.ZRevRange(ctx, IndexKey, 0, int64(2*h.opt.top)).Result()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range members {
		if name, ok := strings.CutPrefix(m, memberLock); ok && len(names) < 3*n {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	pipe := h.rdb.Pipeline()
	through := pipe.HGet(ctx, MetaKey, "through")
	rings := make([]*redis.StringCmd, len(names))
	for i, name := range names {
		rings[i] = pipe.Get(ctx, WaitKey(name))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	t, _ := through.Int64()
	if t <= 0 {
		return nil, nil
	}
	var out []LockWaits
	for i, name := range names {
		buf, _ := rings[i].Bytes()
		lw := LockWaits{Name: name, Wait: waitsIn(buf, t, time.Duration(steps)*step)}
		for _, p := range lw.Wait {
			lw.Contended += p.Contended
		}
		if lw.Contended > 0 {
			out = append(out, lw)
		}
	}
	slices.SortFunc(out, func(a, b LockWaits) int {
		if a.Contended != b.Contended {
			return cmp.Compare(b.Contended, a.Contended)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out[:min(n, len(out))], nil
}

// waitsIn is ring's minutes with acquisitions over the length before
// through (ms), oldest first.
func waitsIn(ring []byte, through int64, length time.Duration) []WaitPoint {
	out := []WaitPoint{}
	last := (through - 1) / CoarseStep.Milliseconds()
	for m := last - int64(length/CoarseStep) + 1; len(ring) > 0 && m <= last; m++ {
		if p, ok := waitAt(ring, m); ok {
			out = append(out, p)
		}
	}
	return out
}
