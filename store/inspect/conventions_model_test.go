package inspect

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
)

// What package conv finds reaches the model: an express-rate-limit
// counter takes its limit and window from the counter rule of its name,
// and says the limit is the application's only when no rule gives it.
func TestConventionCounterRule(t *testing.T) {
	const now = int64(1_790_000_000_000)
	for _, tc := range []struct {
		desc  string
		rules []CounterRule
		known bool
	}{
		{"no rule", nil, false},
		{"rule with a limit", []CounterRule{{Pattern: "rl:*", Limit: 2, Window: time.Minute}}, true},
		{"rule without a limit", []CounterRule{{Pattern: "rl:*", Window: time.Minute}}, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := ObjectPatterns{Counters: tc.rules}
			_, lim := classifyString(p, "rl:10.0.0.1", "3", 1, 30*time.Second, now)
			if lim == nil || lim.Kind != KindExpressRateLimit || lim.Count != 3 || lim.TTL != 30*time.Second {
				t.Fatalf("got %+v", lim)
			}
			if lim.LimitKnown != tc.known || (lim.Facts[conv.FactLimit] == "") != tc.known || lim.Facts["client"] != "10.0.0.1" {
				t.Fatalf("limit known %v, facts %v; want known %v", lim.LimitKnown, lim.Facts, tc.known)
			}
			if tc.known && (lim.Limit != 2 || lim.Available != 0 || lim.Grants != 2 || lim.IntervalMS != 60000) {
				t.Fatalf("counter rule not applied: %+v", lim)
			}
		})
	}
}

// A side read that does not confirm the lock drops it; one that does adds
// its facts to the holder; a lock of another kind is left alone.
func TestConventionSideRead(t *testing.T) {
	lock := func() *LockInfo {
		return &LockInfo{Name: "bull:q:1:lock", Kind: KindBullMQJobLock,
			Holders: []Holder{{ID: "w:1", Count: 1, Facts: map[string]string{conv.FactJob: "1"}}}}
	}
	confirm := conv.Side{Kind: conv.BullMQJobLock, Read: func() (map[string]string, int64, bool) {
		return map[string]string{"job_name": "mail"}, 42, true
	}}
	veto := conv.Side{Kind: conv.BullMQJobLock, Read: func() (map[string]string, int64, bool) { return nil, 0, false }}
	if l := applySide(veto, lock()); l != nil {
		t.Fatalf("vetoed lock kept: %+v", l)
	}
	l := applySide(confirm, lock())
	if l == nil || l.Holders[0].Facts["job_name"] != "mail" || l.Holders[0].Facts[conv.FactJob] != "1" || l.Holders[0].AcquiredMS != 42 {
		t.Fatalf("confirmed lock: %+v", l)
	}
	other := lock()
	other.Kind = KindTokenLock
	if l := applySide(veto, other); l != other {
		t.Fatalf("a token lock was judged by BullMQ's side read")
	}
}
