package family

import (
	"sort"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// A Book turns members' readings into each family's totals and top
// offenders over the last minute and hour, in memory bounded by the number
// of families, never by the number of members: each span is a ring of time
// buckets, and each bucket keeps at most topK members per ranking
// (most admitted, most rejected: Space-Saving counters; nearest the limit:
// the highest fills). At MaxFamilies families that is at most
// 64 × (6 + 12) buckets × 3 × topK = 55,296 entries, about 3 MB.

const (
	// topK is the members a bucket keeps per ranking; rows show
	// topShown of them.
	topK = 16
	// topShown is how many offenders a ranking lists.
	topShown = 5
)

// The spans: a minute in 10 s buckets, an hour in 5 min buckets.
var spans = [...]struct {
	name   string
	bucket time.Duration
	n      int
}{{"minute", 10 * time.Second, 6}, {"hour", 5 * time.Minute, 12}}

// Book accumulates readings; not safe for concurrent use.
type Book struct {
	fams map[string]*familyStats
}

type familyStats struct {
	fam   inspect.Family
	spans [len(spans)][]*familyBucket
}

// familyBucket is one time bucket of one span.
type familyBucket struct {
	start              int64 // unix ms
	readings, adm, rej int64
	admitted, rejected topCounts
	fill               topFill
}

// NewBook starts an empty book.
func NewBook() *Book { return &Book{fams: map[string]*familyStats{}} }

// Retain forgets the families not in fams and starts the new ones.
func (b *Book) Retain(fams []inspect.Family) {
	keep := make(map[string]bool, len(fams))
	for _, f := range fams {
		keep[f.ID] = true
		if st := b.fams[f.ID]; st == nil || st.fam != f {
			b.fams[f.ID] = &familyStats{fam: f}
		}
	}
	for id := range b.fams {
		if !keep[id] {
			delete(b.fams, id)
		}
	}
}

// Add records readings taken at at.
func (b *Book) Add(at time.Time, rs []inspect.FamilyReading) {
	for _, r := range rs {
		st := b.fams[r.Family]
		if st == nil {
			continue
		}
		for i := range spans {
			bk := st.bucket(i, at)
			bk.readings++
			bk.adm += r.NewAdmitted
			bk.rej += r.NewRejected
			bk.admitted.add(r.Key, r.NewAdmitted)
			bk.rejected.add(r.Key, r.NewRejected)
			bk.fill.add(r.Key, r.Fill())
		}
	}
}

// bucket is the bucket of span i holding at, started if need be (the
// oldest bucket of the ring is dropped).
func (st *familyStats) bucket(i int, at time.Time) *familyBucket {
	sp := spans[i]
	start := at.UnixMilli() / sp.bucket.Milliseconds() * sp.bucket.Milliseconds()
	ring := st.spans[i]
	if n := len(ring); n > 0 && ring[n-1].start == start {
		return ring[n-1]
	}
	bk := &familyBucket{start: start}
	if len(ring) >= sp.n {
		ring = append(ring[:0], ring[1:]...)
	}
	st.spans[i] = append(ring, bk)
	return bk
}

// Rows are the families as of at, in the order of fams, with sizes from
// the reader.
func (b *Book) Rows(at time.Time, fams []inspect.Family, sizes map[string]Size) []inspect.FamilyRow {
	out := make([]inspect.FamilyRow, 0, len(fams))
	for _, f := range fams {
		st := b.fams[f.ID]
		if st == nil {
			continue
		}
		sz := sizes[f.ID]
		row := inspect.FamilyRow{ID: f.ID, Kind: f.Kind, Limit: f.Limit, WindowMS: f.Window.Milliseconds(),
			Keys: sz.Keys, Passes: sz.Passes}
		row.Minute = st.span(0, at)
		row.Hour = st.span(1, at)
		out = append(out, row)
	}
	return out
}

// span merges the buckets of span i that lie within its length before at.
func (st *familyStats) span(i int, at time.Time) inspect.FamilySpan {
	sp := spans[i]
	from := at.Add(-time.Duration(sp.n) * sp.bucket).UnixMilli()
	var out inspect.FamilySpan
	adm, rej, fill := map[string]int64{}, map[string]int64{}, map[string]float64{}
	for _, bk := range st.spans[i] {
		if bk.start+sp.bucket.Milliseconds() <= from {
			continue
		}
		out.Readings += bk.readings
		out.Admitted += bk.adm
		out.Rejected += bk.rej
		for k, e := range bk.admitted {
			adm[k] += e
		}
		for k, e := range bk.rejected {
			rej[k] += e
		}
		for k, v := range bk.fill {
			fill[k] = max(fill[k], v)
		}
	}
	offender := func(k string) inspect.Offender {
		return inspect.Offender{ID: memberID(st.fam, k), Key: k, Admitted: adm[k], Rejected: rej[k], Fill: fill[k]}
	}
	out.MostAdmitted = ranked(adm, func(k string) float64 { return float64(adm[k]) }, offender)
	out.MostRejected = ranked(rej, func(k string) float64 { return float64(rej[k]) }, offender)
	out.NearestLimit = ranked(fill, func(k string) float64 { return fill[k] }, offender)
	return out
}

// ranked lists the topShown members of m with the highest score
// above zero, ties by key.
func ranked[V int64 | float64](m map[string]V, score func(string) float64, mk func(string) inspect.Offender) []inspect.Offender {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := score(keys[i]), score(keys[j])
		if a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	out := make([]inspect.Offender, 0, min(len(keys), topShown))
	for _, k := range keys[:min(len(keys), topShown)] {
		out = append(out, mk(k))
	}
	return out
}

// topCounts is a Space-Saving summary: at most topK members with
// their counts. A member not kept replaces the smallest and takes over its
// count, so a member with a large true count is never missing, and a kept
// count overstates the truth by at most the count it took over.
type topCounts map[string]int64

func (t *topCounts) add(member string, n int64) {
	if n <= 0 {
		return
	}
	if *t == nil {
		*t = topCounts{}
	}
	m := *t
	if _, ok := m[member]; ok || len(m) < topK {
		m[member] += n
		return
	}
	minKey, minV := smallest(m)
	delete(m, minKey)
	m[member] = minV + n
}

// smallest is the member of m with the smallest value, ties by name.
func smallest[V int64 | float64](m map[string]V) (string, V) {
	first := true
	var minKey string
	var minV V
	for k, v := range m {
		if first || v < minV || (v == minV && k < minKey) {
			minKey, minV, first = k, v, false
		}
	}
	return minKey, minV
}

// topFill keeps the topK members with the highest fill seen: a
// member's kept value only grows, so one dropped never had a fill above
// any kept one.
type topFill map[string]float64

func (t *topFill) add(member string, v float64) {
	if v <= 0 {
		return
	}
	if *t == nil {
		*t = topFill{}
	}
	m := *t
	if old, ok := m[member]; ok || len(m) < topK {
		m[member] = max(old, v)
		return
	}
	if minKey, minV := smallest(m); v > minV {
		delete(m, minKey)
		m[member] = v
	}
}
