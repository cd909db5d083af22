package web

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/views"
)

type apiLockWait struct {
	Name        string              `json:"name"`
	Wait        *inspect.WaitStats  `json:"wait"`
	WaitWindows []inspect.WaitStats `json:"wait_windows"`
}

// A store lock's contended acquisition shows in its "wait" (10 s) and its
// three windows on GET /api/locks/{name}, in the list rows, and puts it
// first when the list is sorted by contention.
func TestAPILockWait(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	busy, idle := e.prefix+"busy", e.prefix+"idle"
	e.makeLock(idle, "w", 1, time.Minute)
	holder := e.app.NewLock(busy, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	e.synced()
	waiter := e.app.NewLock(busy, nil)
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	eventually(t, 5*time.Second, "the waiter queues", func() bool {
		return e.rdb.Exists(ctx, redistest.LockQueueKey(busy)).Val() == 1
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiter.Unlock(context.Background()) })

	var one apiLockWait
	eventually(t, 10*time.Second, "the wait in the lock's API", func() bool {
		e.getJSON("/api/locks/"+esc(busy), 200, &one)
		return one.Wait != nil && one.Wait.Contended == 1
	})
	if w := *one.Wait; w.WindowS != 10 || w.Acquired != 2 || w.MaxMS < w.P50MS || w.P99MS != w.P50MS {
		t.Errorf("wait = %+v", w)
	}
	if len(one.WaitWindows) != 3 || one.WaitWindows[0].WindowS != 1 || one.WaitWindows[1] != *one.Wait ||
		one.WaitWindows[2].WindowS != 60 || one.WaitWindows[2].Contended != 1 {
		t.Errorf("wait_windows = %+v", one.WaitWindows)
	}

	var list struct{ Locks []apiLockWait }
	e.getJSON("/api/locks?sort=contention&order=desc", 200, &list)
	if len(list.Locks) != 2 || list.Locks[0].Name != busy || list.Locks[0].Wait == nil || list.Locks[0].Wait.Contended != 1 ||
		list.Locks[1].Wait == nil || list.Locks[1].Wait.WindowS != 10 || list.Locks[1].Wait.Contended != 0 || list.Locks[0].WaitWindows != nil {
		t.Errorf("by contention: %+v", list.Locks)
	}
	e.getJSON("/api/locks?sort=contention", 200, &list)
	if len(list.Locks) != 2 || list.Locks[0].Name != idle {
		t.Errorf("by contention, ascending: %+v", list.Locks)
	}

	// The lock's page shows the windows.
	st, _, body := e.do("GET", views.LockURL(busy), nil, nil)
	if st != 200 {
		t.Fatalf("lock page: %d", st)
	}
	doc := parseHTML(t, body)
	ten := doc.Find(`[data-testid="lock-waits"] [data-window-s="10"]`)
	if n := doc.Find(`[data-testid="lock-wait-row"]`).Length(); n != 3 || ten.Find(`[data-field="contended"]`).Text() != "1 (50%)" {
		t.Errorf("%d wait rows; 10 s row %q", n, ten.Text())
	}
}
