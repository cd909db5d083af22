package views

import (
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/views/words"
)

// The waits chart (history.templ's waitStrip): a lock's waits per minute,
// beneath its holders on the lock's timeline and alone as the overview's
// thumbnails of the most contended locks. static/charts.js draws a bar per
// minute as high as its contended acquisitions, coloured by its p99 wait.

// WaitMinute is one minute of a lock's waits.
type WaitMinute struct {
	T                                        time.Time // the minute's start
	Acquired, Contended, P50MS, P99MS, MaxMS int64
}

// WaitStrip is a lock's waits over a span, minutes with acquisitions only.
type WaitStrip struct {
	Name     string
	From, To time.Time
	Minutes  []WaitMinute // oldest first
	// Small draws the overview's thumbnail.
	Small bool
}

// DataURL is the lock history the overview's thumbnail is drawn from.
func (s WaitStrip) DataURL() string { return "/api" + LockURL(s.Name) + "/history?span=" + SpanDay }

func (s WaitStrip) summaryID() string { return chartID("waits-summary", s.Name, "") }

// Summary is the waits in words over the overview's day.
func (s WaitStrip) Summary() string { return s.summary(SpanDay) }

// summary says how many acquisitions waited, the worst p99 and its minute.
func (s WaitStrip) summary(span string) string {
	var acq, contended, worst int64
	var worstAt time.Time
	for _, m := range s.Minutes {
		acq, contended = acq+m.Acquired, contended+m.Contended
		if m.Contended > 0 && m.P99MS > worst {
			worst, worstAt = m.P99MS, m.T
		}
	}
	if contended == 0 {
		if acq == 0 {
			return ""
		}
		return fmt.Sprintf("Waits: none of %s acquisitions waited.", words.Count(acq))
	}
	return fmt.Sprintf("Waits: %s of %s acquisitions waited; the worst minute, %s UTC, had a p99 wait of %s.",
		words.Count(contended), words.Count(acq), chartClock(worstAt, span), words.Duration(worst))
}
