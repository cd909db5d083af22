package feed

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
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
	// statsCore's maps hold only what changed.
	statsCore
	Delta bool `json:"delta"`
	// Seq numbers the deltas since the last full frame, so a viewer (or
	// a benchmark) tells two deltas with the same contents apart.
	Seq     uint64   `json:"seq"`
	Removed []string `json:"removed"`
}

// deltaState is what every primed viewer holds after the last broadcast.
// Only live's goroutine (Feed.Observe) uses it.
type deltaState struct {
	limiters  map[string]inspect.Counts
	locks     map[string]inspect.Counts
	available map[string]int64
	waiters   map[string]int64
	since     map[string]int64 // waiting_since as last sent
	waits     map[string]LockWait
	pttl      map[string]int64 // as last sent
	pttlAt    map[string]int64 // the frame's at when it was sent
	who       map[string]holdersWho
	seq       uint64 // deltas sent since the last reset
	names     whoNames
	meta      *statsMeta // the rarely-changing parts as last broadcast
}

// next returns the delta from the previous frame to f and makes f the
// previous frame; f's maps must not be modified afterwards. The hub sends every stats frame to every primed viewer
// in order (a viewer that cannot keep up is disconnected), so each of
// them holds exactly this state.
func (d *deltaState) next(f statsCore) ([]byte, error) {
	out := statsDelta{statsCore: statsCore{Type: f.Type, BucketMS: f.BucketMS, WindowMS: f.WindowMS, At: f.At,
		Limiters: map[string]inspect.Counts{}, Locks: map[string]inspect.Counts{}, Available: map[string]int64{},
		PTTLMS: map[string]int64{}, Who: map[string]holdersWho{}, Waiters: map[string]int64{},
		WaitingSince: map[string]int64{}, Deadlocked: f.Deadlocked,
		Waits: map[string]LockWait{}, Deadlocks: f.Deadlocks,
		LockCount: f.LockCount, LimiterCount: f.LimiterCount, DiscoveredAt: f.DiscoveredAt}, Delta: true, Removed: []string{}}
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
	for name, n := range f.Waiters {
		if old, ok := d.waiters[name]; !ok || old != n {
			out.Waiters[name] = n
		}
	}
	for name := range d.waiters {
		if _, ok := f.Waiters[name]; !ok {
			out.Waiters[name] = 0 // its last waiter left
		}
	}
	changedInts(d.since, f.WaitingSince, out.WaitingSince)
	changedWaits(d.waits, f.Waits, out.Waits)
	for name, w := range f.Who {
		if old, ok := d.who[name]; !ok || !maps.Equal(old, w) {
			out.Who[name] = w
		}
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
	// f's maps are built afresh each tick and never modified afterwards,
	// so they are kept, not copied (three 1,000-entry copies a tick).
	d.limiters, d.locks, d.available, d.who, d.waiters, d.waits = f.Limiters, f.Locks, f.Available, f.Who, f.Waiters, f.Waits
	d.since = f.WaitingSince
	return json.Marshal(out)
}

// reset makes f, sent whole, the state every viewer holds.
func (d *deltaState) reset(f statsCore) {
	d.limiters, d.locks, d.available, d.who, d.waiters, d.waits = f.Limiters, f.Locks, f.Available, f.Who, f.Waiters, f.Waits
	d.since = f.WaitingSince
	d.pttl = maps.Clone(f.PTTLMS)
	d.seq = 0
	d.pttlAt = make(map[string]int64, len(f.PTTLMS))
	for name := range f.PTTLMS {
		d.pttlAt[name] = f.At
	}
}

// broadcastStats sends sn's stats frame. When its rarely-changing parts
// (statsMeta) changed, every viewer gets the whole frame; otherwise
// primed viewers get a delta and a new viewer the whole frame. The whole
// frame is encoded only on a tick where a viewer needs it, once: at 1,000
// objects, encoding it every tick just to compare was a third of the
// tick's work.
func (f *Feed) broadcastStats(sn *live.Snapshot) {
	fr := buildStatsFrame(sn)
	fr.Who = f.delta.holders(sn)
	// fr is not modified after this point: the hub may encode it later.
	full := sync.OnceValues(func() ([]byte, error) {
		core, err := json.Marshal(fr.statsCore)
		if err != nil {
			return nil, err
		}
		meta, err := json.Marshal(fr.statsMeta)
		if err != nil {
			return nil, err
		}
		return spliceMeta(core, meta), nil
	})
	whole := func() {
		b, err := full()
		if err != nil {
			f.log.Error("encoding stats frame", "err", err)
			return
		}
		// Every viewer holds fr from now on; until it is sent, the state
		// stays what they hold.
		f.delta.reset(fr.statsCore)
		f.delta.meta = &fr.statsMeta
		f.hub.broadcastStats(b, nil)
	}
	if !metaEqual(f.delta.meta, &fr.statsMeta) {
		whole()
		return
	}
	delta, err := f.delta.next(fr.statsCore)
	if err != nil || delta == nil {
		whole()
		return
	}
	f.hub.broadcastStats(delta, func() []byte {
		b, _ := full() // its meta and numbers encoded before; cannot fail
		return b
	})
}

// metaEqual says whether b encodes as a, the meta last broadcast (nil
// when none was), without encoding either.
func metaEqual(a, b *statsMeta) bool {
	return a != nil && maps.Equal(a.Kinds, b.Kinds) && maps.Equal(a.FirstSeen, b.FirstSeen) && maps.Equal(a.Stale, b.Stale) &&
		maps.EqualFunc(a.LimiterInfo, b.LimiterInfo, limiterInfoEqual) &&
		maps.EqualFunc(a.Holders, b.Holders, func(x, y []inspect.Holder) bool {
			return slices.EqualFunc(x, y, holderJSONEqual)
		})
}

func limiterInfoEqual(x, y limiterInfo) bool {
	gx, gy := x.Grants, y.Grants
	x.Grants, y.Grants = nil, nil
	return x == y && (gx == gy || (gx != nil && gy != nil && *gx == *gy))
}

// holderJSONEqual compares what a holder's JSON says: the recorded
// instants are not in it (they travel in who, per lock).
func holderJSONEqual(x, y inspect.Holder) bool {
	return x.ID == y.ID && x.Count == y.Count && x.Mode == y.Mode && x.LeaseMS == y.LeaseMS &&
		x.HeldMS == y.HeldMS && x.HeldSinceSeen == y.HeldSinceSeen && x.RenewedAgoMS == y.RenewedAgoMS && x.Who == y.Who &&
		(x.Client == y.Client || (x.Client != nil && y.Client != nil && *x.Client == *y.Client)) && maps.Equal(x.Facts, y.Facts)
}

// holderWho is who one holder of a lock is and since when, as instants:
// the browser turns them into "held 3m12s, renewed 4 s ago" against the
// frame's clock, so the entry changes only when the holder, its identity
// or its renewal does, not every tick.
type holderWho struct {
	// Who is the holder in words (inspect.DescribeHolder): "orders-api on
	// host-7 (pid 4211), owner 77", "unregistered client <uuid> (Redisson
	// or other), owner 77", or a token itself.
	Who string `json:"who"`
	// HeldSince is when the holder acquired (epoch ms, Redis time, from
	// lockwarden's scripts) or, with SinceSeen, when the console first saw
	// it; 0 when unknown.
	HeldSince int64 `json:"held_since,omitempty"`
	SinceSeen bool  `json:"since_seen,omitempty"`
	// RenewedAt is the holder's last renewal recorded by lockwarden's
	// scripts (epoch ms, Redis time); 0 when none was.
	RenewedAt int64 `json:"renewed_at,omitempty"`
}

// holdersWho is a lock's holders by id.
type holdersWho map[string]holderWho

// whoNames memoizes DescribeHolder per holder id for one registry read:
// the registry is read at most once a second, and at 10,000 locks the
// words would otherwise be formatted again on every tick.
type whoNames struct {
	reg   *inspect.Registry
	byID  map[string]string
	valid bool
}

func (w *whoNames) describe(reg *inspect.Registry, id string) string {
	// A registry that fails to read for long keeps its pointer; churning
	// holders must not grow the memo without end meanwhile.
	if !w.valid || w.reg != reg || len(w.byID) > maxWhoNames {
		w.reg, w.byID, w.valid = reg, make(map[string]string), true
	}
	s, ok := w.byID[id]
	if !ok {
		s = inspect.DescribeHolder(reg, id)
		w.byID[id] = s
	}
	return s
}

// maxWhoNames bounds whoNames between registry reads.
const maxWhoNames = 100_000

// holders returns who holds each lock of sn and since when.
func (d *deltaState) holders(sn *live.Snapshot) map[string]holdersWho {
	out := make(map[string]holdersWho, len(sn.Locks))
	for _, l := range sn.Locks {
		hw := make(holdersWho, len(l.Holders))
		for _, h := range l.Holders {
			e := holderWho{Who: d.names.describe(sn.Registry, h.ID), RenewedAt: h.RenewedMS}
			if h.AcquiredMS > 0 {
				e.HeldSince = h.AcquiredMS
			} else if t, ok := sn.HolderSeen[live.HolderKey(l.Name, h.ID)]; ok {
				e.HeldSince, e.SinceSeen = t.UnixMilli(), true
			}
			hw[h.ID] = e
		}
		out[l.Name] = hw
	}
	return out
}

// changedInts puts into out the entries of cur that differ from prev, and
// 0 for each name of prev that cur leaves out.
func changedInts(prev, cur, out map[string]int64) {
	for name, v := range cur {
		if old, ok := prev[name]; !ok || old != v {
			out[name] = v
		}
	}
	for name := range prev {
		if _, ok := cur[name]; !ok {
			out[name] = 0
		}
	}
}

// deadlockedLocks are the locks of sn's cycles, by name; nil for none.
func deadlockedLocks(sn *live.Snapshot) []string {
	var out []string
	for _, d := range sn.Deadlocks {
		for _, st := range d.Cycle {
			out = append(out, st.Lock)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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

// statsFrame is the websocket "stats" frame: its core, which every frame
// carries, and its meta. Kinds, FirstSeen, LimiterInfo and Holders change
// rarely next to the counts, yet at 1,000 objects they are most of the
// frame's bytes: they are sent together, only in a frame where one of them
// changed and in a viewer's first stats frame (see broadcastStats); a frame
// without them means "as last sent".
type statsFrame struct {
	statsCore
	statsMeta
}

// statsCore is the part of statsFrame every frame carries.
type statsCore struct {
	Type      string                    `json:"type"`
	BucketMS  int                       `json:"bucket_ms"`
	WindowMS  int                       `json:"window_ms"`
	At        int64                     `json:"at"`
	Limiters  map[string]inspect.Counts `json:"limiters"`
	Locks     map[string]inspect.Counts `json:"locks"`
	Available map[string]int64          `json:"available"`
	PTTLMS    map[string]int64          `json:"pttl_ms"`
	Who       map[string]holdersWho     `json:"who"`
	// Waiters counts the waiters of each lock that has any (a delta
	// sends 0 for a lock whose last waiter left); Deadlocks counts the
	// wait-for cycles the snapshot holds (live.Snapshot.Deadlocks).
	Waiters   map[string]int64 `json:"waiters"`
	Deadlocks int              `json:"deadlocks"`
	// WaitingSince is when the longest current waiter of each lock that
	// has one queued (epoch ms, Redis time; present.WaitingSince): a
	// viewer counts a stuck lock's wait on from it, so the entry changes
	// only when that waiter does (a delta sends 0 once nobody waits).
	WaitingSince map[string]int64 `json:"waiting_since"`
	// Deadlocked names the locks in a wait-for cycle, whole in every
	// frame (left out when there are none): with WaitingSince, the
	// order the wall's contention view keeps.
	Deadlocked []string `json:"deadlocked,omitempty"`
	// Waits is the 10 s wait summary of each lock that had a contended
	// acquisition in it (store/inspect/waits.go); a delta sends a zero
	// summary for a lock whose contention left the window. Left out when
	// empty: most frames have no contended lock, or none that changed.
	Waits        map[string]LockWait `json:"waits,omitempty"`
	LockCount    int                 `json:"lock_count"`
	LimiterCount int                 `json:"limiter_count"`
	// DiscoveredAt is when the discovery behind this frame's object set
	// started (epoch ms): a page rendered after it keeps its own rows.
	DiscoveredAt int64 `json:"discovered_at"`
}

// statsMeta is the rarely-changing part of statsFrame.
type statsMeta struct {
	// Kinds names the kind of every lock and limiter in the frame, so rows
	// added live show it; FirstSeen is when the console first saw each lock
	// (epoch ms).
	Kinds     map[string]inspect.Kind `json:"kinds"`
	FirstSeen map[string]int64        `json:"first_seen"`
	// LimiterInfo is what a row of a newly discovered limiter shows, and
	// which limiters' rejections are not visible.
	LimiterInfo map[string]limiterInfo      `json:"limiter_info"`
	Holders     map[string][]inspect.Holder `json:"holders"`
	// Stale names the objects shown as last read because their node did
	// not answer (its reason is left out: it would change every tick and
	// resend the meta).
	Stale map[string]present.Stale `json:"stale"`
}

type statusFrame struct {
	Type  string `json:"type"`
	Redis string `json:"redis"`
	At    int64  `json:"at"`
}

func buildStatsFrame(sn *live.Snapshot) statsFrame {
	f := statsFrame{statsCore{
		Type:         "stats",
		BucketMS:     inspect.BucketMS,
		WindowMS:     inspect.WindowMS,
		At:           sn.At,
		Limiters:     make(map[string]inspect.Counts, len(sn.Limiters)),
		Locks:        make(map[string]inspect.Counts, len(sn.Locks)),
		Available:    make(map[string]int64, len(sn.Limiters)),
		PTTLMS:       make(map[string]int64, len(sn.Locks)),
		Waiters:      map[string]int64{},
		WaitingSince: map[string]int64{},
		Waits:        map[string]LockWait{},
		Deadlocks:    len(sn.Deadlocks),
		LockCount:    len(sn.Locks),
		LimiterCount: len(sn.Limiters),
	}, statsMeta{
		Kinds:       make(map[string]inspect.Kind, len(sn.Locks)+len(sn.Limiters)),
		FirstSeen:   make(map[string]int64, len(sn.Locks)),
		LimiterInfo: make(map[string]limiterInfo, len(sn.Limiters)),
		Holders:     make(map[string][]inspect.Holder, len(sn.Locks)),
		Stale:       map[string]present.Stale{},
	}}
	if !sn.Discovered.IsZero() {
		f.DiscoveredAt = sn.Discovered.UnixMilli()
	}
	f.Deadlocked = deadlockedLocks(sn)
	for _, l := range sn.Limiters {
		f.Limiters[l.Name] = sn.Window(l.Name)
		if !l.AvailableUnknown {
			f.Available[l.Name] = l.Available
		}
		f.Kinds[l.Name] = l.Kind
		f.LimiterInfo[l.Name] = toLimiterInfo(l)
		f.markStale(l.Name, l.Stale)
	}
	for _, l := range sn.Locks {
		f.Locks[l.Name] = sn.Window(l.Name)
		f.PTTLMS[l.Name] = present.LeaseMS(l.PTTL)
		f.Holders[l.Name] = present.HoldersOf(l.Holders)
		if l.WaitersTotal > 0 {
			f.Waiters[l.Name] = l.WaitersTotal
		}
		if since := present.WaitingSince(&l); since > 0 {
			f.WaitingSince[l.Name] = since
		}
		if w := sn.Stats[l.Name].Wait; w != nil && w.TenSeconds.Contended > 0 {
			f.Waits[l.Name] = lockWaitOf(w.TenSeconds)
		}
		f.Kinds[l.Name] = l.Kind
		if t, ok := sn.FirstSeen[l.Name]; ok {
			f.FirstSeen[l.Name] = t.UnixMilli()
		}
		f.markStale(l.Name, l.Stale)
	}
	return f
}

// spliceMeta joins a core frame and its meta object into the full frame:
// both are JSON objects with distinct, non-empty field sets.
func spliceMeta(core, meta []byte) []byte {
	out := make([]byte, 0, len(core)+len(meta))
	out = append(out, core[:len(core)-1]...)
	out = append(out, ',')
	return append(out, meta[1:]...)
}
