package views

import (
	"strconv"

	"github.com/lockwarden/lockwarden/views/words"
)

// WaitRow is a lock's acquisitions and waits over one window, as the lock's
// page shows them (store/inspect.WaitStats).
type WaitRow struct {
	WindowS   int
	Acquired  int64
	Contended int64
	P50MS     int64
	P99MS     int64
	MaxMS     int64
}

// windowText names a window: "1 s", "10 s", "1 min".
func windowText(s int) string {
	if s >= 60 && s%60 == 0 {
		return strconv.Itoa(s/60) + " min"
	}
	return strconv.Itoa(s) + " s"
}

// contendedText is the contended acquisitions and their share.
func contendedText(w WaitRow) string {
	if w.Acquired <= 0 {
		return itoa(w.Contended)
	}
	return itoa(w.Contended) + " (" + strconv.FormatInt(100*w.Contended/w.Acquired, 10) + "%)"
}

// waitedText is a list row's contended acquisitions and their share, or
// "–" without any (the frames carry no summary for such a lock).
func waitedText(w WaitRow) string {
	if w.Contended == 0 {
		return "–"
	}
	return contendedText(w)
}

// waitMSText is a wait in ms, or "–" without contended acquisitions.
func waitMSText(w WaitRow, ms int64) string {
	if w.Contended == 0 {
		return "–"
	}
	return words.Duration(ms)
}
