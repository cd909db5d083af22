package live

import (
	"context"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web/events"
)

// Discovery: the full passes, the walk's status, and the objects found.

// recentFinds bounds the newly discovered objects /status lists.
const recentFinds = 100

// fullPassTimeout bounds one full discovery pass.
const fullPassTimeout = 2 * time.Minute

// keyEventsRetry is how long the sampler waits before subscribing to
// keyspace notifications again after Redis failed the attempt.
const keyEventsRetry = 5 * time.Second

// discoveryLog is what the sampler records of discovery besides the walk.
type discoveryLog struct {
	fullPasses   int64
	lastFull     time.Time
	lastFullTook time.Duration
	recent       []Found // newest last
}

func (d *discoveryLog) found(name, kind string, src inspect.Source, at time.Time) {
	if src == "" {
		src = inspect.SourceScan
	}
	if len(d.recent) >= recentFinds {
		d.recent = append(d.recent[:0], d.recent[1:]...)
	}
	d.recent = append(d.recent, Found{Name: name, Kind: kind, Source: string(src), At: at})
}

// Found is an object discovery found, as /status lists it.
type Found struct {
	Name   string    `json:"name"`
	Kind   string    `json:"kind"` // "lock" or "limiter"
	Source string    `json:"source"`
	At     time.Time `json:"at"` // start of the tick that listed it
}

// DiscoveryStatus is how the console finds objects and what that costs
// (/api/status, /status, /metrics).
type DiscoveryStatus struct {
	KeyspaceEvents string `json:"keyspace_events"`
	// Scanning says the reconciliation walk SCANs one page per tick;
	// otherwise (a Cluster, string patterns) full passes run every
	// pass_target_seconds.
	Scanning          bool       `json:"scanning"`
	PassTargetSeconds float64    `json:"pass_target_seconds"`
	Budget            float64    `json:"budget"`
	Passes            int64      `json:"passes"`
	LastPassEnded     *time.Time `json:"last_pass_ended,omitempty"`
	LastPassSeconds   float64    `json:"last_pass_seconds"`
	KeysScanned       int64      `json:"keys_scanned_total"`
	PageCount         int64      `json:"page_count"`
	CostPerKeyUsec    float64    `json:"cost_per_key_usec"`
	// Keyspace is the keys in the database at the walk's last page;
	// BudgetPassSeconds the shortest pass over them the budget pays for
	// at the measured cost (0 until measured): a pass takes the longer of
	// it and pass_target_seconds.
	Keyspace          int64   `json:"keyspace_keys"`
	BudgetPassSeconds float64 `json:"budget_pass_seconds"`
	Announced         int64   `json:"announced_total"`
	Notified          int64   `json:"notified_total"`
	NotifyReceived    int64   `json:"notifications_received_total"`
	NotifyDropped     int64   `json:"notifications_dropped_total"`
	IdleSkipped       int64   `json:"idle_reads_skipped_total"`
	// SamplingShare is what the console's sampling cost Redis lately, as
	// a share of one core (measured by the walk; 0 where it cannot): the
	// walk may use the budget less this.
	SamplingShare float64 `json:"sampling_share"`
	// RejectsRemembered are hashes the walk found to be no object and
	// leaves alone for a few passes; RejectsSkipped the listings it
	// did not examine for that.
	RejectsRemembered int     `json:"rejects_remembered"`
	RejectsSkipped    int64   `json:"rejects_skipped_total"`
	Locks             int     `json:"locks"`
	Limiters          int     `json:"limiters"`
	Recent            []Found `json:"recent"`
}

// fullPass runs the walker's full pass (walk.Walker.Discover) and adopts
// its result (the first tick, and on a node the walker cannot SCAN, once
// per pass duration). The walker is kept once its first pass succeeded.
func (sm *Sampler) fullPass(ctx context.Context, start time.Time) error {
	w := sm.walker
	if w == nil {
		var err error
		w, err = walk.New(sm.insp, sm.cfg.match(), &walk.Options{
			Tick: sm.cfg.tickInterval(), Pass: sm.cfg.discoverInterval(), Budget: sm.cfg.DiscoveryBudget})
		if err != nil {
			return err
		}
	}
	d, err := w.Discover(ctx)
	if err != nil {
		return err
	}
	if sm.disc.fullPasses > 0 { // after the first, a pass's new names are finds
		sm.recordFinds(d, start)
	}
	sm.disc.fullPasses++
	sm.disc.lastFull, sm.disc.lastFullTook = start, time.Since(start)
	sm.lastDiscover = start
	sm.adopt(d, start)
	if sm.walker == nil {
		sm.walker = w
		sm.passStart = start
	}
	return nil
}

// recordFinds lists on /status the objects a full pass found that the
// sampler did not sample (where full passes are the reconciliation, a
// Cluster or string patterns, they are how foreign objects show up).
func (sm *Sampler) recordFinds(d *walk.Discovered, start time.Time) {
	known := make(map[string]bool, len(sm.locks)+len(sm.limiters))
	for _, names := range [][]string{sm.locks, sm.limiters} {
		for _, n := range names {
			known[n] = true
		}
	}
	for _, l := range d.Locks {
		if !known[l.Name] {
			sm.disc.found(l.Name, "lock", inspect.SourceScan, start)
		}
	}
	for _, l := range d.Limiters {
		if !known[l.Name] {
			sm.disc.found(l.Name, "limiter", inspect.SourceScan, start)
		}
	}
}

// fullPassEvery is the period of full passes where the walk cannot SCAN:
// as often as fullPassShare of the budget pays for, taking a pass's wall
// time as its Redis CPU (an overestimate: it includes the round trips),
// but not more than once a second, the rate before pacing.
func (sm *Sampler) fullPassEvery() time.Duration {
	budget := sm.cfg.DiscoveryBudget
	if budget <= 0 {
		budget = inspect.DefaultDiscoveryBudget
	}
	return max(time.Second, time.Duration(float64(sm.disc.lastFullTook)/(budget*fullPassShare)))
}

// fullPassShare is the part of the console's budget full passes take. The
// paced walk measures what sampling costs and takes the rest; full passes
// (a Cluster, string patterns) measure nothing, so they take what the walk
// is left on one node with 10,000 idle objects, about three fifths.
const fullPassShare = 0.6

// heardEvents names the locks that had an event since the last tick: an
// idle lock is read on its next tick instead of its turn.
func (sm *Sampler) heardEvents() []string {
	n := sm.events.Count()
	if n == sm.eventsAt {
		return nil
	}
	evs := sm.events.Recent(int(min(n-sm.eventsAt, events.LogSize)))
	sm.eventsAt = n
	slices.Reverse(evs) // oldest first
	sm.leases.hear(evs, sm.registry)
	names := make([]string, 0, len(evs))
	for _, e := range evs {
		names = append(names, e.Name)
	}
	return names
}

// watchKeyEvents subscribes to keyspace notifications as configured, once;
// a failure to reach Redis is retried after keyEventsRetry.
func (sm *Sampler) watchKeyEvents(ctx context.Context, now time.Time) {
	if sm.keyEvents != nil || now.Before(sm.keRetry) {
		return
	}
	ke, err := walk.WatchKeyEvents(ctx, sm.insp, sm.cfg.KeyspaceEvents, sm.cfg.match())
	if err != nil {
		sm.keRetry = now.Add(keyEventsRetry)
		sm.log.Warn("subscribing to keyspace notifications failed; retrying", "err", err)
		return
	}
	sm.keyEvents = ke
	sm.log.Info("keyspace notifications", "state", ke.State)
}

// publishStatus stores the discovery status for Status.
func (sm *Sampler) publishStatus() {
	ws := sm.walker.Status()
	st := &DiscoveryStatus{
		KeyspaceEvents:    "not yet decided",
		Scanning:          ws.Scanning,
		PassTargetSeconds: ws.PassTarget.Seconds(),
		Budget:            ws.Budget,
		KeysScanned:       ws.KeysScanned,
		PageCount:         ws.PageCount,
		CostPerKeyUsec:    ws.CostPerKeyUsec,
		Keyspace:          ws.Keyspace,
		BudgetPassSeconds: ws.BudgetPass.Seconds(),
		Announced:         ws.Announced,
		Notified:          ws.Notified,
		IdleSkipped:       ws.IdleSkipped,
		SamplingShare:     ws.SamplingShare,
		RejectsRemembered: ws.RejectsRemembered,
		RejectsSkipped:    ws.RejectsSkipped,
		Locks:             len(sm.locks),
		Limiters:          len(sm.limiters),
		Recent:            append([]Found(nil), sm.disc.recent...),
	}
	if sm.keyEvents != nil {
		st.KeyspaceEvents = sm.keyEvents.State
		st.NotifyReceived, st.NotifyDropped = sm.keyEvents.Counts()
	}
	if ws.Scanning {
		st.Passes = ws.Passes
		if !ws.LastPassEnded.IsZero() {
			t := ws.LastPassEnded
			st.LastPassEnded, st.LastPassSeconds = &t, ws.LastPassDuration.Seconds()
		}
	} else {
		st.Passes = sm.disc.fullPasses
		st.PassTargetSeconds = sm.fullPassEvery().Seconds()
		t := sm.disc.lastFull.Add(sm.disc.lastFullTook)
		st.LastPassEnded, st.LastPassSeconds = &t, sm.disc.lastFullTook.Seconds()
	}
	sm.status.Store(st)
}

// Status is the discovery status as of the last tick.
func (sm *Sampler) Status() *DiscoveryStatus {
	if st := sm.status.Load(); st != nil {
		return st
	}
	return &DiscoveryStatus{KeyspaceEvents: "not yet decided", Recent: []Found{}}
}
