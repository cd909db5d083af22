package web

import (
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/live"
)

// Wait statistics of locks in the API and in the lists' order (the numbers
// come from the snapshot: store/inspect/waits.go).

// sortContention orders locks by their contended acquisitions over the
// last 10 s, then by the p99 of those waits.
const sortContention = "contention"

// lockWaitJSON is what lockJSON says about a lock's waits: "wait" over the
// last 10 s on every row, and on a lock's own page the 1 s, 10 s and
// 1 min windows too.
type lockWaitJSON struct {
	Wait        inspect.WaitStats   `json:"wait"`
	WaitWindows []inspect.WaitStats `json:"wait_windows,omitempty"`
}

// waitOf is the wait windows of the lock at name in sn; zero windows when
// it had no acquisition in the last minute.
func waitOf(sn *live.Snapshot, name string) inspect.WaitWindows {
	if sn != nil {
		if w := sn.Stats[name].Wait; w != nil {
			return *w
		}
	}
	return inspect.WaitWindows{Second: inspect.WaitStats{WindowS: 1},
		TenSeconds: inspect.WaitStats{WindowS: 10}, Minute: inspect.WaitStats{WindowS: 60}}
}

// lockWaitFor fills lockWaitJSON; windows adds the three windows.
func lockWaitFor(sn *live.Snapshot, name string, windows bool) lockWaitJSON {
	w := waitOf(sn, name)
	out := lockWaitJSON{Wait: w.TenSeconds}
	if windows {
		out.WaitWindows = []inspect.WaitStats{w.Second, w.TenSeconds, w.Minute}
	}
	return out
}

// contentionKey is a lock's place in the contention order.
func contentionKey(sn *live.Snapshot, name string) float64 {
	w := waitOf(sn, name).TenSeconds
	// p99 is at most a day's worth of ms in practice; the count dominates.
	return float64(w.Contended) + float64(min(w.P99MS, 1e8))/1e9
}

// waitRows are the lock page's windows: 1 s, 10 s, 1 min.
func waitRows(sn *live.Snapshot, name string) []views.WaitRow {
	w := waitOf(sn, name)
	return []views.WaitRow{waitRow(w.Second), waitRow(w.TenSeconds), waitRow(w.Minute)}
}

func waitRow(s inspect.WaitStats) views.WaitRow {
	return views.WaitRow{WindowS: s.WindowS, Acquired: s.Acquired, Contended: s.Contended,
		P50MS: s.P50MS, P99MS: s.P99MS, MaxMS: s.MaxMS}
}
