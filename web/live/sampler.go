// Package live is the console's view of Redis, kept current by one loop:
// every tick (200 ms) the walker reads the known objects in one pipeline
// per node and finds new ones, and the result becomes an immutable
// Snapshot: objects, windows, stale rows of nodes that did not answer,
// first-seen and holder times, the client registry. Beside the snapshot it
// keeps each limiter's window history, node health from its own probe,
// and the discovery status.
//
// Each snapshot is handed to the observers (alerts, metrics, the feed) in
// the order they were given, on the sampler's goroutine; they never call
// back into it. An observer with work of its own to do per snapshot runs
// on its own goroutine behind a Detached. Readers (pages, the API) take
// Latest. Admin actions call Refresh, which re-reads what they changed
// and patches the snapshot.
//
// It imports store/inspect and web/events.
package live

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web/events"
)

// expiryGrace is how many ticks a vanished lock waits for its unlock
// message before the sampler calls it expired: the message travels on
// another connection and may arrive after the sample that saw the key gone.
const expiryGrace = 2

// Config is what a Sampler needs; Inspector and Events are required.
type Config struct {
	Inspector *inspect.Inspector
	// Match is the SCAN MATCH pattern that bounds what the console sees.
	Match string
	// TickInterval is the sampler period (default 200 ms, one stats bucket).
	TickInterval time.Duration
	// DiscoverInterval is how long a reconciliation pass should take
	// (default inspect.DefaultDiscoveryPass).
	DiscoverInterval time.Duration
	// DiscoveryBudget is the share of one Redis core discovery may use
	// (default inspect.DefaultDiscoveryBudget).
	DiscoveryBudget float64
	// KeyspaceEvents says whether discovery uses keyspace notifications.
	KeyspaceEvents walk.KeyEventsMode
	// Events is the console's event log: events heard make their locks
	// read on the next tick, and expiries found are published to it.
	Events *events.Log
	Logger *slog.Logger
}

func (c *Config) tickInterval() time.Duration {
	if c.TickInterval <= 0 {
		return 200 * time.Millisecond
	}
	return c.TickInterval
}

func (c *Config) discoverInterval() time.Duration {
	if c.DiscoverInterval <= 0 {
		return inspect.DefaultDiscoveryPass
	}
	return c.DiscoverInterval
}

func (c *Config) match() string {
	if c.Match == "" {
		return "*"
	}
	return c.Match
}

// Observer is handed every tick's snapshot, on the sampler's goroutine;
// after a failed tick, the latest one with RedisUp false.
type Observer interface {
	Observe(sn *Snapshot)
}

type pendingExpiry struct {
	lastPresent time.Time // start of the last tick that saw the lock
	ticks       int
}

// Sampler reads Redis once per tick for every viewer together.
type Sampler struct {
	cfg       Config
	insp      *inspect.Inspector
	log       *slog.Logger
	events    *events.Log
	observers []Observer
	nodes     nodeHealth
	ticks     tickStats

	snap    atomic.Pointer[Snapshot]
	windows *Windows
	// touch holds objects a console change asked to be read next tick.
	touch touched
	// gone remembers objects the console stopped listing (gone.go).
	gone goneMemory
	// leases finds holds that ended while their holders worked (leases.go).
	leases leaseWatch
	// ended remembers the deadlocks that ended (deadlocks.go).
	ended endedDeadlocks
	// settings are the masters' settings as last read (settings.go).
	settings atomic.Pointer[[]inspect.NodeSettings]
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
	redisUp         bool // the last tick reached Redis (logged on change)
	// failStreak counts the ticks failed in a row. The first keeps the
	// last good snapshot: one tick cut short (a Cluster master dying
	// mid-pipeline, before any node is known down) must not turn every
	// list into a 503 for a tick; a second in a row says Redis is down.
	failStreak int
	// answered is when a tick's pipeline last got Redis's answer (Unix
	// ns); the node probe skips its PING on one node while it is recent.
	answered     atomic.Int64
	registry     *inspect.Registry
	registryRead time.Time
	holderSeen   map[string]time.Time

	// Discovery after the first full pass is a walk.Walker riding in
	// every tick's pipeline: names store clients announce, names keyspace
	// notifications report, and (on one node without string patterns) a
	// SCAN page paced to the pass duration and the Redis CPU budget.
	// Without the SCAN page (a Cluster), a full pass runs once per pass
	// duration. The sampler drops objects as the sample misses them.
	walker    *walk.Walker
	keyEvents *walk.KeyEvents // nil until decided (see watchKeyEvents)
	keRetry   time.Time       // when to try subscribing again after a failure
	passStart time.Time       // start of the tick before the pass's first page
	passes    []finishedPass  // passes whose last keys are still being classified
	tickNo    int64
	fams      families
	disc      discoveryLog // full passes and recent finds, for /status
	eventsAt  int64        // the event log's count when last read
	status    atomic.Pointer[DiscoveryStatus]
}

// finishedPass is a pass whose last page was read at tick readyAt-2: its
// keys are sized at readyAt-1 and classified at readyAt.
type finishedPass struct {
	start   time.Time
	readyAt int64
}

// New builds a Sampler; nothing runs until Run.
func New(cfg Config) *Sampler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sampler{
		cfg:       cfg,
		insp:      cfg.Inspector,
		log:       log,
		events:    cfg.Events,
		redisUp:   true,
		windows:   newWindows(windowTicks),
		firstSeen: make(map[string]time.Time),
		present:   make(map[string]time.Time),
		pending:   make(map[string]pendingExpiry),
	}
}

// PublishTo adds observers, handed each snapshot in this order. Call it
// before Run.
func (sm *Sampler) PublishTo(obs ...Observer) { sm.observers = append(sm.observers, obs...) }

// Latest is the newest snapshot; nil before the first tick.
func (sm *Sampler) Latest() *Snapshot { return sm.snap.Load() }

// Windows is the limiters' recent windows, tick by tick.
func (sm *Sampler) Windows() *Windows { return sm.windows }

// Run ticks until ctx ends.
func (sm *Sampler) Run(ctx context.Context) {
	every := sm.cfg.tickInterval()
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

func (sm *Sampler) tick(ctx context.Context, every time.Duration) {
	start := time.Now()
	defer func() { sm.ticks.observe(time.Since(start)) }()
	runCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, max(2*time.Second, 5*every))
	defer cancel()

	sm.watchKeyEvents(ctx, start)
	// A full pass needs every master; while the probe finds one down it
	// would only stall the tick on dialing it, so the walker's announced
	// and notified names are all the discovery until the node is back.
	if sm.lastDiscover.IsZero() || (!sm.walker.Scans() && start.Sub(sm.lastDiscover) >= sm.fullPassEvery() &&
		!start.Before(sm.passRetry) && len(sm.nodes.down()) == 0) {
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
	sm.noteEvicted(sm.keyEvents.DrainEvicted())
	sm.walker.Suggest(sm.heardEvents())
	sm.walker.Suggest(sm.touch.drain())
	sm.askRegistry(start)
	sm.fams.carry(sm, start)
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
	sm.leases.observe(smp, sm.registry, start)
	// Stale rows first: a per-client limiter on a node that did not
	// answer keeps its family (and the family its past).
	sm.keepStale(smp)
	rows := sm.fams.tick(sm, smp)
	sm.notify(sm.publish(smp, start, rows))
}

// notify hands sn to every observer, in order.
func (sm *Sampler) notify(sn *Snapshot) {
	for _, o := range sm.observers {
		o.Observe(sn)
	}
}

// adopt takes a discovery pass as the set of names to sample. A name the
// pass no longer finds went since the last tick: it is remembered as gone
// (Sampler.Gone) as a tick that misses it would, or its answer until then
// would know neither since when it is free nor who held it last.
func (sm *Sampler) adopt(d *walk.Discovered, now time.Time) {
	found := make(map[string]bool, len(d.Locks)+len(d.Limiters))
	for _, l := range d.Locks {
		found[l.Name] = true
	}
	for _, l := range d.Limiters {
		found[l.Name] = true
	}
	// A truncated list (more than walk.MaxDiscovered of a kind) leaves out
	// objects that still exist: those are not gone.
	var dropped []string
	missing := func(names []string, truncated bool) {
		for _, n := range names {
			if !truncated && !found[n] {
				dropped = append(dropped, n)
			}
		}
	}
	missing(sm.locks, d.LocksTruncated)
	missing(sm.limiters, d.LimitersTruncated)
	sm.gone.note(sm.Latest(), dropped, now)
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
func (sm *Sampler) advance(smp *inspect.Sample, start time.Time) {
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
	var dropped []string
	drop := func(n string) bool {
		if known[n] {
			return false
		}
		dropped = append(dropped, n)
		return true
	}
	sm.locks = slices.DeleteFunc(sm.locks, drop)
	sm.limiters = slices.DeleteFunc(sm.limiters, drop)
	sm.gone.note(sm.Latest(), dropped, start)
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
		sm.passes = append(sm.passes, finishedPass{start: sm.passStart, readyAt: sm.tickNo + walk.ClassifiedAfter})
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
func (sm *Sampler) finishPass(passStart time.Time) {
	sm.lastDiscover = passStart
	sm.forgetUnlisted()
}

// forgetUnlisted drops the first-seen times of locks and the history of
// limiters no longer in the sampled sets.
func (sm *Sampler) forgetUnlisted() {
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
	sm.windows.retain(lims)
}

func (sm *Sampler) fail(runCtx context.Context, err error) {
	if runCtx.Err() != nil {
		return // shutting down, not a Redis problem
	}
	sm.ticks.failed.Add(1)
	sm.ticks.redisErrors.Add(1)
	sm.failStreak++
	if prev := sm.Latest(); sm.failStreak == 1 && sm.redisUp && prev != nil && prev.RedisUp {
		// Readers keep the last good snapshot (its Taken says how old it
		// is); /readyz pings Redis itself and is not delayed by this.
		sm.log.Warn("sampling Redis failed; keeping the last snapshot for one more tick", "err", err)
		return
	}
	if sm.redisUp {
		sm.log.Warn("sampling Redis failed", "err", err)
	}
	sm.redisUp = false
	sm.pubMu.Lock()
	if prev := sm.Latest(); prev != nil && prev.RedisUp {
		down := *prev
		down.RedisUp = false
		sm.snap.Store(&down)
	} else if prev == nil {
		sm.snap.Store(&Snapshot{RedisUp: false, Stats: map[string]inspect.Summary{}, FirstSeen: map[string]time.Time{}, memo: &Memo{}})
	}
	sn := sm.Latest()
	sm.pubMu.Unlock()
	sm.notify(sn)
}

// noteEvicted publishes the evictions of locks the console knows: their
// holds ended by Redis's eviction, not a release or an expiry (the event
// also keeps detectExpiries from calling them expired).
func (sm *Sampler) noteEvicted(keys []string) {
	for _, k := range keys {
		_, seen := sm.present[k]
		_, going := sm.pending[k]
		if seen || going {
			sm.events.Publish(events.Entry{Type: inspect.EventEvicted, Name: k, At: time.Now()})
		}
	}
}

// detectExpiries reports locks that vanished without any event: a lease
// that ran out, or a delete by something that does not publish.
func (sm *Sampler) detectExpiries(smp *inspect.Sample, start time.Time) {
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
		case sm.events.HeardSince(name, p.lastPresent):
			delete(sm.pending, name)
		case p.ticks >= expiryGrace:
			delete(sm.pending, name)
			sm.events.Publish(events.Entry{Type: inspect.EventExpired, Name: name, At: time.Now()})
		default:
			p.ticks++
			sm.pending[name] = p
		}
	}
}

func (sm *Sampler) publish(smp *inspect.Sample, start time.Time, fams []inspect.FamilyRow) *Snapshot {
	at := smp.At
	if at.IsZero() {
		at = start
	}
	sm.redisUp = true
	sm.failStreak = 0
	sn := &Snapshot{
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
		Families:   fams,
		Lingered:   smp.Lingered,
		Settings:   sm.settingsNow(),
		memo:       &Memo{},
	}
	sn.Violations, sn.ViolationsTotal = sm.leases.snapshot()
	if sn.Stats == nil {
		sn.Stats = map[string]inspect.Summary{}
	}
	sm.windows.PushTick(sn.At, smp.Limiters, sn.Stats)
	sm.pubMu.Lock()
	sn = sm.patched(sn)
	sn.Deadlocks = deadlocksOf(sn.Locks, sm.snap.Load().deadlocks(), start)
	sm.ended.note(sm.snap.Load().deadlocks(), sn.Deadlocks, start)
	sm.snap.Store(sn)
	sm.pubMu.Unlock()
	return sn
}
