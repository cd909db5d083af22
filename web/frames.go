package web

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// pttlSlackMS is how far a lease may stray from the countdown a viewer
// runs from the last value it got before a delta frame carries it again:
// renewals jump by seconds, while tick jitter is a few milliseconds.
const pttlSlackMS = 250

// statsDelta is a stats frame for a viewer that has every frame since its
// first (full) one: the counts, availability and leases of objects whose
// numbers changed since the previous frame, and the names that are gone.
// A lease is sent only when it left the countdown the viewer already runs.
// The rarely-changing meta fields follow the same rule as in full frames.
type statsDelta struct {
	Type  string `json:"type"`
	Delta bool   `json:"delta"`
	// Seq numbers the deltas since the last full frame, so a viewer (or
	// a benchmark) tells two deltas with the same contents apart.
	Seq          uint64                    `json:"seq"`
	BucketMS     int                       `json:"bucket_ms"`
	WindowMS     int                       `json:"window_ms"`
	At           int64                     `json:"at"`
	Limiters     map[string]inspect.Counts `json:"limiters"`
	Locks        map[string]inspect.Counts `json:"locks"`
	Available    map[string]int64          `json:"available"`
	PTTLMS       map[string]int64          `json:"pttl_ms"`
	Removed      []string                  `json:"removed"`
	LockCount    int                       `json:"lock_count"`
	LimiterCount int                       `json:"limiter_count"`
	DiscoveredAt int64                     `json:"discovered_at"`
}

// deltaState is what every primed viewer holds after the last broadcast.
// Only the sampler's goroutine uses it.
type deltaState struct {
	limiters  map[string]inspect.Counts
	locks     map[string]inspect.Counts
	available map[string]int64
	pttl      map[string]int64 // as last sent
	pttlAt    map[string]int64 // the frame's at when it was sent
	seq       uint64           // deltas sent since the last reset
}

// next returns the delta from the previous frame to f and makes f the
// previous frame. The hub sends every stats frame to every primed viewer
// in order (a viewer that cannot keep up is disconnected), so each of
// them holds exactly this state.
func (d *deltaState) next(f statsCore) ([]byte, error) {
	out := statsDelta{Type: f.Type, Delta: true, BucketMS: f.BucketMS, WindowMS: f.WindowMS, At: f.At,
		Limiters: map[string]inspect.Counts{}, Locks: map[string]inspect.Counts{}, Available: map[string]int64{},
		PTTLMS: map[string]int64{}, Removed: []string{}, LockCount: f.LockCount, LimiterCount: f.LimiterCount,
		DiscoveredAt: f.DiscoveredAt}
	if d.limiters == nil {
		d.reset(f)
		return nil, nil
	}
	d.seq++
	out.Seq = d.seq
	changedCounts(d.limiters, f.Limiters, out.Limiters)
	changedCounts(d.locks, f.Locks, out.Locks)
	for name, v := range f.Available {
		if old, ok := d.available[name]; !ok || old != v {
			out.Available[name] = v
		}
	}
	for name, v := range f.PTTLMS {
		old, ok := d.pttl[name]
		if ok && v >= 0 && old >= 0 {
			predicted := max(0, old-(f.At-d.pttlAt[name]))
			if abs(v-predicted) <= pttlSlackMS {
				continue
			}
		} else if ok && v == old {
			continue
		}
		out.PTTLMS[name] = v
		d.pttl[name], d.pttlAt[name] = v, f.At
	}
	for name := range d.limiters {
		if _, ok := f.Limiters[name]; !ok {
			out.Removed = append(out.Removed, name)
		}
	}
	for name := range d.locks {
		if _, ok := f.Locks[name]; !ok {
			out.Removed = append(out.Removed, name)
			delete(d.pttl, name)
			delete(d.pttlAt, name)
		}
	}
	slices.Sort(out.Removed)
	d.limiters, d.locks, d.available = maps.Clone(f.Limiters), maps.Clone(f.Locks), maps.Clone(f.Available)
	return json.Marshal(out)
}

// reset makes f, sent whole, the state every viewer holds.
func (d *deltaState) reset(f statsCore) {
	d.limiters, d.locks, d.available = maps.Clone(f.Limiters), maps.Clone(f.Locks), maps.Clone(f.Available)
	d.pttl = maps.Clone(f.PTTLMS)
	d.seq = 0
	d.pttlAt = make(map[string]int64, len(f.PTTLMS))
	for name := range f.PTTLMS {
		d.pttlAt[name] = f.At
	}
}

func changedCounts(prev, cur, out map[string]inspect.Counts) {
	for name, c := range cur {
		if old, ok := prev[name]; !ok || old != c {
			out[name] = c
		}
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
