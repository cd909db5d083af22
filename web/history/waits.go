package history

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// A lock's waits per minute (WaitKey): the tracker sums each
// minute's WaitSamples, the writer writes each minute touched since its
// last flush as one absolute record, Lock reads them back.
//
// A record is 17 bytes, little-endian: minute index, acquired, contended
// (24 bits each: a lock's scripts cannot run 16M times a minute), total
// wait ms (32 bits), longest wait ms (24 bits, about 4.6 h), then one
// byte: the histogram class of the minute's p50 (high nibble) and of its
// p99 (low nibble). Counts saturate. The quantiles' classes rather than
// the ten class counts keep a 24 h ring at 24 KB (jemalloc's 24 KiB
// class), 250 locks' rings at 6 MB, within the history's memory goal
// (TestMemoryAtGoalScale); p50/p99 are read from them and the max as
// store/inspect reads them from the full histogram.
const waitRecordSize = 17

// waitFields are the byte widths of a record's numbers before its
// quantile byte.
var waitFields = [...]int{3, 3, 3, 4, 3}

// waitMinute is one minute of a lock's waits, m its index (Unix ms / 1 min).
type waitMinute struct {
	m int64
	w WaitSample
}

func (w *WaitSample) add(o *WaitSample) {
	w.Acquired += o.Acquired
	w.Contended += o.Contended
	w.TotalMS += o.TotalMS
	w.MaxMS = max(w.MaxMS, o.MaxMS)
	for i, n := range o.Classes {
		w.Classes[i] += n
	}
}

// addWait adds ws to the minute of the sample at now (a slice ending at
// now belongs to the minute it ends in). A lock keeps the minutes a writer
// that vanished may not have flushed; only locks that saw an acquisition
// hold any. Each contended acquisition adds to the lock's score, as a
// hold change does.
func (t *tracker) addWait(l *lock, now int64, ws *WaitSample) {
	if ws.Contended > 0 {
		l.score = t.decay(l.score, l.scoredAt, now) + float64(ws.Contended)
		l.scoredAt = now
	}
	if l.waits == nil {
		l.waits = make([]waitMinute, t.waitN)
	}
	m := (now - 1) / CoarseStep.Milliseconds()
	s := &l.waits[int(m%int64(len(l.waits)))]
	if s.m != m {
		*s = waitMinute{m: m}
	}
	s.w.add(ws)
}

// waiting is how many of the kept locks saw an acquisition (have a wait
// ring, or will at the next flush).
func (t *tracker) waiting(top []ranking) int {
	n := 0
	for _, r := range top {
		if t.locks[r.name].waits != nil {
			n++
		}
	}
	return n
}

// quantileClass is the histogram class that holds the q-quantile of
// classes, whose counts sum to n (n > 0).
func quantileClass(classes *[inspect.WaitClasses]int64, n int64, q float64) int {
	rank := int64(q*float64(n) + 0.999999)
	var seen int64
	for i, k := range classes {
		if seen += k; seen >= rank {
			return i
		}
	}
	return len(classes) - 1
}

func encodeWait(m int64, w *WaitSample) string {
	var b [waitRecordSize]byte
	off := 0
	for i, v := range [...]int64{m, w.Acquired, w.Contended, w.TotalMS, w.MaxMS} {
		width := waitFields[i]
		u := uint64(min(max(v, 0), 1<<(8*width)-1))
		if i == 0 {
			u = uint64(m) & (1<<(8*width) - 1) // the minute wraps; the ring is far shorter
		}
		for k := range width {
			b[off+k] = byte(u >> (8 * k))
		}
		off += width
	}
	if w.Contended > 0 {
		b[off] = byte(quantileClass(&w.Classes, w.Contended, 0.5)<<4 | quantileClass(&w.Classes, w.Contended, 0.99))
	}
	return string(b[:])
}

// waitAt is minute m of ring as a point, false when the ring has no
// record of m.
func waitAt(ring []byte, m int64) (WaitPoint, bool) {
	n := int64(len(ring) / waitRecordSize)
	if n == 0 {
		return WaitPoint{}, false
	}
	r := ring[(m%n)*waitRecordSize:]
	var v [len(waitFields)]int64
	off := 0
	for i, width := range waitFields {
		for k := range width {
			v[i] |= int64(r[off+k]) << (8 * k)
		}
		off += width
	}
	if v[0] != m&(1<<(8*waitFields[0])-1) {
		return WaitPoint{}, false
	}
	p := WaitPoint{T: m * int64(CoarseStep/time.Second), Acquired: v[1], Contended: v[2], TotalMS: v[3], MaxMS: v[4]}
	if p.Contended > 0 {
		p.P50MS, p.P99MS = classMS(int(r[off]>>4), p.MaxMS), classMS(int(r[off]&0x0f), p.MaxMS)
	}
	return p, true
}

// classMS is a quantile read from its class: the class's bound, capped by
// the max; the last class has no bound (the max).
func classMS(class int, maxMS int64) int64 {
	if class < len(inspect.WaitClassBoundsMS) {
		return min(inspect.WaitClassBoundsMS[class], maxMS)
	}
	return maxMS
}
