// Package alert judges the console's snapshots against the built-in rules
// (locks without expiry or held too long, deadlocks, leases lost, deadlines passed, leases renewed
// by gone clients, limiters rejecting or failing, Redis or a node down),
// keeps which alerts are pending and firing, and tells its listeners (the
// Alertmanager-style webhook, the feed) of every change. It never reads
// Redis: everything comes from live's snapshot and recent windows.
//
// It imports store, store/inspect and web/live.
package alert

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views/words"
	"github.com/lockwarden/lockwarden/web/live"
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
	// RuleLockDeadlock is in deadlock.go, RuleLockLeaseLost in lease.go.
)

// Rules lists every rule, in the order pages show them.
var Rules = []string{RuleRedisDown, RuleNodeDown, RuleLockDeadlock, RuleLockLeaseLost, RuleLockDeadlinePassed, RuleLockRenewedByGoneClient,
	RuleLockNoExpiry, RuleLockHeldTooLong, RuleLockWaitTooLong, RuleLimiterRejectRatio, RuleLimiterErrors, RuleAuthFailures}

// Severities: critical needs someone now, warning needs a look.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
)

// ruleDefault is a rule's severity and default "for" duration: how long its
// condition must hold before the alert fires.
type ruleDefault struct {
	severity string
	forDur   time.Duration
}

var ruleDefaults = map[string]ruleDefault{
	// A SETNX lock is briefly without a TTL between SETNX and EXPIRE (the
	// access-counter and deadline-lock clients do that); half a minute
	// without one is not that window any more.
	RuleLockNoExpiry:    {SeverityWarning, 30 * time.Second},
	RuleLockHeldTooLong: {SeverityWarning, 0}, // the threshold is the duration
	RuleLockWaitTooLong: {SeverityWarning, waitRuleFor},
	// A deadline is the holder's own promise; once passed, nothing waits.
	RuleLockDeadlinePassed:      {SeverityCritical, 0},
	RuleLockRenewedByGoneClient: {SeverityCritical, 30 * time.Second},
	// A cycle never ends on its own; a wait that closes one only briefly
	// (one Lock call giving up) leaves it within a tick.
	RuleLockDeadlock: {SeverityCritical, 0},
	// Exclusion was broken already: nothing to wait for.
	RuleLockLeaseLost: {SeverityCritical, 0},
	// Settings (settings.go): an eviction or an unconfirmable grant breaks
	// locks now; a reset token or a blind detector is worth a look.
	RuleRedisEvictsLocks:       {SeverityCritical, 0},
	RuleRedisAcksNoReplica:     {SeverityCritical, 0},
	RuleRedisFencingNotKept:    {SeverityWarning, 0},
	RuleRedisKeyspaceEventsOff: {SeverityWarning, 0},
	// The ratio is already taken over 10 s (rejectSpan).
	RuleLimiterRejectRatio: {SeverityWarning, 0},
	RuleLimiterErrors:      {SeverityWarning, 10 * time.Second},
	// Someone is guessing tokens: worth a look at once.
	RuleAuthFailures: {SeverityWarning, 0},
	// Long enough to ride out a failover or a slow tick.
	RuleRedisDown: {SeverityCritical, 10 * time.Second},
	RuleNodeDown:  {SeverityCritical, 10 * time.Second},
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

// Config adjusts the built-in rules; its zero value is every rule with
// its defaults and no webhook.
type Config struct {
	// Off disables rules by name.
	Off map[string]bool
	// For overrides a rule's "for" duration (0 fires on the first
	// evaluation that sees the condition).
	For map[string]time.Duration
	// HeldTooLong is lock-held-too-long's threshold (default 5 min).
	HeldTooLong time.Duration
	// WaitTooLong is lock-wait-too-long's threshold on the p99 wait over
	// the last 10 s (default 5 s).
	WaitTooLong time.Duration
	// RejectRatio is limiter-reject-ratio's threshold, rejected over
	// attempts in the last 10 s (rejectSpan), in (0, 1] (default 0.5).
	RejectRatio float64
	// Webhook, when set, receives Alertmanager-style JSON on every fire
	// and resolve (http or https URL).
	Webhook string
}

func (c *Config) enabled(rule string) bool { return c == nil || !c.Off[rule] }

func (c *Config) forOf(rule string) time.Duration {
	if c != nil {
		if d, ok := c.For[rule]; ok && d >= 0 {
			return d
		}
	}
	return ruleDefaults[rule].forDur
}

func (c *Config) heldTooLong() time.Duration {
	if c == nil || c.HeldTooLong <= 0 {
		return DefaultHeldTooLong
	}
	return c.HeldTooLong
}

func (c *Config) rejectRatio() float64 {
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

// Change is an alert that started firing or resolved at At.
type Change struct {
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

// Listener hears every change of the firing set: what changed, and what
// fires after it.
type Listener interface {
	AlertsChanged(changes []Change, firing []Alert)
}

// Engine evaluates the rules over live's snapshots.
type Engine struct {
	cfg       *Config
	listeners []Listener
	nodes     func(sn *live.Snapshot) []live.NodeStatus

	// windows are live's recent windows, which limiter-reject-ratio
	// sums over rejectSpan.
	windows *live.Windows
	// authFailures is the count of wrong tokens over the last minute
	// (auth.Failures.Recent); nil: the rule has nothing to judge.
	authFailures func(now time.Time) int

	// notifyMu orders the listeners' calls: the last call carries the
	// firing set as it is now.
	notifyMu sync.Mutex
	mu       sync.Mutex
	states   map[alertKey]*alertState
	lastEval time.Time
}

// New is an engine over cfg's rules (copied: the caller's maps are its
// own). nodes says which Redis nodes are up as of a snapshot; windows are
// the limiters' recent windows; listeners hear each change, in this order.
func New(cfg Config, nodes func(*live.Snapshot) []live.NodeStatus, windows *live.Windows, listeners ...Listener) *Engine {
	cfg.Off, cfg.For = maps.Clone(cfg.Off), maps.Clone(cfg.For)
	return &Engine{cfg: &cfg, nodes: nodes, windows: windows, listeners: listeners, states: make(map[alertKey]*alertState)}
}

// AuthFailures gives auth-failures its count of wrong tokens over the last
// minute. Call it before the engine runs.
func (a *Engine) AuthFailures(recent func(now time.Time) int) { a.authFailures = recent }

// Observe evaluates the rules on a snapshot live just published.
func (a *Engine) Observe(sn *live.Snapshot) { a.evaluate(sn, time.Now()) }

// evaluate applies every rule to sn at now. While Redis is down, the lock
// and limiter rules are not evaluated: the snapshot is the last one before
// the outage, so their alerts keep the state they had rather than fire or
// resolve on stale data.
func (a *Engine) evaluate(sn *live.Snapshot, now time.Time) {
	if sn == nil {
		return
	}
	conds, scopes := a.conditions(sn, now)
	a.mu.Lock()
	a.lastEval = now
	var changed []Change
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
			changed = append(changed, Change{Alert: st.Alert, At: now})
		}
	}
	for k, st := range a.states {
		if active[k] || !scopes[k.rule] {
			continue
		}
		delete(a.states, k)
		if st.firing {
			changed = append(changed, Change{Alert: st.Alert, Resolved: true, At: now})
		}
	}
	a.mu.Unlock()
	if len(changed) > 0 {
		a.notifyMu.Lock()
		defer a.notifyMu.Unlock()
		firing := a.Firing()
		for _, l := range a.listeners {
			l.AlertsChanged(changed, firing)
		}
	}
}

// sinceLastEval is how long ago the last evaluation ran (a large value
// before the first).
func (a *Engine) sinceLastEval(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastEval.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return now.Sub(a.lastEval)
}

// Firing returns the firing alerts, critical first, then oldest first.
func (a *Engine) Firing() []Alert {
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
			if x.Severity == SeverityCritical {
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
func (a *Engine) conditions(sn *live.Snapshot, now time.Time) ([]condition, map[string]bool) {
	var out []condition
	scopes := make(map[string]bool, len(Rules))
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
			add(RuleAuthFailures, "", "%s wrong tokens in the last minute: someone may be guessing (see the refused audit trail)", words.Count(int64(n)))
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
	if on(RuleLockDeadlock) {
		deadlockConditions(sn, add)
	}
	if on(RuleLockLeaseLost) {
		leaseConditions(sn, now, add)
	}
	settingConditions(sn, on, add)
	noExpiry, tooLong := on(RuleLockNoExpiry), on(RuleLockHeldTooLong)
	deadline, gone := on(RuleLockDeadlinePassed), on(RuleLockRenewedByGoneClient)
	limit := a.cfg.heldTooLong()
	for _, l := range sn.Locks {
		if noExpiry && l.PTTL < 0 {
			add(RuleLockNoExpiry, l.Name, "lock %s has no expiry: it stays forever if its holder dies", l.Name)
		}
		if tooLong && len(l.Holders) > 0 {
			if start, ok := sn.HoldStart(l); ok && now.Sub(start) >= limit {
				add(RuleLockHeldTooLong, l.Name, "lock %s held for %s (limit %s)", l.Name,
					words.Duration(now.Sub(start).Milliseconds()), words.Duration(limit.Milliseconds()))
			}
		}
		if deadline {
			if d, ok := lockDeadline(l); ok && now.After(d) {
				add(RuleLockDeadlinePassed, l.Name, "lock %s is still held %s after its deadline", l.Name,
					words.Duration(now.Sub(d).Milliseconds()))
			}
		}
		if gone {
			if holder, ok := lockRenewedByGoneClient(sn, l); ok {
				add(RuleLockRenewedByGoneClient, l.Name, "lock %s is renewed by %s, a client that is gone", l.Name, holder)
			}
		}
	}
	if on(RuleLockWaitTooLong) {
		a.waitConditions(sn, add)
	}
	ratioOn, errorsOn := on(RuleLimiterRejectRatio), on(RuleLimiterErrors)
	ratio := a.cfg.rejectRatio()
	for _, l := range sn.Limiters {
		w := sn.Window(l.Name)
		span, covered := a.windows.SumSpan(l.Name, rejectSpan)
		// Redisson limiters' rejections happen in clients' own scripts and
		// are not counted, so their ratio would be made up.
		if attempts := span.Acquired + span.Rejected; ratioOn && covered && !l.RejectionsHidden && attempts > 0 &&
			float64(span.Rejected) > ratio*float64(attempts) {
			add(RuleLimiterRejectRatio, l.Name, "limiter %s rejected %s of %s attempts in the last %s (over %.0f%%)",
				l.Name, words.Count(span.Rejected), words.Count(attempts), words.Duration(rejectSpan.Milliseconds()), ratio*100)
		}
		if errorsOn && w.Errors > 0 {
			add(RuleLimiterErrors, l.Name, "limiter %s: %s errors in the last second", l.Name, words.Count(w.Errors))
		}
	}
	return out, scopes
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
func lockRenewedByGoneClient(sn *live.Snapshot, l inspect.LockInfo) (string, bool) {
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

// Run evaluates the latest snapshot every second when live has not: a
// failing tick can take seconds, yet redis-down must fire on time.
func (a *Engine) Run(ctx context.Context, latest func() *live.Snapshot) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if a.sinceLastEval(now) >= time.Second {
				a.evaluate(latest(), now)
			}
		}
	}
}
