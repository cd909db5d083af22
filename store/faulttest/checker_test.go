package faulttest

import (
	"testing"
	"time"
)

// The checker must see what it is there to see: these feed it made-up
// histories.
func TestCheckerFindsOverlaps(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var c checker
	c.record(grant{holder: "a", called: at(0), granted: at(0), release: at(50), lease: time.Second, token: 1})
	c.record(grant{holder: "b", called: at(10), granted: at(20), release: at(60), lease: time.Second, token: 2})     // overlaps a: violation
	c.record(grant{holder: "c", called: at(100), granted: at(100), release: at(1500), lease: time.Second, token: 3}) // held past its lease
	c.record(grant{holder: "d", called: at(1200), granted: at(1200), release: at(1210), lease: time.Second, token: 3})
	c.record(grant{holder: "r1", shared: true, called: at(2000), granted: at(2000), release: at(2100), lease: time.Second})
	c.record(grant{holder: "r2", shared: true, called: at(2050), granted: at(2050), release: at(2150), lease: time.Second})
	v := c.check()
	if len(v.violations) != 1 {
		t.Errorf("violations %q, want a/b only", v.violations)
	}
	if len(v.leaseOut) != 1 {
		t.Errorf("lease ran out %q, want c/d only", v.leaseOut)
	}
	if len(v.tokens) != 1 {
		t.Errorf("tokens %q, want d's repeated 3", v.tokens)
	}
}

// A worker left waiting by the scheduler sees its grant late: the hold
// began in Redis somewhere after the call, and its lease may have run out
// before the worker saw the reply. Such an overlap is no double grant;
// the same overlap within a lease of the call is.
func TestCheckerLateReplyIsNoDoubleGrant(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var late checker
	late.record(grant{holder: "a", called: at(0), granted: at(900), release: at(1340), lease: time.Second, token: 1})
	late.record(grant{holder: "b", called: at(100), granted: at(1131), release: at(1140), lease: time.Second, token: 2})
	if v := late.check(); len(v.violations) != 0 || len(v.leaseOut) != 1 {
		t.Fatalf("a grant seen 900 ms after its call, the next 1,031 ms after the call: %+v, want a lease that may have run out", v)
	}
	var prompt checker
	prompt.record(grant{holder: "a", called: at(880), granted: at(900), release: at(1340), lease: time.Second, token: 1})
	prompt.record(grant{holder: "b", called: at(890), granted: at(1131), release: at(1140), lease: time.Second, token: 2})
	if v := prompt.check(); len(v.violations) != 1 {
		t.Fatalf("a grant seen 20 ms after its call, the next 251 ms later: %+v, want a double grant", v)
	}
}

// A restart that loses the lock ends every hold at the kill: a grant
// after it overlaps the holds before only as their workers saw them, and
// the fencing token starts again.
func TestCheckerKillEndsHolds(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var c checker
	c.record(grant{holder: "a", called: at(0), granted: at(0), release: at(1400), lease: 1500 * time.Millisecond, token: 9})
	c.record(grant{holder: "b", called: at(100), granted: at(1300), release: at(1310), lease: 1500 * time.Millisecond, token: 1})
	if v := c.check(); len(v.violations) != 1 || len(v.tokens) != 1 {
		t.Fatalf("without a kill: %+v, want one violation and one token", v)
	}
	c.killed(at(1000))
	if v := c.check(); len(v.violations) != 0 || len(v.leaseOut) != 1 || len(v.tokenReset) != 1 {
		t.Fatalf("after a kill at 1 s: %+v, want lease ran out and a token reset", v)
	}
}

func TestWindowExcess(t *testing.T) {
	t0 := time.Now()
	var as []admission
	for i := range 10 {
		s := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		as = append(as, admission{start: s, end: s.Add(time.Millisecond)})
	}
	if ex := windowExcess(as, 10); ex != "" {
		t.Errorf("10 in a second, bound 10: %s", ex)
	}
	if ex := windowExcess(as, 9); ex == "" {
		t.Error("10 in a second passed bound 9")
	}
	// A late reply stretches a call over the window's end: not counted.
	as[9].end = t0.Add(2 * time.Second)
	if ex := windowExcess(as, 9); ex != "" {
		t.Errorf("a call ending outside the window counted: %s", ex)
	}
}
