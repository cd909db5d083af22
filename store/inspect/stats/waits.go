package stats

import (
	"strconv"
	"strings"
	"sync"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// The wait fields lock scripts add to the stats ring
// (layout above wire.BucketMS), read with the ring in the sample's one
// pipeline and kept beyond the ring's 16 buckets (3.2 s) by the console
// itself, folded into one-second slots, for the 10 s and 1 min windows.
// Only locks that had an acquisition in the last minute take memory.

// WaitClasses is the number of histogram classes of the stats layout.
const WaitClasses = len(wire.WaitClassLetters)

// WaitClassBoundsMS are the classes' upper bounds in ms; the last class
// has none (waits over 10 s).
var WaitClassBoundsMS = wire.WaitClassBoundsMS

// WaitStats is a lock's acquisitions and the waits of its contended ones
// over one window (the API's "wait").
type WaitStats struct {
	WindowS   int   `json:"window_s"`
	Acquired  int64 `json:"acquired"`
	Contended int64 `json:"contended"` // acquisitions that had to wait
	// P50MS, P99MS are read from the histogram: the bound of the class the
	// quantile falls in, never above MaxMS.
	P50MS int64 `json:"p50_ms"`
	P99MS int64 `json:"p99_ms"`
	MaxMS int64 `json:"max_ms"`
}

// WaitTotals are a lock's waits since the console began to see them
// (monotonic while the lock stays active; Prometheus' histogram).
type WaitTotals struct {
	// Acquired counts every acquisition, waited for or not (the history
	// takes per-minute differences of these totals).
	Acquired int64
	Count    int64
	SumMS    int64
	Classes  [WaitClasses]int64
}

// WaitWindows are a lock's wait stats over the last 1 s, 10 s and 1 min.
type WaitWindows struct {
	Second, TenSeconds, Minute WaitStats
	Total                      WaitTotals
}

// waitCell is the acquisitions and waits of one bucket or one second.
type waitCell struct {
	acquired int64
	classes  [WaitClasses]int64
	totalMS  int64
	maxMS    int64
}

func (c *waitCell) add(o waitCell) {
	c.acquired += o.acquired
	for i := range c.classes {
		c.classes[i] += o.classes[i]
	}
	c.totalMS += o.totalMS
	c.maxMS = max(c.maxMS, o.maxMS)
}

func (c waitCell) stats(windowS int) WaitStats {
	w := WaitStats{WindowS: windowS, Acquired: c.acquired, MaxMS: c.maxMS}
	for _, n := range c.classes {
		w.Contended += n
	}
	w.P50MS, w.P99MS = c.quantile(w.Contended, 0.5), c.quantile(w.Contended, 0.99)
	return w
}

// quantile is the bound of the class holding the q-quantile of n waits,
// capped by the max (the last class has no bound: the max).
func (c waitCell) quantile(n int64, q float64) int64 {
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.999999)
	var seen int64
	for i, k := range c.classes {
		seen += k
		if seen >= rank && i < len(WaitClassBoundsMS) {
			return min(WaitClassBoundsMS[i], c.maxMS)
		}
	}
	return c.maxMS
}

// readWaitCells reads the acquisitions and wait fields of a stats hash by
// bucket. Only "<letter><decimal bucket>" fields of the layout count.
func readWaitCells(fields map[string]string) map[int64]waitCell {
	out := map[int64]waitCell{}
	for k, v := range fields {
		if len(k) < 2 || len(k) > 20 {
			continue
		}
		class := strings.IndexByte(wire.WaitClassLetters, k[0])
		if class < 0 && k[0] != 'a' && k[0] != 't' && k[0] != 'm' {
			continue
		}
		b, err := strconv.ParseUint(k[1:], 10, 63)
		if err != nil {
			continue
		}
		cell, n := out[int64(b)], Counter(v)
		switch {
		case class >= 0:
			cell.classes[class] += n
		case k[0] == 'a':
			cell.acquired += n
		case k[0] == 't':
			cell.totalMS += n
		default:
			cell.maxMS = max(cell.maxMS, n)
		}
		out[int64(b)] = cell
	}
	return out
}

// waitSeconds is the longest window; a lock keeps one more slot, for the
// second still filling.
const waitSeconds = 60

const bucketsPerSecond = 1000 / wire.BucketMS

// lockWaits is what the console keeps of one lock's waits.
type lockWaits struct {
	folded int64 // the newest bucket folded into secs
	secs   [waitSeconds + 1]waitCell
	secOf  [waitSeconds + 1]int64 // the second each slot holds
	second WaitStats              // the 1 s window of the last ring read
	readAt int64                  // the bucket of that read
	total  WaitTotals
}

// WaitBook keeps what the console folded of each lock's waits, by lock
// name. Its zero value is ready; it is safe for concurrent use.
type WaitBook struct {
	mu    sync.Mutex
	locks map[string]*lockWaits
}

// Fold takes one ring read of the lock at name, made in bucket now: the
// complete buckets not yet folded go into their seconds, and the last
// complete 1 s (WindowBuckets buckets) is kept as read.
func (b *WaitBook) Fold(name string, fields map[string]string, now int64) {
	cells := readWaitCells(fields)
	b.mu.Lock()
	defer b.mu.Unlock()
	lw := b.locks[name]
	if lw == nil {
		if len(cells) == 0 {
			return
		}
		if b.locks == nil {
			b.locks = map[string]*lockWaits{}
		}
		lw = &lockWaits{folded: now - wire.StatsRing - 1}
		b.locks[name] = lw
	}
	var window waitCell
	for bucket, cell := range cells {
		if bucket >= now {
			continue // still filling
		}
		if bucket >= now-WindowBuckets {
			window.add(cell)
		}
		if bucket <= lw.folded {
			continue
		}
		sec := floorDiv(bucket, bucketsPerSecond)
		slot := int(sec % (waitSeconds + 1))
		if lw.secOf[slot] != sec {
			lw.secs[slot], lw.secOf[slot] = waitCell{}, sec
		}
		lw.secs[slot].add(cell)
		lw.total.Acquired += cell.acquired
		for i, n := range cell.classes {
			lw.total.Classes[i] += n
			lw.total.Count += n
		}
		lw.total.SumMS += cell.totalMS
	}
	lw.folded = max(lw.folded, now-1)
	lw.second, lw.readAt = window.stats(wire.WindowMS/1000), now
}

// Windows returns the wait stats of the lock at name as of bucket now, or
// nil when it had no acquisition in the last minute (its entry is then
// dropped).
func (b *WaitBook) Windows(name string, now int64) *WaitWindows {
	b.mu.Lock()
	defer b.mu.Unlock()
	lw := b.locks[name]
	if lw == nil {
		return nil
	}
	// The 10 s and 1 min windows are complete seconds: they step once a
	// second, the 1 s window (from the ring) every bucket.
	nowSec := floorDiv(now, bucketsPerSecond)
	var ten, minute waitCell
	for i := range lw.secs {
		age := nowSec - lw.secOf[i]
		if age < 1 || age > waitSeconds {
			continue
		}
		minute.add(lw.secs[i])
		if age <= 10 {
			ten.add(lw.secs[i])
		}
	}
	if minute.acquired == 0 {
		delete(b.locks, name)
		return nil
	}
	w := &WaitWindows{TenSeconds: ten.stats(10), Minute: minute.stats(waitSeconds), Total: lw.total}
	w.Second = WaitStats{WindowS: 1}
	if lw.readAt == now {
		w.Second = lw.second
	}
	return w
}

// Prune drops the locks whose newest second is over a minute old.
func (b *WaitBook) Prune(now int64) {
	oldest := floorDiv(now, bucketsPerSecond) - waitSeconds
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, lw := range b.locks {
		if floorDiv(lw.folded, bucketsPerSecond) < oldest {
			delete(b.locks, name)
		}
	}
}
