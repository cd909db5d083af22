package metrics

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/live"
)

// DefaultTop bounds the per-object series of /metrics: at most this
// many locks, as many limiters and as many firing alerts get a series.
const DefaultTop = 200

// windowBuckets is how many complete buckets a Summary's Window sums.
const windowBuckets = inspect.WindowMS / inspect.BucketMS

// limiterTotals are one limiter's outcomes since the console first saw it.
type limiterTotals struct {
	inspect.Counts
	// anchor is the bucket whose Window was added last: the buckets before
	// it are counted, it and later ones are not.
	anchor int64
}

// objectCounters turns the snapshots' rolling windows into monotonic
// counters. A Window sums the 5 complete buckets before its Bucket, so the
// Windows of snapshots whose Buckets are 5 apart cover disjoint, adjacent
// buckets: adding exactly those counts every completed bucket once. When
// the sampler skipped the snapshot that would continue the chain (a slow
// or failed tick), the buckets between can no longer be told apart from
// the window sums; they are left out and counted in uncounted.
type objectCounters struct {
	mu        sync.Mutex
	limiters  map[string]*limiterTotals
	uncounted int64
}

func newObjectCounters() *objectCounters {
	return &objectCounters{limiters: make(map[string]*limiterTotals)}
}

// Observe counts the buckets sn completed.
func (oc *objectCounters) Observe(sn *live.Snapshot) {
	if sn == nil || !sn.RedisUp {
		return
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	seen := make(map[string]bool, len(sn.Limiters))
	for _, l := range sn.Limiters {
		seen[l.Name] = true
		sum, ok := sn.Stats[l.Name]
		if !ok {
			continue
		}
		t := oc.limiters[l.Name]
		if t == nil {
			oc.limiters[l.Name] = &limiterTotals{Counts: sum.Window, anchor: sum.Bucket}
			continue
		}
		switch d := sum.Bucket - t.anchor; {
		case d < 0: // Redis' clock went back (a failover): start a new chain
			t.anchor = sum.Bucket
		case d < windowBuckets:
		default:
			oc.uncounted += d - windowBuckets
			t.Counts = t.Counts.Add(sum.Window)
			t.anchor = sum.Bucket
		}
	}
	for name := range oc.limiters {
		if !seen[name] {
			delete(oc.limiters, name)
		}
	}
}

// totals returns a copy of the counters and the uncounted bucket total.
func (oc *objectCounters) totals() (map[string]inspect.Counts, int64) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	out := make(map[string]inspect.Counts, len(oc.limiters))
	for n, t := range oc.limiters {
		out[n] = t.Counts
	}
	return out, oc.uncounted
}

var (
	descLimAcquired = desc("lockwarden_limiter_acquired_total", "Permits granted, counted from the stats buckets (each completed 200 ms bucket once).", "name")
	descLimRejected = desc("lockwarden_limiter_rejected_total", "Acquires rejected, counted from the stats buckets (not visible for Redisson limiters).", "name")
	descLimErrors   = desc("lockwarden_limiter_errors_total", "Acquires that failed with an error, counted from the stats buckets.", "name")
	descLimWindow   = desc("lockwarden_limiter_window", "Outcomes of acquires over the last 1 s window.", "name", "outcome")
	descUncounted   = desc("lockwarden_limiter_uncounted_buckets_total", "Stats buckets left out of the limiter counters because the sampler skipped the tick that would have counted them.")
	descLockHeld    = desc("lockwarden_lock_held", "1 when the lock has a holder.", "name")
	descLockHolders = desc("lockwarden_lock_holders", "Holders of the lock (readers of a read-write lock, 1 otherwise).", "name")
	descLockLease   = desc("lockwarden_lock_lease_seconds", "Remaining lease of the lock; -1 when it has no expiry.", "name")
	descLockHeldFor = desc("lockwarden_lock_held_seconds", "How long the lock has been held, as far as the console knows.", "name")
	descLockWaiters = desc("lockwarden_lock_waiters", "Waiters of the lock: its queue (store's hand-off queue, Redisson's fair queue) and, for a Redisson lock, the clients subscribed to its channel.", "name")
	descAlertFiring = desc("lockwarden_alert_firing", "1 for every firing alert.", "rule", "name")
	descOmitted     = desc("lockwarden_metrics_omitted_objects", "Objects (or firing alerts) without a per-object series: over --metrics-top or not matching --metrics-match.", "kind")
)

// objectCollector exports per-object series for the busiest objects.
type objectCollector struct{ m *Metrics }

func (oc *objectCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLimAcquired, descLimRejected, descLimErrors, descLimWindow, descUncounted,
		descLockHeld, descLockHolders, descLockLease, descLockHeldFor, descAlertFiring, descOmitted,
		descLockWait, descLockWaiters, descLocks, descLimiters} {
		ch <- d
	}
}

// Collect reads live's snapshot once, so the counts of locks and limiters
// and the per-object series of one scrape come from the same tick.
func (oc *objectCollector) Collect(ch chan<- prometheus.Metric) {
	oc.m.objectSeries(ch, oc.m.cfg.Live.Latest(), oc.m.cfg.Alerts.Firing())
}

// objectSeries emits sn's counts of locks and limiters (none while there is
// no snapshot yet), its per-object series and those of the firing alerts
// (critical and oldest first).
func (m *Metrics) objectSeries(ch chan<- prometheus.Metric, sn *live.Snapshot, alerts []alert.Alert) {
	if sn != nil {
		ch <- prometheus.MustNewConstMetric(descLocks, prometheus.GaugeValue, float64(len(sn.Locks)))
		ch <- prometheus.MustNewConstMetric(descLimiters, prometheus.GaugeValue, float64(len(sn.Limiters)))
	}
	top, match := m.cfg.Top, m.cfg.Match
	keep := func(name string) bool { return match == "" || inspect.GlobMatch(match, name) }
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	omitted := func(kind string, n int) { emit(descOmitted, prometheus.GaugeValue, float64(n), kind) }
	// Names that differ only in invalid UTF-8 share a label value; the
	// registry refuses a scrape with two equal series, so the second goes.
	unique := func(seen map[string]bool, label string) bool {
		if seen[label] {
			return false
		}
		seen[label] = true
		return true
	}

	totals, uncounted := m.objects.totals()
	emit(descUncounted, prometheus.CounterValue, float64(uncounted))
	if sn == nil {
		sn = &live.Snapshot{}
	}

	lims := make([]inspect.LimiterInfo, 0, len(sn.Limiters))
	for _, l := range sn.Limiters {
		if keep(l.Name) {
			lims = append(lims, l)
		}
	}
	slices.SortFunc(lims, func(a, b inspect.LimiterInfo) int {
		ta, tb := totals[a.Name], totals[b.Name]
		return cmp.Or(cmp.Compare(tb.Acquired+tb.Rejected+tb.Errors, ta.Acquired+ta.Rejected+ta.Errors),
			cmp.Compare(a.Name, b.Name))
	})
	omitted("limiter", len(sn.Limiters)-min(len(lims), top))
	seen := make(map[string]bool, top)
	for _, l := range lims[:min(len(lims), top)] {
		name := promLabel(l.Name)
		if !unique(seen, name) {
			continue
		}
		if t, ok := totals[l.Name]; ok {
			emit(descLimAcquired, prometheus.CounterValue, float64(t.Acquired), name)
			emit(descLimRejected, prometheus.CounterValue, float64(t.Rejected), name)
			emit(descLimErrors, prometheus.CounterValue, float64(t.Errors), name)
		}
		w := sn.Window(l.Name)
		emit(descLimWindow, prometheus.GaugeValue, float64(w.Acquired), name, "acquired")
		emit(descLimWindow, prometheus.GaugeValue, float64(w.Rejected), name, "rejected")
		emit(descLimWindow, prometheus.GaugeValue, float64(w.Errors), name, "errors")
	}

	now := time.Now()
	type lockRow struct {
		l    inspect.LockInfo
		held time.Duration
	}
	locks := make([]lockRow, 0, len(sn.Locks))
	for _, l := range sn.Locks {
		if !keep(l.Name) {
			continue
		}
		r := lockRow{l: l, held: -1}
		if start, ok := sn.HoldStart(l); ok && len(l.Holders) > 0 {
			r.held = now.Sub(start)
		}
		locks = append(locks, r)
	}
	// The longest held first: those are the ones someone asks about.
	slices.SortFunc(locks, func(a, b lockRow) int {
		return cmp.Or(cmp.Compare(b.held, a.held), cmp.Compare(a.l.Name, b.l.Name))
	})
	omitted("lock", len(sn.Locks)-min(len(locks), top))
	seen = make(map[string]bool, top)
	for _, r := range locks[:min(len(locks), top)] {
		name := promLabel(r.l.Name)
		if !unique(seen, name) {
			continue
		}
		held := 0.0
		if len(r.l.Holders) > 0 {
			held = 1
		}
		emit(descLockHeld, prometheus.GaugeValue, held, name)
		emit(descLockHolders, prometheus.GaugeValue, float64(len(r.l.Holders)), name)
		lease := -1.0
		if r.l.PTTL >= 0 {
			lease = r.l.PTTL.Seconds()
		}
		emit(descLockLease, prometheus.GaugeValue, lease, name)
		if r.held >= 0 {
			emit(descLockHeldFor, prometheus.GaugeValue, r.held.Seconds(), name)
		}
		emitLockWaits(ch, sn, r.l, name)
		waiters := r.l.WaitersTotal
		if r.l.Subscribers != nil {
			waiters += *r.l.Subscribers
		}
		emit(descLockWaiters, prometheus.GaugeValue, float64(waiters), name)
	}

	omitted("alert", len(alerts)-min(len(alerts), top))
	seen = make(map[string]bool, top)
	for _, a := range alerts[:min(len(alerts), top)] {
		if unique(seen, a.Rule+"\x00"+promLabel(a.Name)) {
			emit(descAlertFiring, prometheus.GaugeValue, 1, a.Rule, promLabel(a.Name))
		}
	}
}
