package walk

import (
	"hash/maphash"
	"maps"
	"sync"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Rejected keys. The walk types every key it lists; an application's
// string no pattern or convention claims, a list, a set, and a hash that
// was no lock or limiter last pass are almost surely none this pass, yet sizing (HLEN) each hash a pass
// lists and reading (HGETALL, PTTL) the small ones again would be, at 1M
// keys with 100,000 small application hashes, about a fifth of the walk's
// Redis CPU (measured on Redis 7.0: HLEN 1.4-1.6 µs, HGETALL+PTTL 2.0-2.6
// µs per hash, against 1.7-2.2 µs per key for the SCAN page in between
// ticks).
//
// So the walk remembers the hashes it found to be no object (too many
// fields for any layout, or fields no layout has) and does not examine
// them again for a few passes. A name is forgotten after rejectPasses
// passes plus a jitter from its hash (so the re-reads of one pass's
// rejections spread over several passes): a key deleted and written again
// as a foreign lock under the same name is still found, a few passes late
// at worst. Keyspace notifications and announcements never consult the
// memory, and a name classified as an object is dropped from it. A full
// pass (Walker.Discover) collects its rejections the same way, and the
// walk starts from those of the pass before its first tick, so its first
// pass does not repeat the reads of the console's first full pass.
//
// Names are kept as 64-bit hashes (seeded per walker): 100,000 rejected
// hashes hold about 2 MB. Two names with the same hash would make the
// second one wait out the first's passes; at 10^6 names the chance is
// about 10^-8.

const (
	// rejectPasses is how many passes a rejected hash is not examined.
	rejectPasses = 4
	// rejectJitter spreads the re-examinations over this many more passes.
	rejectJitter = 4
	// maxRejects bounds the memory; past it, hashes are examined every
	// pass as before.
	maxRejects = 1 << 20
)

type rejectMemory struct {
	seed  maphash.Seed
	until map[uint64]int64 // name's hash -> the first pass that examines it again
	max   int
}

func newRejectMemory() *rejectMemory {
	return &rejectMemory{seed: maphash.MakeSeed(), until: map[uint64]int64{}, max: maxRejects}
}

// skip reports whether pass should not examine name (rejected lately).
func (m *rejectMemory) skip(name string, pass int64) bool {
	h := maphash.String(m.seed, name)
	until, ok := m.until[h]
	if !ok {
		return false
	}
	if pass >= until {
		delete(m.until, h)
		return false
	}
	return true
}

// add remembers name as no object, found in pass.
func (m *rejectMemory) add(name string, pass int64) {
	if len(m.until) >= m.max {
		return
	}
	h := maphash.String(m.seed, name)
	m.until[h] = pass + rejectPasses + int64(h%rejectJitter)
}

// drop forgets name (it is an object now).
func (m *rejectMemory) drop(name string) {
	if len(m.until) > 0 {
		delete(m.until, maphash.String(m.seed, name))
	}
}

// sweep forgets what is due by pass: names deleted from Redis are never
// listed again to be forgotten on the way.
func (m *rejectMemory) sweep(pass int64) {
	for h, until := range m.until {
		if pass >= until {
			delete(m.until, h)
		}
	}
}

func (m *rejectMemory) len() int { return len(m.until) }

// fullRejects is the memory full passes share: Discover may run while
// another does (each node's SCAN in its own goroutine, and callers of
// their own), so it is locked, once per page.
type fullRejects struct {
	mu     sync.Mutex
	m      *rejectMemory
	passes int64
}

// begin numbers a new full pass.
func (f *fullRejects) begin() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = newRejectMemory()
	}
	f.passes++
	return f.passes
}

// keep returns the keys of a page pass examines: not lockwarden's own, not
// rejected lately. It reuses keys' array.
func (f *fullRejects) keep(keys []string, pass int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := keys[:0]
	for _, k := range keys {
		if !wire.IsInternalKey(k) && !f.m.skip(k, pass) {
			out = append(out, k)
		}
	}
	return out
}

func (f *fullRejects) add(names []string, pass int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.m.add(n, pass)
	}
}

// end sweeps what is due once pass has listed every key.
func (f *fullRejects) end(pass int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m.sweep(pass)
}

// clone is the memory for a walk whose first pass is numbered 0.
func (f *fullRejects) clone() *rejectMemory {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := newRejectMemory()
	if f.m == nil {
		return m
	}
	m.seed = f.m.seed
	m.until = maps.Clone(f.m.until)
	for h, until := range m.until {
		m.until[h] = until - f.passes // rebased: full pass n is the walk's pass 0
	}
	return m
}
