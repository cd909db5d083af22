package live

import (
	"math"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// bucketRing keeps one limiter's complete 200 ms stats buckets, the newest
// windowTicks of them (three minutes): the finest demand the console has,
// which the what-if replays where it still holds it. Redis keeps a
// bucket only a few seconds (inspect.StatsRing), the history only 10 s
// steps. Counts are stored in 32 bits (saturating), 12 bytes a bucket.
type bucketRing struct {
	counts [][3]uint32 // by bucket number modulo its length
	newest int64       // the newest bucket stored
	n      int         // buckets stored, consecutive up to newest
}

// push stores the buckets of st the ring does not have yet, a bucket
// being complete two behind st.Bucket (as the history counts them: on a
// Cluster Bucket-1 can still grow). Buckets between the newest stored and
// the oldest st carries were not seen (the limiter was not read, or its
// ring was all empty): they are stored empty, as the history counts them.
func (r *bucketRing) push(st inspect.Summary) {
	if st.Recent == nil {
		return
	}
	done := st.Bucket - 2
	from := st.Bucket - inspect.RecentBuckets
	if r.n > 0 && from-r.newest > int64(len(r.counts)) {
		r.n = 0 // idle longer than the ring holds: nothing of it to keep
	}
	if r.n > 0 {
		if done <= r.newest {
			return
		}
		for b := r.newest + 1; b < from && b <= done; b++ {
			r.set(b, inspect.Counts{})
		}
		from = max(from, r.newest+1)
	}
	for b := from; b <= done; b++ {
		r.set(b, st.Recent[inspect.RecentBuckets-int(st.Bucket-b)])
	}
}

func (r *bucketRing) set(b int64, c inspect.Counts) {
	if r.n > 0 && b != r.newest+1 {
		r.n = 0 // not the next bucket: start again
	}
	r.counts[floorMod(b, int64(len(r.counts)))] = [3]uint32{clamp32(c.Acquired), clamp32(c.Rejected), clamp32(c.Errors)}
	r.newest = b
	r.n = min(r.n+1, len(r.counts))
}

// all is the stored buckets, oldest first, and the number of the first.
func (r *bucketRing) all() (int64, []inspect.Counts) {
	out := make([]inspect.Counts, r.n)
	first := r.newest - int64(r.n) + 1
	for i := range out {
		c := r.counts[floorMod(first+int64(i), int64(len(r.counts)))]
		out[i] = inspect.Counts{Acquired: int64(c[0]), Rejected: int64(c[1]), Errors: int64(c[2])}
	}
	return first, out
}

func clamp32(v int64) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

func floorMod(a, b int64) int64 { return (a%b + b) % b }

// Buckets returns name's complete stats buckets the console still holds
// (the last three minutes of them), oldest first, and the number of the
// first; none when it holds none.
func (h *Windows) Buckets(name string) (first int64, counts []inspect.Counts) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	r := h.buckets[name]
	if r == nil || r.n == 0 {
		return 0, nil
	}
	return r.all()
}

// pushBuckets stores each limiter's new complete buckets; the caller
// holds h.mu.
func (h *Windows) pushBuckets(l inspect.LimiterInfo, st inspect.Summary) {
	if st.Recent == nil {
		return
	}
	if h.buckets == nil {
		h.buckets = map[string]*bucketRing{}
	}
	r := h.buckets[l.Name]
	if r == nil {
		r = &bucketRing{counts: make([][3]uint32, h.size)}
		h.buckets[l.Name] = r
	}
	r.push(st)
}
