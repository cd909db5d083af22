package web

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// A lock whose waiter is still waiting ranks before one whose waits ended
// (however many) when the list is sorted by contention, and its row and
// GET carry longest_wait_ms, as the page's "Longest wait" cell does.
func TestContentionRanksCurrentWaitsFirst(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	busy, stuck := e.prefix+"a-busy", e.prefix+"b-stuck"
	// busy: a wait that ended.
	h := e.app.NewLock(busy, nil)
	if err := h.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	e.synced()
	w := e.app.NewLock(busy, nil)
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	eventually(t, 5*time.Second, "busy's waiter queues", func() bool { return e.rdb.Exists(ctx, redistest.LockQueueKey(busy)).Val() == 1 })
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Unlock(context.Background()) })
	// stuck: held, and a waiter that waits until the test ends.
	sh := e.app.NewLock(stuck, nil)
	if err := sh.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Unlock(context.Background()) })
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = e.app.NewLock(stuck, nil).Lock(wctx) }()

	type row struct {
		Name          string `json:"name"`
		LongestWaitMS int64  `json:"longest_wait_ms"`
		Wait          struct{ Contended int64 }
	}
	var list struct{ Locks []row }
	eventually(t, 10*time.Second, "the stuck lock first", func() bool {
		e.getJSON("/api/locks?sort=contention", 200, &list)
		return len(list.Locks) == 2 && list.Locks[0].Name == stuck && list.Locks[0].LongestWaitMS > 0 && list.Locks[1].Wait.Contended == 1
	})
	if list.Locks[1].LongestWaitMS != 0 {
		t.Errorf("busy's waits all ended, yet longest_wait_ms = %d", list.Locks[1].LongestWaitMS)
	}
	var one row
	e.getJSON("/api/locks/"+esc(stuck), 200, &one)
	if one.LongestWaitMS <= 0 {
		t.Errorf("GET %s: longest_wait_ms %d", stuck, one.LongestWaitMS)
	}
	_, _, body := e.do("GET", "/locks?sort=contention", nil, nil)
	doc := parseHTML(t, body)
	first := doc.Find(`[data-testid=lock-row]`).First()
	if n, _ := first.Attr("data-lock"); n != stuck || first.Find(`[data-testid=lock-longest-wait]`).Text() == "–" {
		t.Errorf("/locks by contention starts with %q (longest wait %q); want %s with its wait", n, first.Find(`[data-testid=lock-longest-wait]`).Text(), stuck)
	}
	// The wall's contention view too.
	_, _, body = e.do("GET", "/wall?sort=contention", nil, nil)
	if n, _ := parseHTML(t, body).Find(`[data-testid=wall-lock]`).First().Attr("data-lock"); n != stuck {
		t.Errorf("the wall by contention starts with %q, want %s", n, stuck)
	}
}
