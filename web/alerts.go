package web

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// The built-in alert rules. Each alert is one rule applied to one name (a
// lock, a limiter, a node; "" for the console's own Redis connection).
const (
	RuleLockNoExpiry            = "lock-no-expiry"
	RuleLockHeldTooLong         = "lock-held-too-long"
	RuleLockDeadlinePassed      = "lock-deadline-passed"
	RuleLockRenewedByGoneClient = "lock-renewed-by-gone-client"
	RuleLimiterRejectRatio      = "limiter-reject-ratio"
	RuleLimiterErrors           = "limiter-errors"
	RuleAuthFailures            = "auth-failures"
	RuleRedisDown               = "redis-down"
	RuleNodeDown                = "node-down"
)

// AlertRules lists every rule, in the order pages show them.
var AlertRules = []string{RuleRedisDown, RuleNodeDown, RuleLockDeadlinePassed, RuleLockRenewedByGoneClient,
	RuleLockNoExpiry, RuleLockHeldTooLong, RuleLimiterRejectRatio, RuleLimiterErrors, RuleAuthFailures}

// Severities: critical needs someone now, warning needs a look.
const (
	severityCritical = "critical"
	severityWarning  = "warning"
)

// ruleDefault is a rule's severity and default "for" duration: how long its
// condition must hold before the alert fires.
type ruleDefault struct {
	severity string
	forDur   time.Duration
}

var ruleDefaults = map[string]ruleDefault{
	// A SETNX lock is briefly without a TTL between SETNX and EXPIRE
	// (seed 004); half a minute without one is not that window any more.
	RuleLockNoExpiry:    {severityWarning, 30 * time.Second},
	RuleLockHeldTooLong: {severityWarning, 0}, // the threshold is the duration
	// A deadline is the holder's own promise; once passed, nothing waits.
	RuleLockDeadlinePassed:      {severityCritical, 0},
	RuleLockRenewedByGoneClient: {severityCritical, 30 * time.Second},
	// The ratio is already taken over 10 s (rejectSpan).
	RuleLimiterRejectRatio: {severityWarning, 0},
	RuleLimiterErrors:      {severityWarning, 10 * time.Second},
	// Someone is guessing tokens: worth a look at once.
	RuleAuthFailures: {severityWarning, 0},
	// Long enough to ride out a failover or a slow tick.
	RuleRedisDown: {severityCritical, 10 * time.Second},
	RuleNodeDown:  {severityCritical, 10 * time.Second},
}

// rejectSpan is what limiter-reject-ratio judges: rejected over attempted
// in the last 10 s. A per-second ratio that had to stay over the threshold
// for 10 s never fired on bursty traffic (one calm second reset it), which
// is what a flooded login limiter looks like.
const rejectSpan = 10 * time.Second

// authFailuresBurst is how many wrong tokens in a minute make a burst:
// more than people mistyping, fewer than the guessing limits allow.
const authFailuresBurst = 20

// Defaults of the rules' thresholds.
const (
	DefaultHeldTooLong = 5 * time.Minute
	DefaultRejectRatio = 0.5
)

// AlertConfig adjusts the built-in rules; its zero value is every rule with
// its defaults and no webhook.
type AlertConfig struct {
	// Off disables rules by name.
	Off map[string]bool
	// For overrides a rule's "for" duration (0 fires on the first
	// evaluation that sees the condition).
	For map[string]time.Duration
	// HeldTooLong is lock-held-too-long's threshold (default 5 min).
	HeldTooLong time.Duration
	// RejectRatio is limiter-reject-ratio's threshold, rejected over
	// attempts in the 1 s window, in (0, 1] (default 0.5).
	RejectRatio float64
	// Webhook, when set, receives Alertmanager-style JSON on every fire
	// and resolve (http or https URL).
	Webhook string
}

func (c *AlertConfig) enabled(rule string) bool { return c == nil || !c.Off[rule] }

func (c *AlertConfig) forOf(rule string) time.Duration {
	if c != nil {
		if d, ok := c.For[rule]; ok && d >= 0 {
			return d
		}
	}
	return ruleDefaults[rule].forDur
}

func (c *AlertConfig) heldTooLong() time.Duration {
	if c == nil || c.HeldTooLong <= 0 {
		return DefaultHeldTooLong
	}
	return c.HeldTooLong
}

func (c *AlertConfig) rejectRatio() float64 {
	if c == nil || c.RejectRatio <= 0 || c.RejectRatio > 1 {
		return DefaultRejectRatio
	}
	return c.RejectRatio
}

// Alert is one firing alert as /api/alerts, the pages and the webhook show it.
type Alert struct {
	Rule     string    `json:"rule"`
	Name     string    `json:"name"`
	Severity string    `json:"severity"`
	Since    time.Time `json:"since"` // when it started firing
	Message  string    `json:"message"`
}

type alertKey struct{ rule, name string }

// alertChange is an alert that started firing or resolved at At.
type alertChange struct {
	Alert
	Resolved bool
	At       time.Time
}

// alertState is a condition the engine has seen: pending until it held
// for its rule's duration, then firing.
type alertState struct {
	Alert
	pendingSince time.Time
	firing       bool
}

// condition is one rule's finding on one name in one evaluation.
type condition struct {
	key     alertKey
	message string
}

// alerter evaluates the rules over sampler snapshots. It never reads
// Redis: everything comes from the snapshot the tick already took.
type alerter struct {
	cfg    *AlertConfig
	notify func([]alertChange) // nil without a webhook
	nodes  func(sn *snapshot) []nodeStatus
	// authFailures is the count of wrong tokens over the last minute
	// (auth.Failures.Recent); nil: the rule has nothing to judge.
	authFailures func(now time.Time) int

	// hist is the sampler's window history, which limiter-reject-ratio
	// sums over rejectSpan.
	hist *history

	mu       sync.Mutex
	states   map[alertKey]*alertState
	lastEval time.Time
}

func newAlerter(cfg *AlertConfig, nodes func(*snapshot) []nodeStatus, hist *history) *alerter {
	return &alerter{cfg: cfg, nodes: nodes, hist: hist, states: make(map[alertKey]*alertState)}
}

// evaluate applies every rule to sn at now. While Redis is down, the lock
// and limiter rules are not evaluated: the snapshot is the last one before
// the outage, so their alerts keep the state they had rather than fire or
// resolve on stale data.
func (a *alerter) evaluate(sn *snapshot, now time.Time) {
	if sn == nil {
		return
	}
	conds, scopes := a.conditions(sn, now)
	a.mu.Lock()
	a.lastEval = now
	var changed []alertChange
	active := make(map[alertKey]bool, len(conds))
	for _, c := range conds {
		active[c.key] = true
		st := a.states[c.key]
		if st == nil {
			st = &alertState{Alert: Alert{Rule: c.key.rule, Name: c.key.name,
				Severity: ruleDefaults[c.key.rule].severity}, pendingSince: now}
			a.states[c.key] = st
		}
		st.Message = c.message
		if !st.firing && now.Sub(st.pendingSince) >= a.cfg.forOf(c.key.rule) {
			st.firing = true
			st.Since = now
			changed = append(changed, alertChange{Alert: st.Alert, At: now})
		}
	}
	for k, st := range a.states {
		if active[k] || !scopes[k.rule] {
			continue
		}
		delete(a.states, k)
		if st.firing {
			changed = append(changed, alertChange{Alert: st.Alert, Resolved: true, At: now})
		}
	}
	notify := a.notify
	a.mu.Unlock()
	if notify != nil && len(changed) > 0 {
		notify(changed)
	}
}

// sinceLastEval is how long ago the last evaluation ran (a large value
// before the first).
func (a *alerter) sinceLastEval(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastEval.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return now.Sub(a.lastEval)
}

// firing returns the firing alerts, critical first, then oldest first.
func (a *alerter) firing() []Alert {
	a.mu.Lock()
	out := make([]Alert, 0, len(a.states))
	for _, st := range a.states {
		if st.firing {
			out = append(out, st.Alert)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Alert) int {
		if x.Severity != y.Severity {
			if x.Severity == severityCritical {
				return -1
			}
			return 1
		}
		return cmp.Or(x.Since.Compare(y.Since), cmp.Compare(x.Rule, y.Rule), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// conditions applies the enabled rules to sn; scopes says which rules were
// evaluated (the others' states are left as they are).
func (a *alerter) conditions(sn *snapshot, now time.Time) ([]condition, map[string]bool) {
	var out []condition
	scopes := make(map[string]bool, len(AlertRules))
	add := func(rule, name, format string, args ...any) {
		out = append(out, condition{alertKey{rule, name}, fmt.Sprintf(format, args...)})
	}
	on := func(rule string) bool {
		if !a.cfg.enabled(rule) {
			return false
		}
		scopes[rule] = true
		return true
	}
	if on(RuleRedisDown) && !sn.RedisUp {
		add(RuleRedisDown, "", "the console cannot read Redis")
	}
	if on(RuleAuthFailures) && a.authFailures != nil {
		if n := a.authFailures(now); n >= authFailuresBurst {
			add(RuleAuthFailures, "", "%d wrong tokens in the last minute: someone may be guessing (see the refused audit trail)", n)
		}
	}
	if on(RuleNodeDown) {
		nodes := a.nodes(sn)
		up := 0
		for _, n := range nodes {
			if n.Up {
				up++
			}
		}
		// All nodes down is redis-down; node-down is one node of several.
		for _, n := range nodes {
			if !n.Up && up > 0 {
				add(RuleNodeDown, n.Name, "Redis node %s does not answer", n.Name)
			}
		}
	}
	if !sn.RedisUp {
		return out, scopes
	}
	noExpiry, tooLong := on(RuleLockNoExpiry), on(RuleLockHeldTooLong)
	deadline, gone := on(RuleLockDeadlinePassed), on(RuleLockRenewedByGoneClient)
	limit := a.cfg.heldTooLong()
	for _, l := range sn.Locks {
		if noExpiry && l.PTTL < 0 {
			add(RuleLockNoExpiry, l.Name, "lock %s has no expiry: it stays forever if its holder dies", l.Name)
		}
		if tooLong && len(l.Holders) > 0 {
			if start, ok := lockHoldStart(sn, l); ok && now.Sub(start) >= limit {
				add(RuleLockHeldTooLong, l.Name, "lock %s held for %s (limit %s)", l.Name,
					now.Sub(start).Round(time.Second), limit)
			}
		}
		if deadline {
			if d, ok := lockDeadline(l); ok && now.After(d) {
				add(RuleLockDeadlinePassed, l.Name, "lock %s is still held %s after its deadline", l.Name,
					now.Sub(d).Round(time.Second))
			}
		}
		if gone {
			if holder, ok := lockRenewedByGoneClient(sn, l); ok {
				add(RuleLockRenewedByGoneClient, l.Name, "lock %s is renewed by %s, a client that is gone", l.Name, holder)
			}
		}
	}
	ratioOn, errorsOn := on(RuleLimiterRejectRatio), on(RuleLimiterErrors)
	ratio := a.cfg.rejectRatio()
	for _, l := range sn.Limiters {
		w := sn.window(l.Name)
		span, covered := a.hist.sumSpan(l.Name, rejectSpan)
		// Redisson limiters' rejections happen in clients' own scripts and
		// are not counted, so their ratio would be made up.
		if attempts := span.Acquired + span.Rejected; ratioOn && covered && !l.RejectionsHidden && attempts > 0 &&
			float64(span.Rejected) > ratio*float64(attempts) {
			add(RuleLimiterRejectRatio, l.Name, "limiter %s rejected %d of %d attempts in the last %v (over %.0f%%)",
				l.Name, span.Rejected, attempts, rejectSpan, ratio*100)
		}
		if errorsOn && w.Errors > 0 {
			add(RuleLimiterErrors, l.Name, "limiter %s: %d errors in the last second", l.Name, w.Errors)
		}
	}
	return out, scopes
}

// lockHoldStart is when l's holder took it: the earliest acquisition
// lockwarden's scripts recorded for a current holder, else the console's
// own first sight of the lock.
func lockHoldStart(sn *snapshot, l inspect.LockInfo) (time.Time, bool) {
	var first int64
	for _, h := range l.Holders {
		if h.AcquiredMS > 0 && (first == 0 || h.AcquiredMS < first) {
			first = h.AcquiredMS
		}
	}
	if first > 0 {
		return time.UnixMilli(first), true
	}
	t, ok := sn.FirstSeen[l.Name]
	return t, ok
}

// lockDeadline is a deadline lock's deadline; other kinds carry none.
func lockDeadline(l inspect.LockInfo) (time.Time, bool) {
	if l.Kind != inspect.KindDeadlineLock || l.Deadline.IsZero() {
		return time.Time{}, false
	}
	return l.Deadline, true
}

// goneLeaseSlack is how long after its client's last heartbeat a lease may
// still be alive without renewal: Redisson's default lease (a longer lease
// set on purpose would read as renewed, hence twice that).
const goneLeaseSlack = 2 * store.DefaultLockLease

// lockRenewedByGoneClient names a holder of l whose registered client has
// stopped beating while the lock's lease is still being renewed: its
// renewal was recorded after the last heartbeat, or (no renewal recorded)
// the lease is alive long after the heartbeat stopped. A process whose
// registry beat died while its watchdog lives on, or a zombie behind a
// partition, holds the lock that way until someone breaks it.
func lockRenewedByGoneClient(sn *snapshot, l inspect.LockInfo) (string, bool) {
	if sn == nil || sn.Registry == nil || l.PTTL <= 0 {
		return "", false
	}
	for _, h := range l.Holders {
		ci, ok := sn.Registry.Lookup(h.ID)
		if !ok || !ci.Gone() {
			continue
		}
		renewedAfter := h.RenewedMS > ci.Heartbeat.UnixMilli()
		leaseOutlived := h.RenewedMS == 0 && time.Duration(ci.HeartbeatAgeMS)*time.Millisecond > goneLeaseSlack
		if renewedAfter || leaseOutlived {
			return inspect.DescribeHolder(sn.Registry, h.ID), true
		}
	}
	return "", false
}

// nodeStatus is one Redis node as the sampler last saw it.
type nodeStatus struct {
	Name string
	Up   bool
}

// singleNode is the node status before the first per-master probe
// (nodes.go, Server.nodeStatuses): the only node is up exactly when the
// tick reached Redis.
func singleNode(name string) func(*snapshot) []nodeStatus {
	return func(sn *snapshot) []nodeStatus { return []nodeStatus{{Name: name, Up: sn.RedisUp}} }
}

// alertsLoop evaluates the latest snapshot every second when the sampler
// has not: a failing tick publishes no snapshot, yet redis-down must fire.
func (s *Server) alertsLoop(done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			if s.alerts.sinceLastEval(now) >= time.Second {
				s.alerts.evaluate(s.sampler.latest(), now)
				s.publishAlerts()
			}
		}
	}
}

// observeSnapshot is the sampler's hook, called once per published
// snapshot: it counts completed stats buckets and evaluates the alerts.
func (s *Server) observeSnapshot(sn *snapshot) {
	s.objects.observe(sn)
	s.alerts.evaluate(sn, time.Now())
	s.publishAlerts()
}

// alertRows are the firing alerts as the overview and the wall show them.
func (s *Server) alertRows() []views.AlertRow {
	var rows []views.AlertRow
	for _, a := range s.alerts.firing() {
		rows = append(rows, views.AlertRow{Rule: a.Rule, Name: a.Name, Severity: a.Severity, Message: a.Message, Since: a.Since})
	}
	return rows
}

type alertsJSON struct {
	Alerts []Alert `json:"alerts"`
}

func (s *Server) handleAPIAlerts(c echo.Context) error {
	return c.JSON(http.StatusOK, alertsJSON{Alerts: s.alerts.firing()})
}
