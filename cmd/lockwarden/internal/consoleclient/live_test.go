package consoleclient

import "testing"

// Frames as web/feed writes them: a whole stats frame, then deltas that
// carry only what changed.

func TestLiveAppliesDeltasOntoTheWholeFrame(t *testing.T) {
	var l Live
	apply := func(frame string) {
		t.Helper()
		if _, err := l.Apply([]byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	// A delta before any whole frame has nothing to apply to.
	apply(`{"type":"stats","delta":true,"at":900,"locks":{"a":{"acquired":9}}}`)
	if l.Primed || len(l.Locks) != 0 {
		t.Fatalf("a delta before the whole frame was applied: %+v", l)
	}
	apply(`{"type":"stats","at":1000,"limiters":{"rl":{"acquired":5,"rejected":1}},"locks":{"a":{},"b":{}},
		"available":{"rl":3},"pttl_ms":{"a":30000,"b":-1},"who":{"a":{"h1":{"who":"orders-api on vm"}}},
		"waiters":{"a":2},"waiting_since":{"a":400},"deadlocked":["a"],"waits":{"a":{"contended":4,"p99_ms":120}},"deadlocks":1,"lock_count":2,"limiter_count":1,
		"kinds":{"a":"reentrant","b":"token-lock","rl":"token-bucket"},"holders":{"a":[{"id":"h1"}]},
		"limiter_info":{"rl":{"kind":"token-bucket","rate":20,"interval_ms":50}}}`)
	if l.LongestWaitMS("a") != 600 || !l.Deadlocked["a"] {
		t.Errorf("a's longest wait %d, deadlocked %v; want 600 ms counted from waiting_since, and a", l.LongestWaitMS("a"), l.Deadlocked)
	}
	apply(`{"type":"stats","delta":true,"seq":1,"at":1200,"waiting_since":{"a":0},"limiters":{"rl":{"acquired":7}},"locks":{},
		"available":{},"pttl_ms":{},"who":{},"waiters":{"a":0},"waits":{"a":{}},"deadlocks":0,"lock_count":1,
		"limiter_count":1,"removed":["b"]}`)

	switch {
	case l.Limiters["rl"].Acquired != 7 || l.Available["rl"] != 3:
		t.Errorf("limiter rl = %+v, available %d; want the delta's 7 and the whole frame's 3", l.Limiters["rl"], l.Available["rl"])
	case l.Waiters["a"] != 0 || len(l.Waits) != 0 || l.LongestWaitMS("a") != -1 || l.Deadlocked["a"]:
		t.Errorf("a's last waiter left and its contention with it: waiters %v, waits %v", l.Waiters, l.Waits)
	case len(l.Locks) != 1 || l.LeaseMS("b") != 0:
		t.Errorf("b was removed: locks %v", l.Locks)
	case l.LeaseMS("a") != 29800:
		t.Errorf("a's lease = %d, want 30000 counted down by the 200 ms between frames", l.LeaseMS("a"))
	case l.Who["a"]["h1"].Who != "orders-api on vm" || l.Kinds["a"] != "reentrant" || l.LimiterInfo["rl"].Rate != 20:
		t.Errorf("the meta sent once is lost: who %v, kinds %v, limiter info %v", l.Who, l.Kinds, l.LimiterInfo)
	case l.Deadlocks != 0 || l.LockCount != 1:
		t.Errorf("deadlocks %d, lock count %d; want the delta's 0 and 1", l.Deadlocks, l.LockCount)
	}

	apply(`{"type":"status","redis":"down","at":1300}`)
	apply(`{"type":"alerts","alerts":[{"rule":"lock-no-expiry","name":"a","severity":"warning"}]}`)
	l.Reset()
	if !l.RedisDown || len(l.Alerts) != 1 || l.Primed || l.Locks != nil {
		t.Errorf("Reset keeps Redis's state and the alerts and forgets the rest: %+v", l)
	}
}
