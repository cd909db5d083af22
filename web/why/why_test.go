package why

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

const client = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc"

var now = time.Date(2026, 3, 4, 3, 12, 0, 0, time.UTC)

func ms(n int64) *int64 { return &n }

// A holder whose client stopped beating makes a stuck lock: the answer
// says so, names the client's application, offers the holder-checked
// force-unlock first and release-all for the dead client.
func TestLockHeldByAGoneClientIsStuck(t *testing.T) {
	a := Lock(LockInput{Now: now, Lock: inspect.LockInfo{Name: "orders:42", Kind: inspect.KindReentrant, PTTL: -1,
		Holders: []inspect.Holder{{ID: client + ":77", Count: 1, HeldMS: 11 * 60_000, Who: "orders-api on host-7 (pid 4211), owner 77, client gone",
			Client: &inspect.HolderClient{App: "orders-api", Host: "host-7", PID: 4211, HeartbeatAgeMS: 90_000, Gone: true}}},
		Waiters:      []inspect.Waiter{{Owner: "w1", RemainingMS: 5000, ArrivedMS: now.UnixMilli() - 30_000, WaitingMS: ms(30_000), Who: "billing on host-2 (pid 9), owner w1"}},
		WaitersTotal: 1}})
	if a.State != StateStuck {
		t.Errorf("state %q, want stuck", a.State)
	}
	for _, s := range []string{"since 03:01:00 UTC (11 min ago)", "stopped beating 1 min 30 s ago", "no expiry",
		"1 client waits for it: billing on host-2 (pid 9), owner w1, for 30 s"} {
		if !strings.Contains(a.Answer, s) {
			t.Errorf("answer %q does not say %q", a.Answer, s)
		}
	}
	if len(a.Actions) != 2 || a.Actions[0].Action != "force-unlock" || a.Actions[1].Action != "release-all" ||
		a.Actions[1].Command != "lockwarden release-all "+client+" --reason '…'" {
		t.Errorf("actions %+v", a.Actions)
	}
	if a.Facts["longest_wait_ms"] != int64(30_000) || a.Facts["client_alive"] != false {
		t.Errorf("facts %v", a.Facts)
	}
}

// A run of rejections older than the live windows is dated by the
// history's steps; a run that covers the whole hour says so.
func TestLimiterRejectionsStartFromTheHistory(t *testing.T) {
	var ws []live.WindowPoint
	for i := range 900 { // three minutes of ticks, all rejecting
		ws = append(ws, live.WindowPoint{At: now.UnixMilli() - int64(i)*200, Window: inspect.Counts{Acquired: 10, Rejected: 5}})
	}
	h := &history.LimiterHistory{StepS: 10, Kept: true}
	for i := range 360 {
		p := history.Point{T: now.Add(-time.Hour).Unix() + int64(i)*10, Acquired: 100}
		if i >= 300 { // rejecting for the last 10 minutes
			p.Rejected = 50
		}
		h.Points = append(h.Points, p)
	}
	in := LimiterInput{Now: now, Second: inspect.Counts{Acquired: 10, Rejected: 5}, Recent: ws, History: h,
		Limiter: inspect.LimiterInfo{Name: "rl", Kind: inspect.KindRedissonLimiter, Rate: 500, IntervalMS: 1000, PerSecond: 500}}
	a := Limiter(in)
	if a.State != StateRejecting || !strings.Contains(a.Answer, "Rejections started at 03:02:00 UTC, 10 min ago") ||
		!strings.Contains(a.Answer, "admits 500 per second") {
		t.Errorf("state %q answer %q", a.State, a.Answer)
	}
	if !strings.Contains(a.Answer, "over the last minute, 600 admitted and 300 rejected (33%)") {
		t.Errorf("answer %q: want the last minute summed once per second", a.Answer)
	}
	for i := range h.Points {
		h.Points[i].Rejected = 1
	}
	if a := Limiter(in); !strings.Contains(a.Answer, "rejecting for all of the last hour") {
		t.Errorf("answer %q: want the whole hour", a.Answer)
	}
	in.Changes = []inspect.AuditRecord{{Action: "modify", Role: "admin", Time: now.Add(-5 * time.Minute),
		Before: "rate=1000 interval_ms=1000", After: "rate=500 interval_ms=1000", Reason: "partner overload"}}
	for i := range h.Points {
		h.Points[i].Rejected = 0
		if h.Points[i].T >= in.Changes[0].Time.Unix() {
			h.Points[i].Rejected = 100
		}
	}
	a = Limiter(in)
	if !strings.Contains(a.Answer, `because "partner overload"`) || !strings.Contains(a.Answer, "from 0% of attempts in the ten minutes before it to 50% since") {
		t.Errorf("answer %q: want the change, its reason and what rejections did after it", a.Answer)
	}
}

// A name that went: a lock says since when and who held it last, from
// the live memory or, without it, the history's last hold and how it
// ended; a counter says its key went.
func TestGone(t *testing.T) {
	g := &live.Gone{Name: "orders:9", Kind: inspect.KindReentrant, Lock: true, At: now.Add(-2 * time.Minute),
		Holders: []inspect.Holder{{ID: client + ":1", Who: "orders-api on host-7 (pid 4211), owner 1", HeldMS: 4000}}}
	a := Gone(GoneInput{Name: "orders:9", Now: now, Gone: g})
	if a.State != StateFree || !strings.Contains(a.Answer, "free since 03:10:00 UTC (2 min ago)") ||
		!strings.Contains(a.Answer, "last held by orders-api on host-7 (pid 4211), owner 1, for at least 4 s") {
		t.Errorf("%+v", a)
	}
	holds := []history.Hold{{Holder: client + ":1", From: now.Add(-10 * time.Minute), To: now.Add(-3 * time.Minute),
		Ended: history.EndExpired, Client: &history.Client{App: "orders-api", Host: "host-7", PID: 4211}}}
	in := GoneInput{Name: "orders:9", Now: now, Holds: holds}
	if !in.Known() {
		t.Fatal("a kept hold is something to answer with")
	}
	a = Gone(in)
	if !strings.Contains(a.Answer, "free since 03:09:00 UTC") || !strings.Contains(a.Answer, "lease ran out") || a.Facts["last_hold_ended"] != "expired" ||
		!strings.Contains(a.Answer, "by orders-api on host-7 (pid 4211), owner 1,") {
		t.Errorf("%+v", a)
	}
	// Two holds of one process differ only by their owners: the answer
	// names both.
	proc := &live.ViolationClient{App: "orders-api", Host: "host-7", PID: 4211}
	in.Violations = []live.LeaseViolation{{Lock: "orders:9", Kind: live.ViolationExpiredWhileWorking, Holder: client + ":crashed-1",
		Client: proc, NextHolder: client + ":crashed-2", NextClient: proc, At: now.Add(-4 * time.Minute)}}
	if a := Gone(in); !strings.Contains(a.Answer, "by orders-api on host-7 (pid 4211), owner crashed-1 while orders-api on host-7 (pid 4211), owner crashed-2 held it") {
		t.Errorf("violation answer %q: want both holders told apart by their owners", a.Answer)
	}
	if (GoneInput{Name: "x", Now: now}).Known() {
		t.Error("nothing remembered is not known")
	}
	c := Gone(GoneInput{Name: "hits:1.2.3.4", Now: now, Gone: &live.Gone{Name: "hits:1.2.3.4", Kind: inspect.KindCounter, At: now.Add(-time.Second)}})
	if c.State != StateGone || !strings.Contains(c.Answer, "window ends") {
		t.Errorf("%+v", c)
	}
}
