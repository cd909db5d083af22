package static_test

import (
	"fmt"
	"testing"

	"github.com/a-h/templ"

	"github.com/lockwarden/lockwarden/views"
)

// waitsDelta is a delta stats frame at at carrying waits (and the lock set
// of pttl, unchanged leases being left out as the server does).
func waitsDelta(at int64, waits map[string]any) map[string]any {
	return map[string]any{"type": "stats", "delta": true, "seq": 1, "bucket_ms": 200, "window_ms": 1000, "at": at,
		"limiters": map[string]any{}, "locks": map[string]any{}, "available": map[string]any{},
		"pttl_ms": map[string]any{}, "removed": []any{}, "waits": waits}
}

func summary(acquired, contended, p99 int) map[string]any {
	return map[string]any{"acquired": acquired, "contended": contended, "p50_ms": p99 / 2, "p99_ms": p99, "max_ms": p99}
}

// The wall sorted by contention keeps the most contended locks first as
// wait summaries arrive in full and delta frames (a zero summary sending a
// lock back to the name order), adds rows for locks the page did not list
// and shows each one's waited count and p99; sorted by name it keeps the
// name order whatever the waits.
func TestStaticClientWallSortsByContention(t *testing.T) {
	rows := []views.LockRow{{Name: "a"}, {Name: "b"}}
	byContention := views.Wall(views.WallPage{Layout: views.Layout{Title: "Wall"}, LockSort: "contention", Locks: rows})
	byName := views.Wall(views.WallPage{Layout: views.Layout{Title: "Wall"}, LockSort: "name", Locks: rows})
	fs := newFakeServer(t, map[string]templ.Component{"contention": byContention, "name": byName})
	at := t0.UnixMilli()
	order := `() => [...document.querySelectorAll('[data-testid="wall-lock"]')].map(r => r.dataset.lock + "=" + r.querySelector('[data-field="wait10-contended"]').textContent + "/" + r.querySelector('[data-field="wait10-p99"]').textContent)`
	full := stats(at, map[string]any{"pttl_ms": map[string]any{"a": -1, "b": -1, "c": -1}, "lock_count": 3,
		"waits": map[string]any{"c": summary(10, 5, 300), "b": summary(4, 2, 1500)}})

	tb := open(t, fs, "/p/contention")
	c := fs.conn(t)
	if got := fmt.Sprint(tb.eval(order)); got != "[a=–/– b=–/–]" {
		t.Fatalf("rendered %s", got)
	}
	send(t, c, full)
	tb.frames(1)
	if got := fmt.Sprint(tb.eval(order)); got != "[c=5 (50%)/300 ms b=2 (50%)/1.5 s a=–/–]" {
		t.Errorf("after the full frame: %s", got)
	}
	// c's contention left the window, a's began.
	send(t, c, waitsDelta(at+200, map[string]any{"c": summary(0, 0, 0), "a": summary(9, 9, 61500)}))
	tb.frames(2)
	if got := fmt.Sprint(tb.eval(order)); got != "[a=9 (100%)/1 min 1 s b=2 (50%)/1.5 s c=–/–]" {
		t.Errorf("after the delta: %s", got)
	}
	// A delta without waits keeps them.
	send(t, c, waitsDelta(at+400, map[string]any{}))
	tb.frames(3)
	if got := fmt.Sprint(tb.eval(order)); got != "[a=9 (100%)/1 min 1 s b=2 (50%)/1.5 s c=–/–]" {
		t.Errorf("after an empty delta: %s", got)
	}

	// More locks than the wall lists: the most contended first, then the
	// rest by name, views.WallLocks rows in all.
	many := map[string]any{}
	for i := range views.WallLocks + 2 {
		many[fmt.Sprintf("l%02d", i)] = -1
	}
	send(t, c, stats(at+600, map[string]any{"pttl_ms": many, "lock_count": len(many),
		"waits": map[string]any{"l11": summary(1, 1, 2)}}))
	tb.frames(4)
	names := `() => [...document.querySelectorAll('[data-testid="wall-lock"]')].map(r => r.dataset.lock).join(",")`
	if got := tb.eval(names); got != "l11,l00,l01,l02,l03,l04,l05,l06,l07,l08" {
		t.Errorf("beyond the limit: %v", got)
	}

	tb = open(t, fs, "/p/name")
	c = fs.conn(t)
	send(t, c, full)
	tb.frames(1)
	if got := fmt.Sprint(tb.eval(order)); got != "[a=–/– b=2 (50%)/1.5 s c=5 (50%)/300 ms]" {
		t.Errorf("by name: %s", got)
	}
}

// The /locks rows' wait columns and the lock page's 10 s Waits row follow
// the frames' summaries, and a changed summary makes the lock page read
// all three windows from the API; the lock page's acquisitions of the last
// second (its own "acquired") stay apart from the Waits table's.
func TestStaticClientWaitColumnsLive(t *testing.T) {
	list := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0},
		Locks: []views.LockRow{{Name: "q", Kind: "reentrant", PTTLMS: -1}}})
	detail := views.LockDetail(views.LockDetailPage{Layout: views.Layout{Title: "q", Now: t0},
		Lock:  views.LockRow{Name: "q", Kind: "reentrant", PTTLMS: -1},
		Waits: []views.WaitRow{{WindowS: 1}, {WindowS: 10}, {WindowS: 60}}})
	fs := newFakeServer(t, map[string]templ.Component{"list": list, "detail": detail})
	at := t0.UnixMilli()
	frame := stats(at, map[string]any{"pttl_ms": map[string]any{"q": -1}, "lock_count": 1,
		"locks": map[string]any{"q": map[string]any{"acquired": 3}},
		"waits": map[string]any{"q": summary(8, 2, 30)}})

	tb := open(t, fs, "/p/list")
	c := fs.conn(t)
	cells := `() => { const r = document.querySelector('[data-testid="lock-row"][data-lock="q"]'); return r.querySelector('[data-field="wait10-contended"]').textContent + "/" + r.querySelector('[data-field="wait10-p99"]').textContent }`
	send(t, c, frame)
	tb.frames(1)
	if got := tb.eval(cells); got != "2 (25%)/30 ms" {
		t.Errorf("list row %v", got)
	}
	send(t, c, waitsDelta(at+200, map[string]any{"q": summary(0, 0, 0)}))
	tb.frames(2)
	if got := tb.eval(cells); got != "–/–" {
		t.Errorf("list row after the contention left %v", got)
	}

	window := func(s, acquired, contended, p99 int) map[string]any {
		w := summary(acquired, contended, p99)
		w["window_s"] = s
		return w
	}
	fs.setAPI("/api/locks/q", map[string]any{"name": "q", "wait_windows": []any{
		window(1, 2, 1, 3), window(10, 8, 2, 30), window(60, 40, 12, 3000)}})
	tb = open(t, fs, "/p/detail")
	c = fs.conn(t)
	send(t, c, frame)
	tb.frames(1)
	ten := `() => [...document.querySelectorAll('[data-window-s="10"] td')].map(td => td.textContent).join("|")`
	if got := tb.eval(ten); got != "10 s|8|2 (25%)|15 ms|30 ms|30 ms" {
		t.Errorf("10 s row %v", got)
	}
	tb.until(`() => document.querySelector('[data-wait-windows]').dataset.reloads === "1"`, nil)
	rowsText := `() => [...document.querySelectorAll('[data-testid="lock-wait-row"]')].map(r => [...r.querySelectorAll('td')].map(td => td.textContent).join("|"))`
	if got := fmt.Sprint(tb.eval(rowsText)); got != "[1 s|2|1 (50%)|1 ms|3 ms|3 ms 10 s|8|2 (25%)|15 ms|30 ms|30 ms 1 min|40|12 (30%)|1.5 s|3 s|3 s]" {
		t.Errorf("windows after the reload %s (the 1 s row's acquired must not be the lock's counts, 3)", got)
	}
	// An unchanged summary reads nothing again; a changed one does.
	send(t, c, waitsDelta(at+200, map[string]any{}))
	tb.frames(2)
	send(t, c, waitsDelta(at+400, map[string]any{"q": summary(9, 3, 30)}))
	tb.frames(3)
	tb.until(`() => document.querySelector('[data-wait-windows]').dataset.reloads === "2"`, nil)
}

// The wall by contention puts the locks of a cycle first, then those with
// a current waiter (the longest waiting first), then the finished waits'
// order; the /locks rows count the longest current wait from the frames'
// waiting_since until a delta says nobody waits.
func TestStaticClientStuckLocksLead(t *testing.T) {
	rows := []views.LockRow{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	wall := views.Wall(views.WallPage{Layout: views.Layout{Title: "Wall"}, LockSort: "contention", Locks: rows})
	list := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0}, Locks: rows})
	fs := newFakeServer(t, map[string]templ.Component{"wall": wall, "list": list})
	at := t0.UnixMilli()
	full := stats(at, map[string]any{"pttl_ms": map[string]any{"a": -1, "b": -1, "c": -1, "d": -1}, "lock_count": 4,
		"waits":         map[string]any{"a": summary(10, 9, 3000)},
		"waiting_since": map[string]any{"b": at - 5000, "c": at - 90000, "d": at - 1000},
		"deadlocked":    []any{"d"}})

	tb := open(t, fs, "/p/wall")
	c := fs.conn(t)
	send(t, c, full)
	tb.frames(1)
	names := `() => [...document.querySelectorAll('[data-testid="wall-lock"]')].map(r => r.dataset.lock).join(",")`
	if got := tb.eval(names); got != "d,c,b,a" {
		t.Errorf("wall by contention: %v, want the deadlocked d, then c and b by their longest wait, then a", got)
	}

	tb = open(t, fs, "/p/list")
	c = fs.conn(t)
	send(t, c, full)
	tb.frames(1)
	cell := `() => document.querySelector('[data-lock="c"] [data-field="longest-wait"]').textContent`
	if got := tb.eval(cell); got != "1 min 30 s" {
		t.Errorf("c's longest wait %v, want 1 min 30 s", got)
	}
	d := waitsDelta(at+200, map[string]any{})
	d["waiting_since"] = map[string]any{"c": 0}
	send(t, c, d)
	tb.frames(2)
	if got := tb.eval(cell); got != "–" {
		t.Errorf("c's longest wait after its waiters left: %v", got)
	}
}
