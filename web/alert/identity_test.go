package alert

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

const goneUUID = "11111111-2222-4333-8444-555555555555"

func firingRule(a *Engine, rule string) *Alert {
	for _, f := range a.Firing() {
		if f.Rule == rule {
			return &f
		}
	}
	return nil
}

func TestAlertDeadlinePassed(t *testing.T) {
	a, _ := testAlerter(nil, nil)
	l := inspect.LockInfo{Name: "batch", Kind: inspect.KindDeadlineLock, PTTL: -1,
		Holders: []inspect.Holder{{ID: "1", Count: 1}}, Deadline: t0.Add(time.Minute)}
	sn := &live.Snapshot{RedisUp: true, Locks: []inspect.LockInfo{l}, FirstSeen: map[string]time.Time{}, Stats: map[string]inspect.Summary{}}
	a.evaluate(sn, t0)
	if f := firingRule(a, RuleLockDeadlinePassed); f != nil {
		t.Fatalf("fired before the deadline: %+v", f)
	}
	a.evaluate(sn, t0.Add(2*time.Minute))
	if f := firingRule(a, RuleLockDeadlinePassed); f == nil || f.Name != "batch" || !strings.Contains(f.Message, "after its deadline") {
		t.Fatalf("deadline passed, firing = %+v", a.Firing())
	}
}

func TestAlertHoldStartUsesRecordedAcquisition(t *testing.T) {
	sn := lockSnap(time.Minute, t0)
	if got, _ := sn.HoldStart(sn.Locks[0]); !got.Equal(t0) {
		t.Fatalf("without a record: %v, want first sight %v", got, t0)
	}
	sn.Locks[0].Holders[0].AcquiredMS = t0.Add(-time.Hour).UnixMilli()
	if got, _ := sn.HoldStart(sn.Locks[0]); !got.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("with a record: %v, want the recorded acquisition", got)
	}
}

func goneSnap(ageMS, renewedMS int64, pttl time.Duration) *live.Snapshot {
	reg := &inspect.Registry{At: t0, Clients: map[string]inspect.ClientInfo{goneUUID: {ID: goneUUID, App: "orders-api",
		Host: "h", PID: 1, BeatMS: 5000, Heartbeat: t0.Add(-time.Duration(ageMS) * time.Millisecond), HeartbeatAgeMS: ageMS}}}
	return &live.Snapshot{RedisUp: true, Registry: reg, FirstSeen: map[string]time.Time{}, Stats: map[string]inspect.Summary{},
		Locks: []inspect.LockInfo{{Name: "job", Kind: inspect.KindReentrant, PTTL: pttl,
			Holders: []inspect.Holder{{ID: goneUUID + ":7", Count: 1, RenewedMS: renewedMS}}}}}
}

func TestLockRenewedByGoneClient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sn        *live.Snapshot
		wantFired bool
	}{
		{"alive client", goneSnap(1000, 0, 30*time.Second), false},
		{"gone, renewed after its last beat", goneSnap(20_000, t0.Add(-time.Second).UnixMilli(), 30*time.Second), true},
		{"gone, last renewed before its last beat", goneSnap(20_000, t0.Add(-time.Minute).UnixMilli(), 30*time.Second), false},
		{"gone long ago, lease still alive", goneSnap(5*60_000, 0, 30*time.Second), true},
		{"gone recently, lease running out", goneSnap(20_000, 0, 10*time.Second), false},
		{"gone, no expiry (not a lease)", goneSnap(5*60_000, 0, -1), false},
	} {
		who, ok := lockRenewedByGoneClient(tc.sn, tc.sn.Locks[0])
		if ok != tc.wantFired || (ok && !strings.HasPrefix(who, "orders-api on h (pid 1)")) {
			t.Errorf("%s: got %q, %v", tc.name, who, ok)
		}
	}
}
