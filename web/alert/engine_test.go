package alert

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// t0 is an arbitrary instant the pure tests count from.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder collects the changes an engine announces.
type recorder struct{ changes []Change }

func (r *recorder) AlertsChanged(c []Change, _ []Alert) { r.changes = append(r.changes, c...) }

func testAlerter(cfg *Config, nodes func(*live.Snapshot) []live.NodeStatus) (*Engine, *recorder) {
	if nodes == nil {
		nodes = func(sn *live.Snapshot) []live.NodeStatus { return []live.NodeStatus{{Name: "n1", Up: sn.RedisUp}} }
	}
	if cfg == nil {
		cfg = &Config{}
	}
	r := &recorder{}
	return New(*cfg, nodes, live.New(live.Config{}).Windows(), r), r
}

func lockSnap(pttl time.Duration, first time.Time) *live.Snapshot {
	return &live.Snapshot{RedisUp: true,
		Locks:     []inspect.LockInfo{{Name: "job", Holders: []inspect.Holder{{ID: "h", Count: 1}}, PTTL: pttl}},
		FirstSeen: map[string]time.Time{"job": first}, Stats: map[string]inspect.Summary{}}
}

func TestAlertNoExpiryFiresAfterForAndResolves(t *testing.T) {
	a, rec := testAlerter(nil, nil) // default: 30 s
	sn := lockSnap(-1, t0)
	a.evaluate(sn, t0)
	a.evaluate(sn, t0.Add(29*time.Second))
	if got := a.Firing(); len(got) != 0 {
		t.Fatalf("fired before its 30 s: %+v", got)
	}
	a.evaluate(sn, t0.Add(30*time.Second))
	got := a.Firing()
	if len(got) != 1 || got[0].Rule != RuleLockNoExpiry || got[0].Name != "job" || got[0].Severity != SeverityWarning ||
		!got[0].Since.Equal(t0.Add(30*time.Second)) || !strings.Contains(got[0].Message, "no expiry") {
		t.Fatalf("firing = %+v", got)
	}
	// Still firing: since stays, nothing is posted again.
	a.evaluate(sn, t0.Add(40*time.Second))
	if len(rec.changes) != 1 || rec.changes[0].Resolved {
		t.Fatalf("posts = %+v", rec.changes)
	}
	a.evaluate(lockSnap(time.Minute, t0), t0.Add(50*time.Second)) // an expiry was set
	if got := a.Firing(); len(got) != 0 {
		t.Fatalf("still firing after the lock got a TTL: %+v", got)
	}
	if len(rec.changes) != 2 || !rec.changes[1].Resolved || !rec.changes[1].At.Equal(t0.Add(50*time.Second)) ||
		!rec.changes[1].Since.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("resolve post = %+v", rec.changes)
	}
}

// A condition that clears while pending never fires and posts nothing.
func TestAlertPendingClearsSilently(t *testing.T) {
	a, rec := testAlerter(nil, nil)
	a.evaluate(lockSnap(-1, t0), t0)
	a.evaluate(lockSnap(time.Second, t0), t0.Add(10*time.Second))
	a.evaluate(lockSnap(-1, t0), t0.Add(35*time.Second)) // pending again from here
	if len(a.Firing()) != 0 || len(rec.changes) != 0 {
		t.Fatalf("firing %+v, posts %+v", a.Firing(), rec.changes)
	}
}

func TestAlertHeldTooLongFromHoldStart(t *testing.T) {
	a, _ := testAlerter(&Config{HeldTooLong: time.Minute}, nil)
	a.evaluate(lockSnap(time.Minute, t0), t0.Add(59*time.Second))
	if len(a.Firing()) != 0 {
		t.Fatal("fired before the limit")
	}
	a.evaluate(lockSnap(time.Minute, t0), t0.Add(61*time.Second))
	got := a.Firing()
	if len(got) != 1 || got[0].Rule != RuleLockHeldTooLong || !strings.Contains(got[0].Message, "held for 1 min 1 s (limit 1 min)") {
		t.Fatalf("firing = %+v", got)
	}
}

func limiterSnap(w inspect.Counts, hidden bool) *live.Snapshot {
	return &live.Snapshot{RedisUp: true,
		Limiters: []inspect.LimiterInfo{{Name: "api", RejectionsHidden: hidden}},
		Stats:    map[string]inspect.Summary{"api": {Window: w}}}
}

// evalLimiter records w as the limiter's window at the tick at, as the
// sampler's history would, and evaluates the rules on it.
func evalLimiter(a *Engine, w inspect.Counts, hidden bool, at time.Time) {
	sn := limiterSnap(w, hidden)
	a.windows.PushTick(at.UnixMilli(), sn.Limiters, sn.Stats)
	a.evaluate(sn, at)
}

func TestAlertRejectRatioAndErrors(t *testing.T) {
	cfg := &Config{For: map[string]time.Duration{RuleLimiterErrors: 0}}
	a, _ := testAlerter(cfg, nil)
	// Exactly 50 % over 10 s is not over the threshold.
	for i := 0; i < 12; i++ {
		evalLimiter(a, inspect.Counts{Acquired: 5, Rejected: 5}, false, t0.Add(time.Duration(i)*time.Second))
	}
	if len(a.Firing()) != 0 {
		t.Fatalf("fired at 50 %%: %+v", a.Firing())
	}
	evalLimiter(a, inspect.Counts{Acquired: 0, Rejected: 60, Errors: 1}, false, t0.Add(12*time.Second))
	got := a.Firing()
	if len(got) != 2 {
		t.Fatalf("firing = %+v", got)
	}
	rules := map[string]bool{got[0].Rule: true, got[1].Rule: true}
	if !rules[RuleLimiterRejectRatio] || !rules[RuleLimiterErrors] {
		t.Fatalf("firing = %+v", got)
	}
	// Redisson limiters' rejections are not visible: no ratio alert.
	b, _ := testAlerter(cfg, nil)
	for i := 0; i < 12; i++ {
		evalLimiter(b, inspect.Counts{Acquired: 1, Rejected: 9}, true, t0.Add(time.Duration(i)*time.Second))
	}
	if got := b.Firing(); len(got) != 0 {
		t.Fatalf("ratio of a limiter with hidden rejections: %+v", got)
	}
}

// A flooded limiter whose per-second ratio dips below the threshold every
// other second still rejects most attempts over 10 s: the alert fires (the
// old rule, a 1 s ratio that had to hold for 10 s, never did), and a
// limiter seen for less than the span does not fire yet.
func TestAlertRejectRatioOverTenSecondsOfBurstyTraffic(t *testing.T) {
	a, _ := testAlerter(nil, nil)
	for i := 0; i < 20; i++ {
		w := inspect.Counts{Acquired: 2, Rejected: 8} // 80 %
		if i%2 == 1 {
			w = inspect.Counts{Acquired: 6, Rejected: 4} // 40 %
		}
		evalLimiter(a, w, false, t0.Add(time.Duration(i)*time.Second))
		if i < 7 && len(a.Firing()) != 0 {
			t.Fatalf("fired after %d s, before 10 s were seen: %+v", i, a.Firing())
		}
	}
	got := a.Firing()
	if len(got) != 1 || got[0].Rule != RuleLimiterRejectRatio || !strings.Contains(got[0].Message, "in the last 10 s") {
		t.Fatalf("firing = %+v, want limiter-reject-ratio over the last 10 s", got)
	}
	// Ticks every 200 ms see overlapping windows; they are counted once a
	// second, so the sum is not five times the traffic.
	c, _ := testAlerter(nil, nil)
	for i := 0; i < 60; i++ {
		evalLimiter(c, inspect.Counts{Acquired: 10, Rejected: 0}, false, t0.Add(time.Duration(i)*200*time.Millisecond))
	}
	for i := 60; i < 66; i++ { // 1.2 s of full rejection after 12 s of none
		evalLimiter(c, inspect.Counts{Acquired: 0, Rejected: 10}, false, t0.Add(time.Duration(i)*200*time.Millisecond))
	}
	if got := c.Firing(); len(got) != 0 {
		t.Fatalf("one bad second in ten fired: %+v", got)
	}
}

func TestAlertRuleOff(t *testing.T) {
	a, _ := testAlerter(&Config{Off: map[string]bool{RuleLockNoExpiry: true},
		For: map[string]time.Duration{RuleLockNoExpiry: 0}}, nil)
	a.evaluate(lockSnap(-1, t0), t0)
	if len(a.Firing()) != 0 {
		t.Fatalf("a rule that is off fired: %+v", a.Firing())
	}
}

// While Redis is down the lock rules neither fire nor resolve on the
// stale snapshot, and redis-down fires after its duration.
func TestAlertRedisDownFreezesObjectRules(t *testing.T) {
	a, _ := testAlerter(&Config{For: map[string]time.Duration{RuleLockNoExpiry: 0}}, nil)
	sn := lockSnap(-1, t0)
	a.evaluate(sn, t0)
	down := *lockSnap(time.Minute, t0) // whatever it holds must not count
	down.RedisUp = false
	a.evaluate(&down, t0.Add(time.Second))
	a.evaluate(&down, t0.Add(11*time.Second))
	got := a.Firing()
	if len(got) != 2 || got[0].Rule != RuleRedisDown || got[0].Severity != SeverityCritical || got[1].Rule != RuleLockNoExpiry {
		t.Fatalf("firing = %+v", got)
	}
	a.evaluate(lockSnap(time.Minute, t0), t0.Add(12*time.Second))
	if got := a.Firing(); len(got) != 0 {
		t.Fatalf("after recovery: %+v", got)
	}
}

// node-down names one node of several; every node down is redis-down.
func TestAlertNodeDown(t *testing.T) {
	var nodes []live.NodeStatus
	a, _ := testAlerter(&Config{For: map[string]time.Duration{RuleNodeDown: 0, RuleRedisDown: 0}},
		func(*live.Snapshot) []live.NodeStatus { return nodes })
	nodes = []live.NodeStatus{{Name: "10.0.0.1:6379", Up: true}, {Name: "10.0.0.2:6379", Up: false}}
	a.evaluate(&live.Snapshot{RedisUp: true}, t0)
	got := a.Firing()
	if len(got) != 1 || got[0].Rule != RuleNodeDown || got[0].Name != "10.0.0.2:6379" {
		t.Fatalf("one node down: %+v", got)
	}
	nodes = []live.NodeStatus{{Name: "10.0.0.1:6379", Up: false}, {Name: "10.0.0.2:6379", Up: false}}
	a.evaluate(&live.Snapshot{RedisUp: false}, t0.Add(time.Second))
	got = a.Firing()
	if len(got) != 1 || got[0].Rule != RuleRedisDown {
		t.Fatalf("all nodes down: %+v", got)
	}
}
