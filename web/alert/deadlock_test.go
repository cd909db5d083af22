package alert

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// deadlockSnap is a snapshot whose two registered services deadlock on
// stock and cart.
func deadlockSnap(t *testing.T) *live.Snapshot {
	t.Helper()
	const a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	locks := []inspect.LockInfo{
		{Name: "stock", Holders: []inspect.Holder{{ID: a + ":r1", Count: 1}},
			Waiters: []inspect.Waiter{{ID: "tok-b", Owner: b + ":c7"}}, WaitersTotal: 1},
		{Name: "cart", Holders: []inspect.Holder{{ID: b + ":c7", Count: 1}},
			Waiters: []inspect.Waiter{{ID: "tok-a", Owner: a + ":r1"}}, WaitersTotal: 1},
	}
	found := inspect.Deadlocks(locks)
	if len(found) != 1 {
		t.Fatalf("the hand-built snapshot has %d cycles", len(found))
	}
	reg := &inspect.Registry{At: t0, Clients: map[string]inspect.ClientInfo{
		a: {ID: a, App: "inventory-svc", Host: "node-1", PID: 11, Heartbeat: t0, BeatMS: 1000},
		b: {ID: b, App: "checkout-svc", Host: "node-2", PID: 22, Heartbeat: t0, BeatMS: 1000},
	}}
	return &live.Snapshot{RedisUp: true, Locks: locks, Registry: reg, Stats: map[string]inspect.Summary{},
		Deadlocks: []live.SeenDeadlock{{Deadlock: found[0], Since: t0}}}
}

// A cycle fires lock-deadlock at once, critical, naming each lock, its
// holder and what it waits for with the holders' identities, in the
// webhook too; it resolves once the cycle is gone.
func TestAlertDeadlock(t *testing.T) {
	rcv := newReceiver(t, 0)
	w := NewWebhook(rcv.URL, slog.New(slog.DiscardHandler))
	go w.Run(t.Context())
	a := New(Config{}, func(*live.Snapshot) []live.NodeStatus { return nil }, live.New(live.Config{}).Windows(), w)
	a.evaluate(deadlockSnap(t), t0)
	f := firingRule(a, RuleLockDeadlock)
	if f == nil || f.Severity != SeverityCritical || f.Name != "cart → stock → cart" {
		t.Fatalf("firing %+v, want lock-deadlock on cart → stock → cart, critical", a.Firing())
	}
	for _, s := range []string{"cart is held by checkout-svc on node-2 (pid 22)", "which waits for stock",
		"stock is held by inventory-svc on node-1 (pid 11)", "which waits for cart"} {
		if !strings.Contains(f.Message, s) {
			t.Errorf("message %q does not say %q", f.Message, s)
		}
	}
	p := rcv.next(t)
	if p.Status != "firing" || p.Alerts[0].Labels["alertname"] != RuleLockDeadlock ||
		p.Alerts[0].Annotations["summary"] != f.Message {
		t.Errorf("webhook post %+v", p)
	}
	a.evaluate(&live.Snapshot{RedisUp: true, Stats: map[string]inspect.Summary{}}, t0.Add(time.Second))
	if f := firingRule(a, RuleLockDeadlock); f != nil {
		t.Errorf("still firing once the cycle is gone: %+v", f)
	}
	if p := rcv.next(t); p.Status != "resolved" {
		t.Errorf("webhook post after the break: %+v", p)
	}
}
