package web

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
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
	SampledAt time.Time // Redis TIME in the pipeline that read the PTTLs
	Locks     []inspect.LockInfo
	Limiters  []inspect.LimiterInfo
	Stats     map[string]inspect.Summary
	FirstSeen map[string]time.Time // lock name -> when the console first discovered it
	// Discovered is when the discovery pass that chose these names
	// started (local time); pages rendered later may know newer objects.
	Discovered time.Time
	RedisUp    bool
	// Registry is the client registry as last read (at most once a second,
	// see clients.go); nil until the first read succeeds.
	Registry *inspect.Registry
	// HolderSeen is when the console first saw each current holder of each
	// lock (key holderKey(name, holder)): the hold time of holders whose
	// scripts record none.
	HolderSeen map[string]time.Time

	// orders memoizes the lists' filtered, sorted orders (listing.go).
	orders *listOrders
}

// window returns the last complete 1 s window of name.
func (sn *snapshot) window(name string) inspect.Counts {
	if sn == nil {
		return inspect.Counts{}
	}
	return sn.Stats[name].Window
}

// statsFrame is the websocket "stats" frame: its core, which every frame
// carries, and its meta. Kinds, FirstSeen, LimiterInfo and Holders change
// rarely next to the counts, yet at 1,000 objects they are most of the
// frame's bytes: they are sent together, only in a frame where one of them
// changed and in a viewer's first stats frame (see encodeStats); a frame
// without them means "as last sent".
type statsFrame struct {
	statsCore
	statsMeta
}

// statsCore is the part of statsFrame every frame carries.
type statsCore struct {
	Type         string                    `json:"type"`
	BucketMS     int                       `json:"bucket_ms"`
	WindowMS     int                       `json:"window_ms"`
	At           int64                     `json:"at"`
	Limiters     map[string]inspect.Counts `json:"limiters"`
	Locks        map[string]inspect.Counts `json:"locks"`
	Available    map[string]int64          `json:"available"`
	PTTLMS       map[string]int64          `json:"pttl_ms"`
	Who          map[string]holdersWho     `json:"who"` // frames.go
	LockCount    int                       `json:"lock_count"`
	LimiterCount int                       `json:"limiter_count"`
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
	LimiterInfo map[string]limiterInfoJSON  `json:"limiter_info"`
	Holders     map[string][]inspect.Holder `json:"holders"`
	// Stale names the objects shown as last read because their node did
	// not answer (its reason is left out: it would change every tick and
	// resend the meta).
	Stale map[string]staleJSON `json:"stale"`
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
	// touch holds objects a console change asked to be read next tick.
	touch touched
	// pubMu orders publishing a tick's snapshot against Refresh's
	// patches (refresh.go); patches are those not yet overtaken by a tick.
	pubMu   sync.Mutex
	patches []patch

	// Owned by the run goroutine.
	locks, limiters []string
	lastDiscover    time.Time
	passRetry       time.Time // no full pass before this: the last one failed
	passFailing     bool      // the last full pass failed (logged once)
	firstSeen       map[string]time.Time
	present         map[string]time.Time // lock -> start of the tick that last saw it
	pending         map[string]pendingExpiry
	redisUp         *bool
	// answered is when a tick's pipeline last got Redis's answer (Unix
	// ns); the node probe skips its PING on one node while it is recent.
	answered     atomic.Int64
	registry     *inspect.Registry
	registryRead time.Time
	holderSeen   map[string]time.Time
	delta        deltaState // the numbers as last broadcast

	// Discovery after the first full pass is an inspect.Walker riding in
	// every tick's pipeline: names store clients announce, names keyspace
	// notifications report, and (on one node without string patterns) a
	// SCAN page paced to the pass duration and the Redis CPU budget.
	// Without the SCAN page (a Cluster), a full pass runs once per pass
	// duration. The sampler drops objects as the sample misses them.
	walker    *inspect.Walker
	keyEvents *inspect.KeyEvents // nil until decided (see watchKeyEvents)
	keRetry   time.Time          // when to try subscribing again after a failure
	passStart time.Time          // start of the tick before the pass's first page
	passes    []finishedPass     // passes whose last keys are still being classified
	tickNo    int64
	disc      discoveryLog // full passes and recent finds, for /status
	eventsAt  int64        // the event log's count when last read
	status    atomic.Pointer[discoveryStatus]
}

// finishedPass is a pass whose last page was read at tick readyAt-2: its
// keys are sized at readyAt-1 and classified at readyAt.
type finishedPass struct {
	start   time.Time
	readyAt int64
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
	defer func() { sm.keyEvents.Close() }()
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

	sm.watchKeyEvents(ctx, start)
	// A full pass needs every master; while the probe finds one down it
	// would only stall the tick on dialing it, so the walker's announced
	// and notified names are all the discovery until the node is back.
	if sm.lastDiscover.IsZero() || (!sm.walker.Scans() && start.Sub(sm.lastDiscover) >= sm.fullPassEvery() &&
		!start.Before(sm.passRetry) && len(sm.s.nodes.down()) == 0) {
		// A full pass over millions of keys takes seconds: it gets its own
		// bound, not the tick's.
		pctx, cancel := context.WithTimeout(runCtx, fullPassTimeout)
		err := sm.fullPass(pctx, start)
		cancel()
		if err != nil && (sm.walker == nil || runCtx.Err() != nil) {
			sm.fail(runCtx, err)
			return
		}
		sm.passFailed(start, err)
		// The pass may have used up the tick's bound: the sample gets its own.
		var cancelTick context.CancelFunc
		ctx, cancelTick = context.WithTimeout(runCtx, max(2*time.Second, 5*every))
		defer cancelTick()
	}
	sm.walker.Suggest(sm.keyEvents.Drain())
	sm.walker.Suggest(sm.heardEvents())
	sm.walker.Suggest(sm.touch.drain())
	sm.askRegistry(start)
	smp, err := sm.walker.Tick(ctx, sm.locks, sm.limiters)
	if err != nil {
		sm.fail(runCtx, err)
		return
	}
	sm.answered.Store(time.Now().UnixNano())
	sm.tickNo++
	sm.advance(smp, start)
	sm.publishStatus()
	sm.takeRegistry(smp)
	sm.detectExpiries(smp, start)
	sn := sm.publish(smp, start)
	// The status frame goes out after the snapshot that agrees with it, so
	// a viewer that reacts to it (reloads a page) finds the same state.
	sm.setRedis(true)
	sm.broadcastStats(sn) // frames.go
}

// adopt takes a discovery pass as the set of names to sample.
func (sm *sampler) adopt(d *inspect.Discovered, now time.Time) {
	sm.locks = sm.locks[:0]
	for _, l := range d.Locks {
		sm.locks = append(sm.locks, l.Name)
		if _, ok := sm.firstSeen[l.Name]; !ok {
			sm.firstSeen[l.Name] = now
		}
	}
	sm.limiters = sm.limiters[:0]
	for _, l := range d.Limiters {
		sm.limiters = append(sm.limiters, l.Name)
	}
	sm.forgetUnlisted()
}

// advance takes one walk step's findings: objects the sample missed are
// dropped (the walk finds them again if they come back) and newly
// classified ones are added.
func (sm *sampler) advance(smp *inspect.Sample, start time.Time) {
	w := smp.Walk
	known := make(map[string]bool, len(smp.Locks)+len(smp.Limiters))
	for _, l := range smp.Locks {
		known[l.Name] = true
	}
	for _, l := range smp.Limiters {
		known[l.Name] = true
	}
	for n := range smp.Unreadable { // its node did not answer: not gone
		known[n] = true
	}
	sm.locks = slices.DeleteFunc(sm.locks, func(n string) bool { return !known[n] })
	sm.limiters = slices.DeleteFunc(sm.limiters, func(n string) bool { return !known[n] })
	for _, l := range w.Locks {
		sm.locks = append(sm.locks, l.Name)
		if _, ok := sm.firstSeen[l.Name]; !ok {
			sm.firstSeen[l.Name] = start
		}
		sm.disc.found(l.Name, "lock", w.Sources[l.Name], start)
	}
	for _, l := range w.Limiters {
		sm.limiters = append(sm.limiters, l.Name)
		sm.disc.found(l.Name, "limiter", w.Sources[l.Name], start)
	}
	if w.PassEnded {
		sm.passes = append(sm.passes, finishedPass{start: sm.passStart, readyAt: sm.tickNo + 2})
		sm.passStart = start
	}
	for len(sm.passes) > 0 && sm.passes[0].readyAt <= sm.tickNo {
		sm.finishPass(sm.passes[0].start)
		sm.passes = sm.passes[1:]
	}
}

// finishPass makes a completed pass the discovery behind the frames: every
// object that existed when it started has been seen, so pages rendered
// before that may drop rows the frames lack. Names it no longer lists lose
// their first-seen time and history, as after a full pass.
func (sm *sampler) finishPass(passStart time.Time) {
	sm.lastDiscover = passStart
	sm.forgetUnlisted()
}

// forgetUnlisted drops the first-seen times of locks and the history of
// limiters no longer in the sampled sets.
func (sm *sampler) forgetUnlisted() {
	locks := make(map[string]bool, len(sm.locks))
	for _, n := range sm.locks {
		locks[n] = true
	}
	for name := range sm.firstSeen {
		if !locks[name] {
			delete(sm.firstSeen, name)
		}
	}
	lims := make(map[string]bool, len(sm.limiters))
	for _, n := range sm.limiters {
		lims[n] = true
	}
	sm.hist.retain(lims)
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
	sm.pubMu.Lock()
	if prev := sm.latest(); prev != nil && prev.RedisUp {
		down := *prev
		down.RedisUp = false
		sm.snap.Store(&down)
	} else if prev == nil {
		sm.snap.Store(&snapshot{RedisUp: false, Stats: map[string]inspect.Summary{}, FirstSeen: map[string]time.Time{}})
	}
	sm.pubMu.Unlock()
	// After the snapshot: a page loaded on this frame shows the banner.
	sm.setRedis(false)
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
func (sm *sampler) detectExpiries(smp *inspect.Sample, start time.Time) {
	now := make(map[string]bool, len(smp.Locks))
	for _, l := range smp.Locks {
		now[l.Name] = true
	}
	for name, last := range sm.present {
		if _, unread := smp.Unreadable[name]; unread {
			continue // its node did not answer: neither seen nor gone
		}
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
			sm.s.publishEvent(eventFrame{Type: inspect.EventExpired, Name: name, At: time.Now()})
		default:
			p.ticks++
			sm.pending[name] = p
		}
	}
}

func (sm *sampler) publish(smp *inspect.Sample, start time.Time) *snapshot {
	sm.keepStale(smp)
	at := smp.At
	if at.IsZero() {
		at = start
	}
	sn := &snapshot{
		Taken:      start,
		At:         at.UnixMilli() / inspect.BucketMS * inspect.BucketMS,
		SampledAt:  at,
		Locks:      smp.Locks,
		Limiters:   smp.Limiters,
		Stats:      smp.Stats,
		FirstSeen:  maps.Clone(sm.firstSeen),
		Discovered: sm.lastDiscover,
		RedisUp:    true,
		Registry:   sm.registry,
		HolderSeen: sm.seeHolders(smp.Locks, start),
		orders:     &listOrders{},
	}
	if sn.Stats == nil {
		sn.Stats = map[string]inspect.Summary{}
	}
	sm.hist.pushTick(sn.At, smp.Limiters, sn.Stats)
	sm.pubMu.Lock()
	sn = sm.patched(sn)
	sm.snap.Store(sn)
	sm.pubMu.Unlock()
	sm.s.observeSnapshot(sn)
	return sn
}

func buildStatsFrame(sn *snapshot) statsFrame {
	f := statsFrame{statsCore{
		Type:         "stats",
		BucketMS:     inspect.BucketMS,
		WindowMS:     inspect.WindowMS,
		At:           sn.At,
		Limiters:     make(map[string]inspect.Counts, len(sn.Limiters)),
		Locks:        make(map[string]inspect.Counts, len(sn.Locks)),
		Available:    make(map[string]int64, len(sn.Limiters)),
		PTTLMS:       make(map[string]int64, len(sn.Locks)),
		LockCount:    len(sn.Locks),
		LimiterCount: len(sn.Limiters),
	}, statsMeta{
		Kinds:       make(map[string]inspect.Kind, len(sn.Locks)+len(sn.Limiters)),
		FirstSeen:   make(map[string]int64, len(sn.Locks)),
		LimiterInfo: make(map[string]limiterInfoJSON, len(sn.Limiters)),
		Holders:     make(map[string][]inspect.Holder, len(sn.Locks)),
		Stale:       map[string]staleJSON{},
	}}
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
		f.markStale(l.Name, l.Stale)
	}
	for _, l := range sn.Locks {
		f.Locks[l.Name] = sn.window(l.Name)
		f.PTTLMS[l.Name] = pttlMS(l.PTTL)
		f.Holders[l.Name] = holdersOrEmpty(l.Holders)
		f.Kinds[l.Name] = l.Kind
		if t, ok := sn.FirstSeen[l.Name]; ok {
			f.FirstSeen[l.Name] = t.UnixMilli()
		}
		f.markStale(l.Name, l.Stale)
	}
	return f
}

// encodeStats encodes f as its core (a complete frame without the
// rarely-changing parts) and those parts as a JSON object. The sampler
// compares meta with the previous tick's to decide whether to send them.
func encodeStats(f statsFrame) (core, meta []byte, err error) {
	core, err = json.Marshal(f.statsCore)
	if err != nil {
		return nil, nil, err
	}
	meta, err = json.Marshal(f.statsMeta)
	return core, meta, err
}

// spliceMeta joins a core frame and its meta object into the full frame:
// both are JSON objects with distinct, non-empty field sets.
func spliceMeta(core, meta []byte) []byte {
	out := make([]byte, 0, len(core)+len(meta))
	out = append(out, core[:len(core)-1]...)
	out = append(out, ',')
	return append(out, meta[1:]...)
}

// pttlMS is a lease in ms, -1 for a key without expiry.
func pttlMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func holdersOrEmpty(h []inspect.Holder) []inspect.Holder {
	if h == nil {
		return []inspect.Holder{}
	}
	return h
}
