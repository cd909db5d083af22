package web

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// A waiter handed a lock it waited seconds for, which it releases a
// moment later: the lock is free before the console's next read of it,
// yet the wait is in its history (it was recorded nowhere: the console
// read waits only of locks it still listed).
func TestHandOffWaitSurvivesTheRelease(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "handed"
	ctx := t.Context()
	a := store.New(e.rdb, &store.Options{App: "billing"})
	b := store.New(e.rdb, &store.Options{App: "shipping"})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	holder, waiter := a.NewLock(name, nil), b.NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	e.synced()
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	eventually(t, 5*time.Second, "the waiter queues", func() bool {
		return e.rdb.Exists(ctx, redistest.LockQueueKey(name)).Val() == 1
	})
	time.Sleep(1500 * time.Millisecond) // a wait that matters
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := waiter.Unlock(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}

	var sum history.WaitPoint
	eventually(t, 20*time.Second, "the handed-off wait in the history", func() bool {
		flushHistory(t, e.srv)
		st, _, body := e.do("GET", "/api/locks/"+esc(name)+"/history?span=1h", nil, nil)
		if st != 200 {
			return false
		}
		var lh history.LockHistory
		if err := json.Unmarshal(body, &lh); err != nil {
			t.Fatal(err)
		}
		sum = history.WaitPoint{}
		for _, p := range lh.Wait {
			sum.Acquired += p.Acquired
			sum.Contended += p.Contended
			sum.MaxMS = max(sum.MaxMS, p.MaxMS)
		}
		return sum.Contended > 0
	})
	if sum.Contended != 1 || sum.MaxMS < 1000 {
		t.Errorf("waits %+v: want the one contended acquisition, over a second", sum)
	}

	// The lock is free: its API answers what the console saw, not a 404.
	var free struct {
		Name     string               `json:"name"`
		State    string               `json:"state"`
		LastHeld *history.Hold        `json:"last_held"`
		History  *history.LockHistory `json:"history"`
		Wait     struct {
			Contended int64 `json:"contended"`
		} `json:"wait"`
		Windows []struct{ Contended, MaxMS int64 } `json:"wait_windows"`
	}
	e.getJSON("/api/locks/"+esc(name), 200, &free)
	// The waiter's 50 ms hold may fall between two reads: the last hold
	// the console saw is either.
	if free.Name != name || free.State != "free" || free.LastHeld == nil ||
		(free.LastHeld.Holder != waiter.HolderID() && free.LastHeld.Holder != holder.HolderID()) ||
		free.History == nil || len(free.History.Wait) == 0 {
		t.Errorf("GET /api/locks of the free lock: %+v (last held %+v)", free, free.LastHeld)
	}
	if st, _, body := e.do("GET", "/api/locks/"+esc(e.prefix+"never-seen"), nil, nil); st != 404 {
		t.Errorf("a lock never seen: %d %s, want 404", st, body)
	}
}
