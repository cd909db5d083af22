package live

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/family"
)

// families reads the limiter families each tick: a bounded page of
// members (see store/inspect/family/reader.go for the bound) carried in
// the tick's own pipeline (walk.Walker.Carry), so 100,000 per-IP counters cost a tick
// what 300 do and no round trip of their own. The rows it publishes are
// the families with at least one member read.
type families struct {
	reader *family.Reader
	book   *family.Book
	// fams are the families the page carried this tick reads: the
	// counter patterns and the per-client limiters of the sample before
	// (a new per-client limiter's family starts a tick after it is found).
	fams []inspect.Family
	// start is the tick's start (local time), the reader's clock.
	start time.Time
	// failing says the last read failed (logged once until one succeeds).
	failing bool
}

// carry hands the walker this tick's page of members, before its Tick.
func (f *families) carry(sm *Sampler, start time.Time) {
	if f.reader == nil {
		f.reader, f.book = family.NewReader(sm.insp, sm.cfg.match()), family.NewBook()
	}
	var lims []inspect.LimiterInfo
	if sn := sm.Latest(); sn != nil {
		lims = sn.Limiters
	}
	f.fams, f.start = sm.insp.Families(lims), start
	f.book.Retain(f.fams)
	sm.walker.Carry(f.reader.Page(f.fams, start))
}

// tick takes the page's readings from the tick's sample.
func (f *families) tick(sm *Sampler, smp *inspect.Sample) []inspect.FamilyRow {
	if f.reader == nil {
		return nil
	}
	err := smp.FamiliesErr
	if err != nil && !f.failing {
		sm.log.Warn("reading limiter families failed", "err", err)
	}
	f.failing = err != nil
	f.book.Add(smp.At, smp.Families)
	rows := f.book.Rows(smp.At, f.fams, f.reader.Sizes())
	out := rows[:0]
	for _, r := range rows {
		if r.Keys > 0 {
			r.Clients = f.reader.Clients(r.ID, f.start)
			out = append(out, r)
		}
	}
	return out
}
