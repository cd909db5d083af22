package feed

import "github.com/lockwarden/lockwarden/store/inspect"

// LockWait is a lock's wait summary over the last 10 s as frames carry it
// (inspect.WaitStats without its window, which is always 10 s here): the
// /locks rows, a lock's Waits table and the wall's contention order follow
// it live. The API's "wait" says the same with "window_s".
type LockWait struct {
	Acquired  int64 `json:"acquired"`
	Contended int64 `json:"contended"`
	P50MS     int64 `json:"p50_ms"`
	P99MS     int64 `json:"p99_ms"`
	MaxMS     int64 `json:"max_ms"`
}

func lockWaitOf(w inspect.WaitStats) LockWait {
	return LockWait{Acquired: w.Acquired, Contended: w.Contended, P50MS: w.P50MS, P99MS: w.P99MS, MaxMS: w.MaxMS}
}

// changedWaits puts into out the summaries of cur that differ from prev,
// and a zero summary for each lock of prev that cur leaves out: its
// contention left the window (or the lock is gone, which "removed" says
// too). The 10 s window steps once a second, so a contended lock's entry
// is resent at most about once a second, not every tick.
func changedWaits(prev, cur, out map[string]LockWait) {
	for name, w := range cur {
		if old, ok := prev[name]; !ok || old != w {
			out[name] = w
		}
	}
	for name := range prev {
		if _, ok := cur[name]; !ok {
			out[name] = LockWait{}
		}
	}
}
