package web

import (
	"context"
	"encoding/json"
	"maps"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// expiryGrace is how many ticks a vanished lock waits for its unlock
// message before the sampler calls it expired: the message travels on
// another connection and may arrive after the sample that saw the key gone.
const expiryGrace = 2

// snapshot is the sampler's view after one tick. Published whole through an
// atomic pointer and never modified afterwards, so handlers read it freely.
type snapshot struct {
	Taken     time.Time // local time the tick started
	At        int64     // epoch ms: the end of the 1 s window (start of the newest bucket)
	Locks     []store.LockInfo
	Limiters  []store.LimiterInfo
	Stats     map[string]store.Summary
	FirstSeen map[string]time.Time // lock name -> when the console first discovered it
	// Discovered is when the discovery pass that chose these names
	// started (local time); pages rendered later may know newer objects.
	Discovered time.Time
	RedisUp    bool
}

// window returns the last complete 1 s window of name.
func (sn *snapshot) window(name string) store.Counts {
	if sn == nil {
		return store.Counts{}
	}
	return sn.Stats[name].Window
}

// statsFrame is the websocket "stats" frame.
type statsFrame struct {
	Type         string                    `json:"type"`
	BucketMS     int                       `json:"bucket_ms"`
	WindowMS     int                       `json:"window_ms"`
	At           int64                     `json:"at"`
	Limiters     map[string]store.Counts   `json:"limiters"`
	Locks        map[string]store.Counts   `json:"locks"`
	Available    map[string]int64          `json:"available"`
	PTTLMS       map[string]int64          `json:"pttl_ms"`
	Holders      map[string][]store.Holder `json:"holders"`
	LockCount    int                       `json:"lock_count"`
	LimiterCount int                       `json:"limiter_count"`
	// Kinds names the kind of every lock and limiter in the frame, so rows
	// added live show it; FirstSeen is when the console first saw each lock
	// (epoch ms).
	Kinds     map[string]store.Kind `json:"kinds"`
	FirstSeen map[string]int64      `json:"first_seen"`
	// LimiterInfo is what a row of a newly discovered limiter shows, and
	// which limiters' rejections are not visible.
	LimiterInfo map[string]limiterInfoJSON `json:"limiter_info"`
	// DiscoveredAt is when the discovery behind this frame's object set
	// started (epoch ms): a page rendered after it keeps its own rows.
	DiscoveredAt int64 `json:"discovered_at"`
}

type statusFrame struct {
	Type  string `json:"type"`
	Redis string `json:"redis"`
	At    int64  `json:"at"`
}

type pendingExpiry struct {
	lastPresent time.Time // start of the last tick that saw the lock
	ticks       int
}

// sampler reads Redis once per tick for every viewer together.
type sampler struct {
	s    *Server
	snap atomic.Pointer[snapshot]
	hist *history

	// Owned by the run goroutine.
	locks, limiters []string
	lastDiscover    time.Time
	firstSeen       map[string]time.Time
	present         map[string]time.Time // lock -> start of the tick that last saw it
	pending         map[string]pendingExpiry
	redisUp         *bool
}

func newSampler(s *Server) *sampler {
	return &sampler{
		s:         s,
		hist:      newHistory(historyTicks),
		firstSeen: make(map[string]time.Time),
		present:   make(map[string]time.Time),
		pending:   make(map[string]pendingExpiry),
	}
}

// latest is the newest snapshot; nil before the first successful tick.
func (sm *sampler) latest() *snapshot { return sm.snap.Load() }

func (sm *sampler) run(ctx context.Context) {
	every := sm.s.cfg.tickInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		sm.tick(ctx, every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (sm *sampler) tick(ctx context.Context, every time.Duration) {
	start := time.Now()
	m := sm.s.metrics
	defer func() {
		d := int64(time.Since(start))
		m.ticks.Add(1)
		m.lastTickNanos.Store(d)
		m.tickNanosSum.Add(d)
	}()
	runCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, max(2*time.Second, 5*every))
	defer cancel()

	if sm.lastDiscover.IsZero() || start.Sub(sm.lastDiscover) >= sm.s.cfg.discoverInterval() {
		d, err := sm.s.st.Discover(ctx, sm.s.cfg.match())
		if err != nil {
			sm.fail(runCtx, err)
			return
		}
		sm.lastDiscover = start
		sm.adopt(d, start)
	}
	smp, err := sm.s.st.Sample(ctx, sm.locks, sm.limiters)
	if err != nil {
		sm.fail(runCtx, err)
		return
	}
	sm.setRedis(true)
	sm.detectExpiries(smp, start)
	sn := sm.publish(smp, start)
	frame, err := json.Marshal(buildStatsFrame(sn))
	if err != nil {
		sm.s.log.Error("encoding stats frame", "err", err)
		return
	}
	sm.s.hub.broadcast(frame)
}

// adopt takes a discovery pass as the set of names to sample.
func (sm *sampler) adopt(d *store.Discovered, now time.Time) {
	sm.locks = sm.locks[:0]
	seen := make(map[string]bool, len(d.Locks))
	for _, l := range d.Locks {
		sm.locks = append(sm.locks, l.Name)
		seen[l.Name] = true
		if _, ok := sm.firstSeen[l.Name]; !ok {
			sm.firstSeen[l.Name] = now
		}
	}
	for name := range sm.firstSeen {
		if !seen[name] {
			delete(sm.firstSeen, name)
		}
	}
	sm.limiters = sm.limiters[:0]
	names := make(map[string]bool, len(d.Limiters))
	for _, l := range d.Limiters {
		sm.limiters = append(sm.limiters, l.Name)
		names[l.Name] = true
	}
	sm.hist.retain(names)
}

func (sm *sampler) fail(runCtx context.Context, err error) {
	if runCtx.Err() != nil {
		return // shutting down, not a Redis problem
	}
	sm.s.metrics.tickErrors.Add(1)
	sm.s.metrics.redisErrors.Add(1)
	if sm.redisUp == nil || *sm.redisUp {
		sm.s.log.Warn("sampling Redis failed", "err", err)
	}
	sm.setRedis(false)
	if prev := sm.latest(); prev != nil && prev.RedisUp {
		down := *prev
		down.RedisUp = false
		sm.snap.Store(&down)
	} else if prev == nil {
		sm.snap.Store(&snapshot{RedisUp: false, Stats: map[string]store.Summary{}, FirstSeen: map[string]time.Time{}})
	}
}

// setRedis broadcasts a status frame when Redis reachability changes; the
// hub replays the latest one to every new viewer.
func (sm *sampler) setRedis(up bool) {
	if sm.redisUp != nil && *sm.redisUp == up {
		return
	}
	sm.redisUp = &up
	state := "down"
	if up {
		state = "up"
	}
	frame, _ := json.Marshal(statusFrame{Type: "status", Redis: state, At: time.Now().UnixMilli()})
	sm.s.hub.broadcastStatus(frame)
}

// detectExpiries reports locks that vanished without any event: a lease
// that ran out, or a delete by something that does not publish.
func (sm *sampler) detectExpiries(smp *store.Sample, start time.Time) {
	now := make(map[string]bool, len(smp.Locks))
	for _, l := range smp.Locks {
		now[l.Name] = true
	}
	for name, last := range sm.present {
		if !now[name] {
			sm.pending[name] = pendingExpiry{lastPresent: last}
			delete(sm.present, name)
		}
	}
	for name := range now {
		sm.present[name] = start
		delete(sm.pending, name) // back again: it was re-taken
	}
	for name, p := range sm.pending {
		switch {
		case sm.s.events.heardSince(name, p.lastPresent):
			delete(sm.pending, name)
		case p.ticks >= expiryGrace:
			delete(sm.pending, name)
			sm.s.publishEvent(eventFrame{Type: store.EventExpired, Name: name, At: time.Now()})
		default:
			p.ticks++
			sm.pending[name] = p
		}
	}
}

func (sm *sampler) publish(smp *store.Sample, start time.Time) *snapshot {
	at := smp.At
	if at.IsZero() {
		at = start
	}
	sn := &snapshot{
		Taken:      start,
		At:         at.UnixMilli() / store.BucketMS * store.BucketMS,
		Locks:      smp.Locks,
		Limiters:   smp.Limiters,
		Stats:      smp.Stats,
		FirstSeen:  maps.Clone(sm.firstSeen),
		Discovered: sm.lastDiscover,
		RedisUp:    true,
	}
	if sn.Stats == nil {
		sn.Stats = map[string]store.Summary{}
	}
	for _, l := range smp.Limiters {
		st := sn.Stats[l.Name]
		sm.hist.push(l.Name, point{At: sn.At, Window: st.Window, Newest: st.Newest})
	}
	sm.snap.Store(sn)
	return sn
}

func buildStatsFrame(sn *snapshot) statsFrame {
	f := statsFrame{
		Type:         "stats",
		BucketMS:     store.BucketMS,
		WindowMS:     store.WindowMS,
		At:           sn.At,
		Limiters:     make(map[string]store.Counts, len(sn.Limiters)),
		Locks:        make(map[string]store.Counts, len(sn.Locks)),
		Available:    make(map[string]int64, len(sn.Limiters)),
		PTTLMS:       make(map[string]int64, len(sn.Locks)),
		Holders:      make(map[string][]store.Holder, len(sn.Locks)),
		LockCount:    len(sn.Locks),
		LimiterCount: len(sn.Limiters),
		Kinds:        make(map[string]store.Kind, len(sn.Locks)+len(sn.Limiters)),
		FirstSeen:    make(map[string]int64, len(sn.Locks)),
		LimiterInfo:  make(map[string]limiterInfoJSON, len(sn.Limiters)),
	}
	if !sn.Discovered.IsZero() {
		f.DiscoveredAt = sn.Discovered.UnixMilli()
	}
	for _, l := range sn.Limiters {
		f.Limiters[l.Name] = sn.window(l.Name)
		if !l.AvailableUnknown {
			f.Available[l.Name] = l.Available
		}
		f.Kinds[l.Name] = l.Kind
		f.LimiterInfo[l.Name] = toLimiterInfoJSON(l)
	}
	for _, l := range sn.Locks {
		f.Locks[l.Name] = sn.window(l.Name)
		f.PTTLMS[l.Name] = pttlMS(l.PTTL)
		f.Holders[l.Name] = holdersOrEmpty(l.Holders)
		f.Kinds[l.Name] = l.Kind
		if t, ok := sn.FirstSeen[l.Name]; ok {
			f.FirstSeen[l.Name] = t.UnixMilli()
		}
	}
	return f
}

// pttlMS is a lease in ms, -1 for a key without expiry.
func pttlMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func holdersOrEmpty(h []store.Holder) []store.Holder {
	if h == nil {
		return []store.Holder{}
	}
	return h
}
