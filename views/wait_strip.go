package views

import (
	"fmt"
	"time"
)

// The waits strip (history.templ's waitStrip): a lock's waits per minute
// as bars, beneath its holders on the lock's timeline and alone as the
// overview's thumbnails of the most contended locks. A bar's height is its
// contended acquisitions, its colour the p99 wait; its <title> has the
// exact values.

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

const waitStripH, waitThumbH = 30, 40

// WaitBar is one drawn bar: one minute, or the minutes of one slot when
// the span has more minutes than bars.
type WaitBar struct {
	X, W, Y, H          float64
	From, To            time.Time
	Minutes             int
	Acquired, Contended int64
	P50MS, P99MS, MaxMS int64 // P50MS only for one minute; P99MS the worst
}

func (s WaitStrip) size() (w, h float64, maxBars int) {
	return chartSize(s.Small, timelineW, waitStripH, waitThumbH)
}

func (s WaitStrip) viewBox() string {
	w, h, _ := s.size()
	return "0 0 " + fmtF(w) + " " + fmtF(h)
}

// bars puts each minute in one of at most maxBars slots of the span and
// scales the bars to the most contended (at least 1, so a minute without
// waits is a sliver on the axis).
func (s WaitStrip) bars() []WaitBar {
	w, h, maxBars := s.size()
	span := s.To.Sub(s.From)
	if len(s.Minutes) == 0 || span <= 0 {
		return nil
	}
	slots := min(maxBars, max(int(span/time.Minute), 1))
	slotW := w / float64(slots)
	var out []WaitBar
	var top int64 = 1
	for _, m := range s.Minutes {
		i := min(max(int(float64(m.T.Sub(s.From))/float64(span)*float64(slots)), 0), slots-1)
		if n := len(out); n == 0 || out[n-1].X != float64(i)*slotW {
			out = append(out, WaitBar{X: float64(i) * slotW, W: max(slotW-0.5, 0.5), From: m.T, P50MS: m.P50MS})
		}
		b := &out[len(out)-1]
		b.To = m.T.Add(time.Minute)
		b.Minutes++
		b.Acquired += m.Acquired
		b.Contended += m.Contended
		b.P99MS, b.MaxMS = max(b.P99MS, m.P99MS), max(b.MaxMS, m.MaxMS)
		top = max(top, b.Contended)
	}
	for i := range out {
		b := &out[i]
		b.H = max(float64(b.Contended)/float64(top)*(h-2), 1)
		b.Y = h - b.H
	}
	return out
}

// waitClass colours a bar by its p99 wait.
func waitClass(b WaitBar) string {
	switch {
	case b.Contended == 0:
		return "wait-none"
	case b.P99MS >= 1000:
		return "wait-bad"
	case b.P99MS >= 100:
		return "wait-warn"
	}
	return "wait-ok"
}

func waitTitle(b WaitBar) string {
	if b.Minutes == 1 {
		return fmt.Sprintf("%s UTC: %d acquired, %d contended, p50 %d ms, p99 %d ms, max %d ms",
			b.From.UTC().Format("Jan 2 15:04"), b.Acquired, b.Contended, b.P50MS, b.P99MS, b.MaxMS)
	}
	return fmt.Sprintf("%s–%s UTC: %d acquired, %d contended, p99 up to %d ms, max %d ms",
		b.From.UTC().Format("Jan 2 15:04"), b.To.UTC().Format("15:04"), b.Acquired, b.Contended, b.P99MS, b.MaxMS)
}
