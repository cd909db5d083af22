package alert

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

func waitSnap(p99MS, contended int64) *live.Snapshot {
	sn := lockSnap(time.Minute, t0)
	sn.Stats["job"] = inspect.Summary{Wait: &inspect.WaitWindows{TenSeconds: inspect.WaitStats{WindowS: 10,
		Acquired: 40, Contended: contended, P50MS: 300, P99MS: p99MS, MaxMS: p99MS}}}
	return sn
}

// lock-wait-too-long fires once the 10 s p99 stayed over 5 s for a minute,
// names the lock and its numbers, and resolves when waits are short again.
func TestAlertLockWaitTooLong(t *testing.T) {
	a, rec := testAlerter(nil, nil)
	a.evaluate(waitSnap(6000, 12), t0)
	a.evaluate(waitSnap(6000, 12), t0.Add(59*time.Second))
	if len(a.Firing()) != 0 {
		t.Fatal("fired before its minute")
	}
	a.evaluate(waitSnap(6000, 12), t0.Add(60*time.Second))
	got := a.Firing()
	if len(got) != 1 || got[0].Rule != RuleLockWaitTooLong || got[0].Name != "job" || got[0].Severity != SeverityWarning ||
		!strings.Contains(got[0].Message, "p99 wait 6 s") || !strings.Contains(got[0].Message, "12 of 40") {
		t.Fatalf("firing = %+v", got)
	}
	a.evaluate(waitSnap(100, 12), t0.Add(61*time.Second))
	if len(a.Firing()) != 0 || len(rec.changes) != 2 || !rec.changes[1].Resolved {
		t.Fatalf("firing %+v, posts %+v", a.Firing(), rec.changes)
	}
}

// At the threshold, without waits, or without stats, nothing is pending.
func TestAlertLockWaitTooLongNeedsLongWaits(t *testing.T) {
	a, _ := testAlerter(&Config{WaitTooLong: 2 * time.Second, For: map[string]time.Duration{RuleLockWaitTooLong: 0}}, nil)
	for _, sn := range []*live.Snapshot{waitSnap(2000, 3), waitSnap(9000, 0), lockSnap(time.Minute, t0)} {
		a.evaluate(sn, t0)
		if got := a.Firing(); len(got) != 0 {
			t.Fatalf("fired: %+v", got)
		}
	}
	a.evaluate(waitSnap(2001, 3), t0)
	if got := a.Firing(); len(got) != 1 || !strings.Contains(got[0].Message, "limit 2 s") {
		t.Fatalf("firing = %+v, want one over the configured 2 s", got)
	}
}
